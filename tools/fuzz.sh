#!/usr/bin/env bash
# Runs every libFuzzer target in build-fuzz/ for a share of SECONDS (default
# 60), one after another: corpus in build-fuzz/corpus/NAME, seeds from
# fuzz/seeds/NAME/, extra libFuzzer flags from fuzz/NAME.flags (optional).
#   tools/fuzz.sh [SECONDS] [TARGET...]
# Prints one line per target with its executions; exits 1 on any finding.
set -u
cd "$(dirname "$0")/.."
total=${1:-60}; shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
fi
share=$(( total / ${#targets[@]} )); [ "$share" -lt 5 ] && share=5
status=0
for t in "${targets[@]}"; do
    name=${t#fuzz_}
    corpus=build-fuzz/corpus/$name; mkdir -p "$corpus"
    seeds=(); [ -d "fuzz/seeds/$name" ] && seeds=("fuzz/seeds/$name")
    flags=(); [ -f "fuzz/$name.flags" ] && read -r -a flags < "fuzz/$name.flags"
    log=build-fuzz/$t.log
    ./build-fuzz/"$t" -max_total_time="$share" -rss_limit_mb=2048 -max_len=65536 \
        "${flags[@]}" "$corpus" "${seeds[@]}" > "$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    [ -z "$execs" ] && execs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    if [ $rc = 0 ]; then
        echo "fuzz: $t: ${execs:-?} inputs in ${share} s, no finding"
    else
        echo "fuzz: $t: FINDING (exit $rc), see $log"; tail -40 "$log"; status=1
    fi
done
exit $status
