#!/usr/bin/env bash
# ggscope info FILE --ctx N: the memory estimate section, its JSON member
# (parts that add up, the KV cache by the exact formula), and one-line
# errors with exit 2 for bad values.
set -u
bin=${GGSCOPE_BIN:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }

"$bin" < /dev/null > /dev/null 2>&1   # writes the demo model into the cache
demo=$(ls "$XDG_CACHE_HOME"/ggscope/*.gguf)

"$bin" info "$demo" > "$tmp/plain"
"$bin" info "$demo" --ctx 512 --backend cpu > "$tmp/t"; rc=$?
check "--ctx exits 0 (rc=$rc)" '[ $rc = 0 ]'
check "info's output comes first, unchanged" 'head -n $(wc -l < "$tmp/plain") "$tmp/t" | cmp -s - "$tmp/plain"'
check "a memory section" 'grep -q "^memory estimate (context 512, batch 512, 512 positions used, cpu" "$tmp/t"'
for part in weights "KV cache" compute tokenizer program total; do
  check "names $part" 'grep -q "^  $part: *[0-9.]* MiB" "$tmp/t"'
done
check "no memory section without --ctx" '! grep -q "memory estimate" "$tmp/plain"'

"$bin" info --json "$demo" --ctx 8192 --backend cpu -t 2 > "$tmp/j"; rc=$?
check "--json --ctx exits 0 (rc=$rc)" '[ $rc = 0 ]'
check "--json: memory parts add up, KV = 2 x 2 B x layers x ctx x kv heads x head dim" 'python3 - "$tmp/j" <<'"'"'PY'"'"'
import json, sys
j = json.load(open(sys.argv[1]))
m, md = j["memory"], j["metadata"]
arch = md["general.architecture"]
L, E = md[arch + ".block_count"], md[arch + ".embedding_length"]
H = md[arch + ".attention.head_count"]
HKV = md.get(arch + ".attention.head_count_kv", H)
HD = md.get(arch + ".attention.key_length", E // H)
assert m["n_ctx"] == 8192 and m["n_used"] == 8192 and m["backend"] == "cpu" and m["threads"] == 2, m
assert m["kv_type"] == "f16" and m["device"] is None, m
assert m["kv_cache"] == m["kv_cache_full"] == 2 * 2 * L * 8192 * HKV * HD, (m, L, HKV, HD)
assert m["total"] == sum(m[k] for k in ("weights", "repacked", "kv_cache", "compute", "tokenizer", "runtime")), m
assert 0 < m["weights"] <= j["file_size"], m
PY'
"$bin" info --json "$demo" > "$tmp/j0"
check "no memory member without --ctx" 'python3 -c "import json; assert \"memory\" not in json.load(open(\"$tmp/j0\"))"'
"$bin" info --json "$demo" --ctx 1024 --used 100 --backend cpu > "$tmp/ju"
check "--used: the rows written" 'python3 -c "import json; m=json.load(open(\"$tmp/ju\"))[\"memory\"]; assert m[\"n_used\"]==100 and m[\"kv_cache\"]*1024==m[\"kv_cache_full\"]*100, m"'

# errors: exit 2, one line
for bad in "--ctx 0" "--ctx abc" "--ctx -5" "--used 0" "--backend gpu" "--threads 0"; do
  "$bin" info "$demo" $bad > "$tmp/o" 2> "$tmp/e"; rc=$?
  check "$bad exits 2 (rc=$rc)" '[ $rc = 2 ]'
  check "$bad: one line, nothing on stdout" '[ "$(wc -l < "$tmp/e")" = 1 ] && [ ! -s "$tmp/o" ]'
done
"$bin" info "$demo" --kv-type q8_0 > /dev/null 2> "$tmp/e"; rc=$?
check "--kv-type q8_0 exits 2 (rc=$rc)" '[ $rc = 2 ]'
check "--kv-type lists the allowed ones" 'grep -q "unknown KV cache type .q8_0. (the engine supports: f16)" "$tmp/e" && [ "$(wc -l < "$tmp/e")" = 1 ]'
"$bin" info "$demo" --ctx 100 --used 200 > /dev/null 2> "$tmp/e"; rc=$?
check "--used past --ctx exits 2 (rc=$rc)" '[ $rc = 2 ] && [ "$(wc -l < "$tmp/e")" = 1 ]'
# a file the engine does not run: one line, exit 2
vocab=../shared/fixtures/vocab/ggml-vocab-llama-spm.gguf
if [ -f "$vocab" ]; then
  "$bin" info "$vocab" --ctx 512 > "$tmp/o" 2> "$tmp/e"; rc=$?
  check "tensorless file: exit 2, one line (rc=$rc)" '[ $rc = 2 ] && [ "$(wc -l < "$tmp/e")" = 1 ] && grep -q "memory estimate" "$tmp/e"'
else
  echo "SKIP: no $vocab"
fi

echo "e2e_memest: $pass passed, $fail failed"
[ $fail = 0 ]
