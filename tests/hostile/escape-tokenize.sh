# tokenize --pieces shows a vocabulary piece with control characters, a NUL,
# an invalid byte, a C1 control and a bidi override escaped (token 1, the
# BOS, of the file escape-gguf.py writes); valid UTF-8 pieces pass unchanged.
python3 "$here/escape-gguf.py" e.gguf
"$bin" tokenize e.gguf "a中" --pieces >t.out 2>t.err; rc=$?
check "tokenize exits 0" '[ "$rc" = 0 ]'
check "tokenize output is clean" 'python3 "$here/escape-gguf.py" --clean t.out'
check "the BOS piece is escaped" 'grep -qF -- "'"'"'<s\x1b[2J\x07\x00mid\xff\u202e\u0085end>'"'"'" t.out'
check "a CJK piece passes unchanged" 'grep -qF -- "'"'"'中'"'"'" t.out'
# an error that quotes the file's tokenizer model name quotes it escaped
python3 "$here/escape-gguf.py" bad.gguf --bad-model
expect 2 'tokenizer model .ll\\x1b\[2Jama\\u202e. is not supported' -- "$bin" tokenize bad.gguf a
check "the error line is clean" 'python3 "$here/escape-gguf.py" --clean .err'
