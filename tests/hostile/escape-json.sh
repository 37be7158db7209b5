# info --json is valid JSON (strict UTF-8) whatever the file holds: a NUL in
# the middle is \u0000 and kept, an invalid byte is U+FFFD, controls, C1 and
# bidi controls are \u escapes (docs/gguf.md, "Text from a file").
python3 "$here/escape-gguf.py" e.gguf
"$bin" info e.gguf --json --full >j.out 2>j.err; rc=$?
check "info --json exits 0" '[ "$rc" = 0 ]'
check "raw output is clean" 'python3 "$here/escape-gguf.py" --clean j.out'
cat >check.py <<'PY'
import json, sys
doc = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))   # strict UTF-8
E = "\x1b[2J\x07\x00mid\ufffd\u202e\u0085end"
EN = E.replace("\x00", "")   # keys and tensor names hold no NUL (the reader refuses one)
md = doc["metadata"]
assert md["evil.key" + EN] == "value" + E, md.get("evil.key" + EN)
assert md["general.name"] == "evil" + E
assert md["evil.array"]["items"] == ["ok", E]
assert md["tokenizer.ggml.tokens"]["items"][1] == "<s" + E + ">"
assert md["tokenizer.ggml.tokens"]["items"][5] == "\u4e2d"
names = [t["name"] for t in doc["tensors"]]
assert names == ["blk.0.attn_q\x1b[2J\x07mid\ufffd\u202e\u0085", "blk.1.ffn_up\x1b[2J\x07\ufffd\u202e", 'blk.2.ffn_down,"x"'], names
PY
check "info --json parses and holds every character" 'python3 check.py j.out'
