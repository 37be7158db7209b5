# A tensor of a type id ggscope does not know cannot be quantized or copied:
# bad input (exit 2), one line naming the type id and the tensor.
python3 "$here/write-mkgguf.py" f32 in.gguf 8 256 977
expect 2 'type id 977.*blk\.0\.mystery\.weight|blk\.0\.mystery\.weight.*type id 977' -- "$bin" quantize in.gguf out.gguf --type q8_0
check "no output" '[ ! -e out.gguf ]'
check "no temporary file left" '[ -z "$(ls -A | grep "^\.out\.gguf\.")" ]'
# the name comes from the file: a newline or escape sequence in it is shown escaped
python3 "$here/write-mkgguf.py" f32 nl.gguf 8 256 977 'evil\n\x1b[2Jname'
expect 2 'type id 977' -- "$bin" quantize nl.gguf out.gguf --type q8_0
check "control characters escaped" '! grep -q $'"'"'\x1b'"'"' .err'
