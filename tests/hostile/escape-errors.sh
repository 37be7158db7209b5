# Error messages of any command that quote text from the file quote it
# escaped: `run` on a file whose architecture holds ESC[2J and an RLO.
python3 "$here/escape-gguf.py" e.gguf
expect 2 "unsupported architecture 'll\\\\x1b\[2Jama\\\\u202e'" -- "$bin" run e.gguf -p hi -n 1
check "the error line is clean" 'python3 "$here/escape-gguf.py" --clean .err'
