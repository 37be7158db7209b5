#!/usr/bin/env bash
# ggscope info / the command line: exit statuses, one-line errors, --json, the demo model.
set -u
bin=${GGSCOPE_BIN:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }

"$bin" --help > "$tmp/help"; check "--help exits 0" '[ $? = 0 ]'
check "--help lists info" 'grep -q "info" "$tmp/help"'
"$bin" --version | grep -q "^ggscope [0-9]"; check "--version" '[ $? = 0 ]'
"$bin" info --help | grep -q -- "--json"; check "info --help" '[ $? = 0 ]'

# no argument: writes the demo model once into the cache and prints it
"$bin" < /dev/null > "$tmp/out" 2>&1; rc=$?
check "no-arg exits 0 (rc=$rc)" '[ $rc = 0 ]'
check "demo model in the cache" 'ls "$XDG_CACHE_HOME"/ggscope/*.gguf >/dev/null 2>&1'
check "demo model is llama" 'grep -q "\"llama\"" "$tmp/out"'
demo=$(ls "$XDG_CACHE_HOME"/ggscope/*.gguf)
"$bin" info --json "$demo" > "$tmp/j"
check "--json parses" 'python3 -c "import json,sys; j=json.load(open(\"$tmp/j\")); assert j[\"version\"]==3 and j[\"tensor_count\"]>0 and j[\"metadata\"][\"tokenizer.ggml.tokens\"][\"length\"]>0"'
"$bin" info --json --full "$demo" > "$tmp/jf"
check "--full lists every item" 'python3 -c "import json; m=json.load(open(\"$tmp/jf\"))[\"metadata\"][\"tokenizer.ggml.tokens\"]; assert len(m[\"items\"])==m[\"length\"]"'

# bad files: exit 2, exactly one line "FILE: offset N: ..."
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 5\n' > "$tmp/lfs.gguf"
"$bin" info "$tmp/lfs.gguf" > /dev/null 2> "$tmp/err"; rc=$?
check "LFS pointer exits 2" '[ $rc = 2 ]'
check "one line" '[ $(wc -l < "$tmp/err") = 1 ]'
check "names file and offset" 'grep -q "lfs.gguf: offset 0: .*Git LFS" "$tmp/err"'
head -c 5000 "$demo" > "$tmp/cut.gguf"
"$bin" info "$tmp/cut.gguf" > /dev/null 2> "$tmp/err"; rc=$?
check "truncated exits 2" '[ $rc = 2 ]'
check "truncated says so" 'grep -q "truncated" "$tmp/err"'
"$bin" info "$tmp/missing.gguf" > /dev/null 2> "$tmp/err"; rc=$?
check "missing file exits 2" '[ $rc = 2 ] && grep -q "cannot open" "$tmp/err"'
"$bin" info > /dev/null 2>&1; rc=$?
check "usage error exits 2" '[ $rc = 2 ]'

# whether the engine runs the file's architecture
"$bin" info "$demo" > "$tmp/out"
check "info: the demo (llama) is supported by the engine" 'grep -q "^engine: *supported$" "$tmp/out"'
python3 - "$tmp/gpt2.gguf" <<'PY'
import struct, sys
def s(x): b = x.encode(); return struct.pack('<Q', len(b)) + b
kv = s('general.architecture') + struct.pack('<I', 8) + s('gpt2')
ti = s('token_embd.weight') + struct.pack('<I2QIQ', 2, 4, 2, 0, 0)
h = b'GGUF' + struct.pack('<IQQ', 3, 1, 1) + kv + ti
h += b'\0' * (-len(h) % 32)
open(sys.argv[1], 'wb').write(h + struct.pack('<8f', *range(8)))
PY
"$bin" info "$tmp/gpt2.gguf" > "$tmp/out"; rc=$?
check "info: a gpt2 file opens" '[ $rc = 0 ]'
check "info: engine not supported (gpt2)" 'grep -q "^engine: *not supported (gpt2)$" "$tmp/out"'
"$bin" info "$tmp/gpt2.gguf" --json | python3 -c "import json,sys; assert json.load(sys.stdin)['engine_supported'] is False"
check "info --json: engine_supported false" '[ $? = 0 ]'
for c in run logits; do
    args="-p hi"; [ $c = logits ] && args="1,2"
    "$bin" $c "$tmp/gpt2.gguf" $args > /dev/null 2> "$tmp/err"; rc=$?
    check "$c on gpt2: exit 2" '[ $rc = 2 ]'
    check "$c on gpt2: one line naming it and the supported ones" \
        '[ $(wc -l < "$tmp/err") = 1 ] && grep -q "unsupported architecture .gpt2. (supported: llama, qwen2, qwen3, gemma3" "$tmp/err"'
done

# the command line: help, unknown commands, stray arguments, ranges, paths
"$bin" help > "$tmp/out" 2>&1; rc=$?
check "ggscope help exits 0 and lists the commands" '[ $rc = 0 ] && grep -q "^commands:" "$tmp/out" && grep -q "^  quantize " "$tmp/out"'
"$bin" help info > "$tmp/out" 2>&1; rc=$?
check "ggscope help info = info --help" '[ $rc = 0 ] && grep -q "usage: ggscope info" "$tmp/out"'
"$bin" frobnicate > "$tmp/out" 2>&1; rc=$?
check "unknown command: exit 2, named, the command list" \
    '[ $rc = 2 ] && grep -q "unknown command .frobnicate." "$tmp/out" && grep -q "^  info " "$tmp/out" && ! grep -q "cannot open" "$tmp/out"'
"$bin" frobnicate x y > "$tmp/out" 2>&1; rc=$?
check "unknown command with arguments: the command list" '[ $rc = 2 ] && grep -q "^  info " "$tmp/out"'
for args in "info $demo x" "dump $demo token_embd.weight x --stats" "template $demo m.json x" \
            "quantize $demo $tmp/o.gguf x --type q8_0" "tokenize $demo hi x" "run $demo -p hi x" \
            "explore $demo x" "devices x" "qerr $demo x"; do
    "$bin" $args > "$tmp/out" 2>&1; rc=$?
    check "stray argument named: ${args%% *} (rc=$rc: $(head -1 "$tmp/out"))" \
        '[ $rc = 2 ] && grep -q "unexpected argument .x." "$tmp/out"'
done
"$bin" dump "$demo" token_embd.weight --values --rows 9:3 > "$tmp/out" 2>&1; rc=$?
check "--rows 9:3 is reversed" '[ $rc = 2 ] && grep -q "reversed" "$tmp/out"'
"$bin" quantize "$demo" "$tmp/missing/dir/o.gguf" --type q8_0 > "$tmp/out" 2>&1; rc=$?
check "quantize to a missing folder says so" '[ $rc != 0 ] && grep -q "folder .*missing/dir does not exist" "$tmp/out"'
"$bin" run "$demo" --tokens 1 --ctx 4 -n 10 --ignore-eos --temp 0 --backend cpu > "$tmp/out" 2> "$tmp/err"; rc=$?
check "run --ctx 4 -n 10: stopped because the context is full" '[ $rc = 0 ] && grep -q "the context is full" "$tmp/err"'
"$bin" run "$demo" --tokens 1 --ctx 64 -n 3 --ignore-eos --temp 0 --backend cpu > "$tmp/out" 2> "$tmp/err"
check "run within the context: no such line" '! grep -q "context is full" "$tmp/err"'
check "the backend line says the weights were copied (auto)" 'grep -q "^backend: cpu.*, weights in memory ([0-9.]* MB)$" "$tmp/err"'
"$bin" run "$demo" --tokens 1 --ctx 64 -n 3 --ignore-eos --temp 0 --backend cpu --weights map > "$tmp/out2" 2> "$tmp/err"
check "--weights map: mapped, the same tokens" 'grep -q "^backend: cpu.*, weights mapped from the file (as asked)$" "$tmp/err" && cmp -s "$tmp/out" "$tmp/out2"'
"$bin" run "$demo" --tokens 1 --ctx 64 -n 3 --weights all > "$tmp/out" 2>&1; rc=$?
check "--weights all refused in one line (rc=$rc)" '[ $rc = 2 ] && [ $(wc -l < "$tmp/out") = 1 ] && grep -q "expected auto, copy or map" "$tmp/out"'
python3 "$(dirname "$0")/lib/help_check.py" "$bin" > "$tmp/out" 2>&1; rc=$?
check "every --help aligned, 80 columns, no internal words: $(cat "$tmp/out")" '[ $rc = 0 ]'

echo "$pass passed, $fail failed"
[ $fail = 0 ]
