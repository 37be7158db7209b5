# Keys and tensor names are length-prefixed in GGUF and may hold NUL bytes;
# the writer took them as C strings: "a.x\0y" was written as "a.x" (and two
# such keys collided: "cannot copy metadata", exit 1), a tensor "w\0x" as "w".
# Such names cannot be looked up: the reader refuses them (one line with the
# offset, exit 2) before quantize writes anything.
python3 "$here/write-mkgguf.py" nulkey k.gguf
expect 2 'k\.gguf: offset [0-9]+: key 1 holds a NUL byte' -- "$bin" quantize k.gguf out.gguf --type q8_0
python3 "$here/write-mkgguf.py" nulname n.gguf
expect 2 "n\.gguf: offset [0-9]+: tensor 0's name holds a NUL byte" -- "$bin" quantize n.gguf out.gguf --type q8_0
check "no output" '[ ! -e out.gguf ]'
