# A token array shorter or longer than token_embd's rows: run / logits used
# to load the model anyway. Now one line with both counts, exit 2.
# The demo model (written by ggscope itself into $XDG_CACHE_HOME) with its
# tokenizer.ggml.tokens cut by one entry or padded by one.
XDG_CACHE_HOME=$tmp/cache "$bin" --no-tui >/dev/null 2>&1
demo=$(ls "$tmp"/cache/ggscope/*.gguf 2>/dev/null | head -1)
[ -n "$demo" ] || skip "the demo model could not be written"
rows=$(python3 - "$demo" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
key = b"tokenizer.ggml.tokens"
p = b.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
print(struct.unpack_from("<IIQ", b, p)[2])
PY
)
check "the demo vocabulary has a size" '[ -n "$rows" ] && [ "$rows" -gt 1 ]'
python3 "$here/reader-gguf.py" "$demo" short.gguf --str-arr-len tokenizer.ggml.tokens $((rows - 1))
python3 "$here/reader-gguf.py" "$demo" long.gguf --str-arr-len tokenizer.ggml.tokens $((rows + 1))
for f in short long; do
    n=$rows; [ $f = short ] && n=$((rows - 1)) || n=$((rows + 1))
    expect 2 "$f\.gguf: .*\b$n\b.*\b$rows\b|$f\.gguf: .*\b$rows\b.*\b$n\b" -- "$bin" run $f.gguf -p hi -n 1 --backend cpu
    expect 2 "$f\.gguf: .*\b$n\b.*\b$rows\b|$f\.gguf: .*\b$rows\b.*\b$n\b" -- "$bin" logits $f.gguf 1,2,3 --backend cpu
done
# the unmodified model still runs
check "the unmodified model runs" '"$bin" logits "$demo" 1,2 --backend cpu >/dev/null 2>&1' 
