#!/usr/bin/env bash
# The memory estimate (`ggscope info FILE --ctx N --used U`) against the peak
# RSS of `ggscope run FILE --ctx N -n 8` (GNU time), on the CPU backend.
#
#   bench/mem_check.sh [BUILD_DIR]                    the default set (below)
#   bench/mem_check.sh [BUILD_DIR] MODEL CTX [PROMPT] one row
#
# PROMPT: prompt tokens (default CTX - 8: the context is full at the end, so
# every KV row and every batch row of the buffers is written). The run
# evaluates PROMPT + 8 positions; the estimate is asked for as many
# (--used). A row fails beyond 10%. Prints a Markdown table. Threads: T
# (default 2). Heavy rows (a full 8192-token TinyLlama context) are not in
# the default set: see docs/engine.md.
set -uo pipefail
build=${1:-build}; shift || true
bin=$build/ggscope
T=${T:-2}
[ -x "$bin" ] || { echo "mem_check: no $bin (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "mem_check: needs GNU time (/usr/bin/time)" >&2; exit 2; }
fail=0

row() { # MODEL CTX [PROMPT]
  local model=$1 ctx=$2 np=${3:-$(($2 - 8))}
  local nv
  nv=$("$bin" info --json "$model" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["tokenizer.ggml.tokens"]["length"])')
  # BOS, then ids 3.. cycling over at most 300 distinct tokens (ordinary text repeats tokens too)
  local ids
  ids=$(python3 -c "import sys; n=$np; v=$nv; m=min(300, v-3); print(','.join(['1']+[str(3+i%m) for i in range(n-1)]))")
  local peak tf
  tf=$(mktemp)
  /usr/bin/time -f '%M' -o "$tf" "$bin" run "$model" --ctx "$ctx" -n 8 --tokens "$ids" --backend cpu -t "$T" \
    --ignore-eos --temp 0 > /dev/null 2>&1
  peak=$(tail -1 "$tf"); rm -f "$tf"
  local est
  est=$("$bin" info "$model" --ctx "$ctx" --used $((np + 8)) --backend cpu -t "$T" --json 2>&1 |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["memory"]["total"])' 2>/dev/null)
  if ! [[ $peak =~ ^[0-9]+$ && $est =~ ^[0-9]+$ ]]; then
    echo "| $(basename "$model") | $ctx | $((np + 8)) | ${peak:-?} | ${est:-?} | failed |"; fail=1; return
  fi
  python3 - "$model" "$ctx" "$((np + 8))" "$peak" "$est" <<'PY' || fail=1
import os, sys
model, ctx, used, peak_kb, est = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
peak = peak_kb * 1024
d = (est - peak) / peak * 100
print(f"| {os.path.basename(model)} | {ctx} | {used} | {peak/2**20:.1f} | {est/2**20:.1f} | {d:+.1f}% |")
sys.exit(0 if abs(d) <= 10 else 1)
PY
}

echo "| model | ctx | positions | peak RSS MiB | estimate MiB | estimate − peak |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
if [ $# -ge 2 ]; then
  row "$@"
else
  demo=$(ls "${XDG_CACHE_HOME:-$HOME/.cache}"/ggscope/ggscope-demo-*.gguf 2>/dev/null | tail -1)
  if [ -z "$demo" ]; then "$bin" < /dev/null > /dev/null 2>&1; demo=$(ls "${XDG_CACHE_HOME:-$HOME/.cache}"/ggscope/ggscope-demo-*.gguf | tail -1); fi
  stories=../shared/models/stories260K.gguf
  tiny=${TINY:-/work/notes/vs/tinyllama-q4_0.gguf}
  for c in 512 8192; do row "$demo" $c; done
  row "$demo" 8192 6
  if [ -f "$stories" ]; then
    for c in 512 8192; do row "$stories" $c; done
    row "$stories" 8192 6
  else
    echo "SKIP: no $stories"
  fi
  if [ -f "$tiny" ]; then
    row "$tiny" 512 6; row "$tiny" 512; row "$tiny" 8192 6; row "$tiny" 8192 504
  else
    echo "SKIP: no $tiny (TINY=FILE)"
  fi
fi
exit $fail
