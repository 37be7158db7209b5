# run refuses bad input (no tokenizer, a token id out of range, a prompt
# longer than the context) in exactly one line, before it announces a backend.
XDG_CACHE_HOME="$tmp/cache" "$bin" --no-tui >/dev/null 2>&1
demo=$(ls "$tmp"/cache/ggscope/*.gguf 2>/dev/null | head -1)
[ -n "$demo" ] || skip "the demo model could not be written"
python3 "$here/write-mkgguf.py" strip "$demo" notok.gguf tokenizer.
expect 2 'no usable tokenizer' -- "$bin" run notok.gguf -p hello -n 1 --backend cpu
expect 2 'no usable tokenizer' -- "$bin" run notok.gguf -p hello -n 1
expect 2 'out of range' -- "$bin" run "$demo" --tokens 1,999999 -n 1 --backend cpu
expect 2 'does not fit the context' -- "$bin" run "$demo" -p "Once upon a time ggscope opened" --ctx 2 -n 1 --backend cpu
# and a good run still works (the backend line comes, then the text)
expect 0 'backend' -- "$bin" run "$demo" -p "Once upon a time" -n 2 --temp 0 --backend cpu
