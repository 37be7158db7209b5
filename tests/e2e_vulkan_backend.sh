#!/bin/bash
# The backend choice end to end: --backend vulkan generates the same greedy
# tokens as the CPU on stories260K; without a Vulkan driver, auto runs on the
# CPU and says so while vulkan fails clearly; a device lost mid-generation
# (simulated) continues on the CPU with the same tokens; gemma3 and mistral3
# (writer-made, GGSCOPE_MKMODEL) run on --backend vulkan.
set -u
BIN=${GGSCOPE_BIN:?}
SHARED=${GGSCOPE_SHARED:-../shared}
M="$SHARED/models/stories260K.gguf"
[ -f "$M" ] || { echo "SKIP: $M absent"; exit 77; }
"$BIN" devices >/dev/null 2>&1 || { echo "SKIP: no Vulkan backend or device"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
P=1,403,407,261,378

"$BIN" run "$M" --tokens $P -n 32 --temp 0 --ids --backend cpu >"$T/cpu" 2>"$T/cpu.err" || fail "cpu run"
"$BIN" run "$M" --tokens $P -n 32 --temp 0 --ids --backend vulkan >"$T/vk" 2>"$T/vk.err" || { cat "$T/vk.err"; fail "vulkan run"; }
grep -q "backend: vulkan" "$T/vk.err" || fail "vulkan run does not say so: $(cat "$T/vk.err")"
cmp -s "$T/cpu" "$T/vk" || fail "greedy tokens differ: cpu $(cat "$T/cpu") vulkan $(cat "$T/vk")"

VK_ICD_FILENAMES=/nonexistent "$BIN" run "$M" --tokens $P -n 4 --temp 0 --ids --backend auto >"$T/a" 2>"$T/a.err" \
    || fail "auto without a driver failed: $(cat "$T/a.err")"
grep -q "backend: cpu.*auto: no Vulkan" "$T/a.err" || fail "auto without a driver does not say so: $(cat "$T/a.err")"
VK_ICD_FILENAMES=/nonexistent "$BIN" run "$M" --tokens $P -n 4 --ids --backend vulkan >"$T/b" 2>"$T/b.err"
[ $? -eq 1 ] || fail "--backend vulkan without a driver should exit 1"
grep -q "backend vulkan: no Vulkan driver" "$T/b.err" || fail "unclear message: $(cat "$T/b.err")"

GGSCOPE_VK_FAIL_AFTER=6 "$BIN" run "$M" --tokens $P -n 32 --temp 0 --ids --backend vulkan >"$T/f" 2>"$T/f.err" \
    || fail "run with a lost device failed: $(cat "$T/f.err")"
grep -q "continuing on the CPU" "$T/f.err" || fail "no fallback notice: $(cat "$T/f.err")"
cmp -s "$T/cpu" "$T/f" || fail "tokens after the fallback differ: cpu $(cat "$T/cpu") got $(cat "$T/f")"
# the families that need the rope and attention options run on --backend vulkan:
# gemma3 (sliding window, its layers' KV ring) and mistral3 (YaRN)
if [ -n "${GGSCOPE_MKMODEL:-}" ]; then
    for a in gemma3 mistral3; do
        "$GGSCOPE_MKMODEL" "$T/$a.gguf" --arch $a --type q8_0 --seed 3 >/dev/null 2>"$T/mk.err" \
            || fail "bench_mkmodel $a: $(cat "$T/mk.err")"
        "$BIN" run "$T/$a.gguf" --tokens 1,5,9 -n 8 --temp 0 --ids --backend vulkan >"$T/$a" 2>"$T/$a.err" \
            || fail "$a on --backend vulkan: $(cat "$T/$a.err")"
        grep -q "backend: vulkan" "$T/$a.err" || fail "$a: not on vulkan: $(cat "$T/$a.err")"
    done
    echo "ok: gemma3 and mistral3 run on --backend vulkan"
fi
echo "ok: vulkan = cpu greedy tokens; auto/vulkan without a driver; fallback after a lost device"
