# template: an error or notice that quotes the file's chat template quotes it
# escaped (the template of escape-gguf.py's file holds ESC and an RLO).
python3 "$here/escape-gguf.py" e.gguf
echo '[{"role":"user","content":"hi"}]' >m.json
"$bin" template e.gguf m.json >t.out 2>t.err; rc=$?
check "template falls back (exit 0)" '[ "$rc" = 0 ]'
check "the fallback notice is clean" 'python3 "$here/escape-gguf.py" --clean t.err'
check "the fallback notice quotes the character escaped" 'grep -qF -- "\x1b" t.err'
expect 1 "unexpected character: \\\\x1b" -- "$bin" template e.gguf m.json --strict
check "the --strict error is clean" 'python3 "$here/escape-gguf.py" --clean .err'
