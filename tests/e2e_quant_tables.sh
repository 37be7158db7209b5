#!/usr/bin/env bash
# The committed engine/codec/quant_tables.[ch] are exactly what tools/gen_quant_tables.py
# makes from ../shared/reference/ggml-quant-tables.txt, and the script rejects
# malformed input.
set -u
src=${GGSCOPE_SRC:-.}
shared=${GGSCOPE_SHARED:-../shared}
ref=$shared/reference/ggml-quant-tables.txt
if [ ! -f "$ref" ]; then echo "SKIP: $ref is absent"; exit 77; fi
if ! command -v python3 > /dev/null; then echo "SKIP: no python3"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
python3 "$src/tools/gen_quant_tables.py" "$ref" "$tmp" > /dev/null || { echo "FAIL: generator failed"; exit 1; }
for f in quant_tables.c quant_tables.h; do
    cmp -s "$tmp/$f" "$src/engine/codec/$f" || { echo "FAIL: engine/codec/$f differs from the generator's output"; fail=1; }
done
printf 'table t uint8_t 3\n1 2\nend\n' > "$tmp/short.txt"
python3 "$src/tools/gen_quant_tables.py" "$tmp/short.txt" "$tmp" > /dev/null 2>&1 && { echo "FAIL: short table accepted"; fail=1; }
printf 'table t int8_t 1\n200\nend\n' > "$tmp/range.txt"
python3 "$src/tools/gen_quant_tables.py" "$tmp/range.txt" "$tmp" > /dev/null 2>&1 && { echo "FAIL: out-of-range value accepted"; fail=1; }
[ $fail = 0 ] && echo "e2e_quant_tables: ok"
exit $fail
