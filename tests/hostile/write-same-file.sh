# quantize must never write over its input: the same path, a symlink, a hard
# link, a `..` path, or any shard of a split input set (one line, exit 2, the
# input untouched). dump -o is refused the same way.
python3 "$here/write-mkgguf.py" f32 in.gguf 8 256
cp in.gguf orig.gguf
mkdir sub
ln -s in.gguf link.gguf
ln in.gguf hard.gguf
expect 2 'refusing to write over the input' -- "$bin" quantize in.gguf in.gguf --type q8_0
expect 2 'refusing to write over the input' -- "$bin" quantize in.gguf "$tmp/in.gguf" --type q8_0
expect 2 'refusing to write over the input' -- "$bin" quantize in.gguf link.gguf --type q8_0
expect 2 'refusing to write over the input' -- "$bin" quantize link.gguf in.gguf --type q8_0
expect 2 'refusing to write over the input' -- "$bin" quantize in.gguf hard.gguf --type q8_0
expect 2 'refusing to write over the input' -- "$bin" quantize in.gguf sub/../in.gguf --type q8_0
expect 2 'refusing to write over the input' -- "$bin" dump in.gguf blk.0.attn_q.weight --raw -o sub/../in.gguf
check "input untouched" 'cmp -s in.gguf orig.gguf'
check "link still a link" '[ -L link.gguf ]'
check "no temporary file left" '[ -z "$(ls -A | grep "^\.in\.gguf\.")" ]'
python3 "$here/write-mkgguf.py" split m
cp m-00002-of-00002.gguf orig2.gguf
expect 2 'refusing to write over the input' -- "$bin" quantize m-00001-of-00002.gguf m-00002-of-00002.gguf --type q8_0
expect 2 'refusing to write over the input' -- "$bin" quantize m-00002-of-00002.gguf m-00001-of-00002.gguf --type q8_0
check "shard untouched" 'cmp -s m-00002-of-00002.gguf orig2.gguf'
# a different file is fine
expect 0 '' -- "$bin" quantize in.gguf out.gguf --type q8_0
check "output written" '[ -s out.gguf ]'
