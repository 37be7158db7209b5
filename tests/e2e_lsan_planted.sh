#!/usr/bin/env bash
# Leak detection still works on ggscope's code in the sanitizer build: a
# program that leaks a gguf_file (after loading the Vulkan driver, whose own
# leaks tests/lsan.supp suppresses) must fail with a LeakSanitizer report that
# names gguf_open_memory. Skipped (77) in the Release build, which has no
# sanitizer and so no such program.
set -u
prog=$(dirname "${GGSCOPE_BIN:?}")/lsan_planted
if [ ! -x "$prog" ]; then echo "SKIP: not a sanitizer build (no $prog)"; exit 77; fi
out=$("$prog" 2>&1); rc=$?
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
check "the planted leak fails the program (rc=$rc)" '[ $rc != 0 ]'
check "LeakSanitizer reports it" 'grep -q "LeakSanitizer: detected memory leaks" <<<"$out"'
check "the report names gguf_open_memory" 'grep -q "in gguf_open_memory" <<<"$out"'
check "no leak from an unknown module" '! grep -q "unknown module" <<<"$out"'
[ $fail = 0 ] || { echo "$out" | head -40; exit 1; }
echo "lsan_planted: 4 passed, 0 failed"
