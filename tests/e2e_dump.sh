#!/usr/bin/env bash
# ggscope dump: --f32 reproduces ggml's dequantized `ref` of every quant
# fixture (all SIMD paths), --requant reproduces ggml's quantized `q`, --raw,
# --rows, and the errors (exit 2, clear messages).
set -u
bin=${GGSCOPE_BIN:?}
shared=${GGSCOPE_SHARED:-../shared}
fx=$shared/fixtures/quant
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; pass=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }

if [ -d "$fx" ]; then
n=0
for f in "$fx"/quant-*.gguf; do
    t=$(basename "$f" .gguf); t=${t#quant-}
    "$bin" dump "$f" ref --f32 > "$tmp/ref" || { echo "FAIL: dump ref $t"; fail=$((fail+1)); continue; }
    check "$t: ref is 512x16 float32" '[ $(wc -c < "$tmp/ref") = 32768 ]'
    "$bin" dump "$f" q --f32 > "$tmp/q"
    check "$t: dump q --f32 == ref" 'cmp -s "$tmp/q" "$tmp/ref"'
    # (every SIMD path is checked on every fixture by test_codec_dequant; here GGSCOPE_SIMD once)
    if [ "$t" = q4_K ]; then
        for path in scalar avx2 avx512; do
            GGSCOPE_SIMD=$path "$bin" dump "$f" q --f32 > "$tmp/q"
            check "$t: dump q --f32 == ref (GGSCOPE_SIMD=$path)" 'cmp -s "$tmp/q" "$tmp/ref"'
        done
    fi
    n=$((n+1))
done
check "all 27 fixtures seen (saw $n)" '[ $n -ge 27 ]'

# requantizing `src` gives ggml's bytes for every type with a reference quantizer
for t in f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs tq1_0 tq2_0 mxfp4; do
    f=$fx/quant-$t.gguf
    "$bin" dump "$f" src --requant "$t" --raw > "$tmp/rq"
    "$bin" dump "$f" q --raw > "$tmp/raw"
    check "$t: --requant --raw == q's bytes" 'cmp -s "$tmp/rq" "$tmp/raw" && [ -s "$tmp/raw" ]'
done

else
    echo "SKIP (part): $fx is absent: no check against ggml's fixtures"
fi

# The rest runs on a q4_K tensor: the fixture's `q` (16 rows of 512) or, without
# ../shared, the demo model's blk.0.attn_q.weight (256 rows of 256).
if [ -d "$fx" ]; then
    f=$fx/quant-q4_K.gguf; q=q; rowb=2048; nrows=16; blocks=2
    "$bin" dump "$f" ref --f32 > "$tmp/all"
else
    XDG_CACHE_HOME=$tmp/cache "$bin" </dev/null >/dev/null 2>&1
    f=$(ls "$tmp"/cache/ggscope/*.gguf); q=blk.0.attn_q.weight; rowb=1024; nrows=256; blocks=1
    "$bin" dump "$f" $q --f32 > "$tmp/all"
fi
# --rows: rows 3 and 4 are bytes 3*rowb..5*rowb of the float32 dump
"$bin" dump "$f" $q --f32 --rows 3:5 > "$tmp/rows"
check "--rows 3:5" 'cmp -s "$tmp/rows" <(dd if="$tmp/all" bs=$rowb skip=3 count=2 2>/dev/null)'
"$bin" dump "$f" $q --f32 --rows $((nrows-2)): > "$tmp/rows"
check "--rows $((nrows-2)):" 'cmp -s "$tmp/rows" <(dd if="$tmp/all" bs=$rowb skip=$((nrows-2)) 2>/dev/null)'
"$bin" dump "$f" $q --f32 --rows 7 -o "$tmp/out"
check "--rows 7 -o FILE" 'cmp -s "$tmp/out" <(dd if="$tmp/all" bs=$rowb skip=7 count=1 2>/dev/null)'
"$bin" dump "$f" $q --raw --rows 1:2 > "$tmp/r1"
check "--raw --rows: one q4_K row is $blocks block(s)" '[ $(wc -c < "$tmp/r1") = $((144*blocks)) ]'

# errors: exit 2 and a clear message
"$bin" dump "$f" qq --f32 > /dev/null 2> "$tmp/err"; rc=$?
check "unknown tensor exits 2 (rc=$rc)" '[ $rc = 2 ]'
check "unknown tensor lists near names, on one line" 'grep -q "no tensor .qq." "$tmp/err" && grep -q "nearest names: .*'\''[a-z]" "$tmp/err" && [ $(wc -l < "$tmp/err") = 1 ]'
"$bin" dump "$f" $q --requant q9_9 --raw > /dev/null 2> "$tmp/err"; rc=$?
check "unknown type exits 2" '[ $rc = 2 ] && grep -q "unknown type .q9_9." "$tmp/err" && grep -q "q4_K" "$tmp/err"'
"$bin" dump "$f" $q --requant iq2_xxs --raw > /dev/null 2> "$tmp/err"; rc=$?
check "type without quantizer exits 2" '[ $rc = 2 ] && grep -q "no quantizer" "$tmp/err"'
"$bin" dump "$f" $q --requant q4_0 > /dev/null 2> "$tmp/err"; rc=$?
check "--requant without --raw exits 2" '[ $rc = 2 ]'
"$bin" dump "$f" $q --f32 --rows $((nrows-6)):$((nrows+4)) > /dev/null 2> "$tmp/err"; rc=$?
check "--rows past the end exits 2" '[ $rc = 2 ] && grep -q "outside" "$tmp/err"'
"$bin" dump "$f" $q --f32 --rows x > /dev/null 2> "$tmp/err"; rc=$?
check "bad --rows exits 2" '[ $rc = 2 ]'
"$bin" dump "$f" $q > /dev/null 2> "$tmp/err"; rc=$?
check "no mode exits 2" '[ $rc = 2 ]'
"$bin" dump "$f" > /dev/null 2> "$tmp/err"; rc=$?
check "missing TENSOR exits 2" '[ $rc = 2 ]'
"$bin" dump /nonexistent.gguf q --f32 > /dev/null 2> "$tmp/err"; rc=$?
check "missing file exits 2" '[ $rc = 2 ]'
"$bin" dump --help | grep -q -- "--requant"; check "dump --help" '[ $? = 0 ]'
"$bin" --help | grep -q "dump"; check "--help lists dump" '[ $? = 0 ]'
# a row length that is not a multiple of the target block: stories260K has 64-wide rows
m=$shared/models/stories260K.gguf
if [ -f "$m" ]; then
    "$bin" dump "$m" token_embd.weight --requant q4_K --raw > /dev/null 2> "$tmp/err"; rc=$?
    check "rows not a multiple of the block exit 2" '[ $rc = 2 ] && grep -q "not a multiple" "$tmp/err"'
    "$bin" dump "$m" token_embd.weight --requant q8_0 --raw > "$tmp/q8"
    check "stories260K token_embd to q8_0 (512x64 -> 1024 blocks)" '[ $(wc -c < "$tmp/q8") = $((512*64/32*34)) ]'
fi

# big-endian file: an f32 and an f16 tensor byte-swapped to little-endian, a q8_0 one refused
if command -v python3 > /dev/null; then
    python3 - "$tmp/be.gguf" <<'PY'
import struct, sys
def s(x): b = x.encode(); return struct.pack('>Q', len(b)) + b
hdr = b'GGUF' + struct.pack('>IQQ', 3, 3, 0)
f32 = struct.pack('>4f', 1.5, -2.0, 0.25, 3.0)
f16 = struct.pack('>4e', 1.5, -2.0, 0.25, 3.0)
q8 = struct.pack('>e', 0.5) + bytes(range(32))
infos = s('a') + struct.pack('>IQIQ', 1, 4, 0, 0) + s('h') + struct.pack('>IQIQ', 1, 4, 1, 32) \
      + s('q') + struct.pack('>IQIQ', 1, 32, 8, 64)
head = hdr + infos
head += bytes((-len(head)) % 32)
data = f32 + bytes(16) + f16 + bytes(24) + q8 + bytes(30)  # the last tensor is padded too
open(sys.argv[1], 'wb').write(head + data)
PY
    "$bin" dump "$tmp/be.gguf" a --f32 > "$tmp/a"
    check "big-endian f32 swapped" '[ "$(od -An -tf4 "$tmp/a" | tr -s " ")" = " 1.5 -2 0.25 3" ]'
    "$bin" dump "$tmp/be.gguf" h --f32 > "$tmp/h"
    check "big-endian f16 swapped" 'cmp -s "$tmp/h" "$tmp/a"'
    "$bin" dump "$tmp/be.gguf" q --f32 > /dev/null 2> "$tmp/err"; rc=$?
    check "big-endian q8_0 refused (exit 2)" '[ $rc = 2 ] && grep -q "big-endian" "$tmp/err"'
    "$bin" dump "$tmp/be.gguf" q --raw > "$tmp/qraw"
    check "big-endian --raw gives the stored bytes" '[ $(wc -c < "$tmp/qraw") = 34 ]'
fi

echo "e2e_dump: $pass passed, $fail failed"
[ $fail = 0 ]
