# Keys and tensor names are length-prefixed in GGUF and may hold NUL bytes;
# the writer took them as C strings: "a.x\0y" was written as "a.x" (and two
# such keys collided: "cannot copy metadata", exit 1), a tensor "w\0x" as "w".
# quantize refuses them as bad input: one line, exit 2, no output.
python3 "$here/write-mkgguf.py" nulkey k.gguf
expect 2 'metadata key .*a\.x\\x00y' -- "$bin" quantize k.gguf out.gguf --type q8_0
python3 "$here/write-mkgguf.py" nulname n.gguf
expect 2 "tensor 'blk\.0\.attn_q\.weight\\\\x00x'" -- "$bin" quantize n.gguf out.gguf --type q8_0
check "no output" '[ ! -e out.gguf ]'
