#!/usr/bin/env bash
# Explorer benchmarks: time to first frame on stories260K and on a ~2.2 GB
# model (made by bench_mkmodel --tinyllama --type f16), and the histogram of the largest
# tensor of the big model (progress bar, Esc cancels, then completes), driven
# in tmux. Usage: bench/bench_explorer.sh BUILD_DIR [BIG_MODEL_PATH]
#   SCREENS_OUT=docs/screens  also saves the progress-bar screen there
set -u
B=${1:-build}
BIG=${2:-/tmp/ggscope-big.gguf}
BIN=$B/ggscope
SHARED=${GGSCOPE_SHARED:-../shared}
[[ -f $BIG ]] || "$B/bench_mkmodel" "$BIG" --tinyllama --type f16 --embd-type f16 --n-vocab 32000 || exit 1
echo "== time to first full frame (target < 100 ms)"
[[ -f $SHARED/models/stories260K.gguf ]] && "$B/bench_first_frame" "$BIN" "$SHARED/models/stories260K.gguf" 20
"$B/bench_first_frame" "$BIN" "$BIG" 20
if command -v hyperfine >/dev/null && command -v script >/dev/null; then
    echo "== hyperfine (ggscope in a pty via script(1), exits after the first frame)"
    GGSCOPE_EXIT_AFTER_FIRST_FRAME=1 hyperfine -N --warmup 3 --runs 20 \
        "script -qec '$BIN $BIG' /dev/null" 2>&1 | grep -E "Time|Range"
fi

echo "== histogram of the largest tensor (output.weight, 65.5M F16 values) in the explorer"
command -v tmux >/dev/null || { echo "tmux missing: skipped"; exit 0; }
SOCK="ggscope-bench-$$"
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap 'T kill-server >/dev/null 2>&1' EXIT
T new-session -d -s b -x 120 -y 40 "$BIN $BIG; echo EXITED \$?; sleep 600"
wait_for() { local t0=$SECONDS; while (( SECONDS - t0 < ${2:-30} )); do T capture-pane -p -t b | grep -qF -- "$1" && return 0; sleep 0.02; done; echo "timeout waiting for $1"; T capture-pane -p -t b; exit 1; }
wait_for "┌ Tensors"
T send-keys -t b / ; wait_for "search:"
T send-keys -t b -l "output.weight"; T send-keys -t b Enter
wait_for "match 1 of"
T send-keys -t b Enter   # focus the detail pane
T send-keys -t b g
wait_for "computing histogram" && echo "progress bar shown"
[[ -n ${SCREENS_OUT:-} ]] && T capture-pane -p -t b > "$SCREENS_OUT/detail-histogram-progress-2GB.txt"
T send-keys -t b Escape
wait_for "histogram cancelled" && echo "Esc cancelled it"
t0=$(date +%s%N)
T send-keys -t b g
wait_for "computing histogram"
# the loop stays responsive while the worker runs: Tab moves the focus at once
k0=$(date +%s%N); T send-keys -t b Tab; wait_for "[Metadata]"; k1=$(date +%s%N)
T capture-pane -p -t b | grep -q "computing histogram" && echo "key answered in $(( (k1 - k0) / 1000000 )) ms (tmux round trip included) while the histogram runs"
T send-keys -t b BTab
wait_for "absmax" 120
t1=$(date +%s%N)
echo "histogram completed in $(( (t1 - t0) / 1000000 )) ms (two passes over 65.5M values)"
[[ -n ${SCREENS_OUT:-} ]] && T capture-pane -p -t b > "$SCREENS_OUT/detail-histogram-2GB.txt"
T send-keys -t b q; wait_for "EXITED 0"
