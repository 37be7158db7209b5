# quantize of a big-endian file: its tensor bytes would be copied or decoded
# as little-endian (silently wrong values in the output). Refused: one line,
# exit 2, no output. (The file is the reader's fuzz seed.)
expect 2 'big-endian' -- "$bin" quantize "$here/../../fuzz/seeds/gguf/v3-be.gguf" out.gguf --type q8_0
check "no output" '[ ! -e out.gguf ]'
