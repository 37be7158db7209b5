#!/usr/bin/env bash
# `ggscope info` wall time on a ~2.2 GB TinyLlama-shaped F16 model (made with
# ggscope's writer if absent). Usage: bench/bench_info.sh [BUILD_DIR] [MODEL]
set -euo pipefail
build=${1:-build}
model=${2:-/tmp/ggscope-bench-tinyllama-f16.gguf}
[ -f "$model" ] || { echo "writing $model ..."; "$build/bench_mkmodel" "$model" --tinyllama --type f16 --embd-type f16 --n-vocab 32000; }
ls -l "$model"
cat "$model" > /dev/null   # warm the page cache: we measure parsing, not the disk
if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 5 --runs 50 "$build/ggscope info $model" "$build/ggscope info --json $model"
else
  for i in 1 2 3; do /usr/bin/time -f "%e s" "$build/ggscope" info "$model" > /dev/null; done
fi
