# Text from the file in a model error: an architecture name holding a
# newline and an escape sequence must not split the one-line message (nor
# reach the terminal raw). The demo model with general.architecture rewritten.
XDG_CACHE_HOME=$tmp/cache "$bin" --no-tui >/dev/null 2>&1
demo=$(ls "$tmp"/cache/ggscope/*.gguf 2>/dev/null | head -1)
[ -n "$demo" ] || skip "the demo model could not be written"
python3 "$here/reader-gguf.py" "$demo" nl.gguf --set-str general.architecture $'lla\nma\e[31m'
expect 2 "nl\.gguf: unsupported architecture 'lla\\\\nma\\\\x1b\[31m'" -- "$bin" run nl.gguf -p hi -n 1 --backend cpu
check "no escape byte on stderr" '! grep -q $'"'"'\e'"'"' "$tmp/.err"'
