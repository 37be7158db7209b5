#!/bin/bash
# bench_qerr.sh BUILD_DIR [MODEL.gguf] [RUNS] [THREADS] [TYPES]
#
# Re-quantize every tensor of a TinyLlama-1.1B-shaped F16 model (2.2 GB,
# 22 layers; made with BUILD_DIR/bench_mkmodel --tinyllama when MODEL is absent) to
# Q4_K with `ggscope qerr MODEL --types q4_K --threads 2` and report wall
# time, user+sys CPU time and peak RSS from /usr/bin/time -v, RUNS times
# (best and median). The target is < 5 s and < 300 MB; llama.cpp's
# test-quantize-stats takes 47 s and 2.9 GB for the same work on this machine.
# The first run also reads the file into the page cache; the machine may be
# shared, so CPU time is printed next to wall time.
set -u
BUILD=${1:-build}
MODEL=${2:-/tmp/ggscope-bench-tinyllama-f16.gguf}
RUNS=${3:-3}
THREADS=${4:-2}
TYPES=${5:-q4_K}
BIN="$BUILD/ggscope"
[ -x "$BIN" ] || { echo "no $BIN" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (GNU time)" >&2; exit 1; }
if [ ! -f "$MODEL" ]; then
    echo "making $MODEL ..." >&2
    "$BUILD/bench_mkmodel" "$MODEL" --tinyllama --type f16 --embd-type f16 --n-vocab 32000 || exit 1
fi
walls=()
for i in $(seq 1 "$RUNS"); do
    log=$(mktemp)
    /usr/bin/time -v "$BIN" qerr "$MODEL" --types "$TYPES" --threads "$THREADS" --csv >/tmp/bench_qerr_out.$$ 2>"$log"
    rc=$?
    wall=$(grep "Elapsed (wall clock)" "$log" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
    user=$(grep "User time" "$log" | awk '{print $NF}')
    sys=$(grep "System time" "$log" | awk '{print $NF}')
    rss=$(grep "Maximum resident set size" "$log" | awk '{print $NF}')
    rows=$(($(wc -l < /tmp/bench_qerr_out.$$) - 1))
    printf 'run %d: rc %d, %d tensors, wall %.2f s, cpu %.2f s (user %s + sys %s), peak RSS %.1f MB\n' \
        "$i" "$rc" "$rows" "$wall" "$(echo "$user + $sys" | bc)" "$user" "$sys" "$(echo "$rss / 1024" | bc -l)"
    walls+=("$wall")
    rm -f "$log"
done
rm -f /tmp/bench_qerr_out.$$
printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END {printf "best wall %.2f s, median %.2f s over %d runs\n", a[1], a[int((NR+1)/2)], NR}'
