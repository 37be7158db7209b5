# info shows names, keys and strings from the file escaped (docs/gguf.md,
# "Text from a file"): no raw control character, invalid byte, C1 control or
# bidi override reaches the terminal, and a NUL in the middle does not cut
# the text. The file is written by escape-gguf.py.
python3 "$here/escape-gguf.py" e.gguf
"$bin" info e.gguf >info.out 2>info.err; rc=$?
check "info exits 0" '[ "$rc" = 0 ]'
check "info output is clean" 'python3 "$here/escape-gguf.py" --clean info.out'
check "info stderr is empty" '[ ! -s info.err ]'
E='\x1b[2J\x07\x00mid\xff\u202e\u0085end'
EN='\x1b[2J\x07mid\xff\u202e\u0085end'   # in keys and tensor names (no NUL: the reader refuses one)
check "escaped architecture" 'grep -qF -- "\"ll\x1b[2Jama\u202e\"" info.out'
check "escaped key" 'grep -qF -- "evil.key$EN " info.out'
check "escaped string value" 'grep -qF -- "\"value$E\"" info.out'
check "escaped array item" 'grep -qF -- "\"ok\", \"$E\"" info.out'
check "escaped tensor name" 'grep -qF -- "blk.0.attn_q\x1b[2J\x07mid\xff\u202e\u0085 " info.out'
check "escaped tensor name" 'grep -qF -- "blk.1.ffn_up\x1b[2J\x07\xff\u202e " info.out'
# the explorer prints info when not on a terminal
"$bin" e.gguf >plain.out 2>&1 </dev/null
check "ggscope FILE (not a terminal) is clean" 'python3 "$here/escape-gguf.py" --clean plain.out'
