# dump shows a tensor name from the file escaped (text and --json), and the
# "no such tensor" error quotes the names it suggests escaped, on one line.
python3 "$here/escape-gguf.py" e.gguf
name=$'blk.1.ffn_up\x1b[2J\x07\xff\xe2\x80\xae'
for view in --stats --hex --values --hist; do
    "$bin" dump e.gguf "$name" $view --rows 0:1 >d.out 2>d.err; rc=$?
    check "dump $view exits 0" '[ "$rc" = 0 ]'
    check "dump $view output is clean" 'python3 "$here/escape-gguf.py" --clean d.out'
    [ "$view" = --values ] && continue   # the values view prints no header
    check "dump $view shows the escaped name" 'grep -qF -- "blk.1.ffn_up\x1b[2J\x07\xff\u202e" d.out'
done
cat >has.py <<'PY'
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))   # strict UTF-8
def strings(x):
    if isinstance(x, dict):
        for v in x.values(): yield from strings(v)
    elif isinstance(x, list):
        for v in x: yield from strings(v)
    elif isinstance(x, str):
        yield x
assert "blk.1.ffn_up\x1b[2J\x07\ufffd\u202e" in strings(d), list(strings(d))[:5]
PY
for view in --stats --hex --values --hist; do
    "$bin" dump e.gguf "$name" $view --rows 0:1 --json >dj.out 2>d.err
    check "dump $view --json is valid JSON with the name" 'python3 has.py dj.out'
    check "dump $view --json raw output is clean" 'python3 "$here/escape-gguf.py" --clean dj.out'
done
expect 2 'no tensor' -- "$bin" dump e.gguf $'blk.1\x1b[2J' --stats
check "the error line is clean" 'python3 "$here/escape-gguf.py" --clean .err'
check "the error quotes the names escaped" 'grep -qF -- "blk.1\x1b[2J" .err && grep -qF -- "blk.1.ffn_up\x1b[2J\x07\xff\u202e" .err'
