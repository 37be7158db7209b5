#!/usr/bin/env bash
# ggscope against llama.cpp (the peer, ../shared/peer/peer) on the CPU:
# prompt processing and decode tokens/s and peak resident memory of
# `ggscope bench` and `peer bench`, on TinyLlama-1.1B-shaped random-weight
# files (bench_mkmodel --tinyllama, the llama SPM vocabulary) of four weight
# types. Rounds alternate the two programs (ggscope first in odd rounds, the
# peer first in even ones); before each run the script waits for the load
# average to fall below LOAD_MAX and prints it. Prints a Markdown table of the
# best and the median of every figure, and for the speeds the median (and
# range) of each round's own ratio: the two programs' runs of a round are
# next to each other in time, which matters where the machine's memory
# bandwidth moves from second to second. The quiet check is made before each
# round (a round runs every type with both programs back to back).
# Each round also measures the machine's plain read bandwidth with THREADS
# threads (bench_matvec --bw-only); the decode limit of a file is that
# bandwidth over the weight bytes one token reads (every tensor but the
# token embeddings, which a token reads one row of; tied output counted once),
# and the table gives each program's decode as a share of it. A plain read
# also follows every run (the decode is the last part of a run), and the
# table gives the decode's share of that read too: the limit measured
# seconds after the decode rather than minutes.
# PAIRED=1 (the default) adds, after each type's two runs of a round,
# `bench_token --bw`: ggscope's decode with each token followed by a plain
# read of the very weight bytes it read (the same memory, the same threads),
# so that its share of the bandwidth limit does not depend on which memory
# or which second the read got. On a machine whose read rate moves between
# states (docs/kernels.md), this is the measure the "within 5% of the
# measured bandwidth limit" of an acceptance can be checked against.
#
# usage: bench/vs_llama.sh [BUILD_DIR]        (default build)
# environment (defaults):
#   TYPES="q4_0 q4_K_M q8_0 f16"   weight types
#   ROUNDS=5  THREADS=2  PP=512  TG=48
#   LOAD_MAX=0.3  LOAD_WAIT=120    seconds to wait for a quiet machine (then run anyway, flagged)
#   BUSY=0                         1: one competing busy process during every run
#   WORK=dir                       keep the model files there (about 5 GB; default: a temporary folder)
#   MODELS="A.gguf B.gguf"         bench these files instead of the TinyLlama types
#   LOGITS=0                       1: ggscope computes the logits of every step; the default
#                                  (0, --no-logits) matches the peer, whose bench evaluates
#                                  tokens without asking for logits, so that llama.cpp skips
#                                  the output head (and the last layer's feed-forward)
#   OUT=file                       also write the raw results (JSON lines) there
#   PAIRED=1                       0: no bench_token --bw run per type and round
#   WARM=0                         1: read the model file into the page cache before each run
#                                  (untimed; for files near the RAM size, which the peer's
#                                  load-time repacking evicts). The bandwidth-limit table
#                                  counts every weight: not meaningful for mixture-of-experts
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
shared=$src/../shared
peer=$shared/peer/peer
bin=$build/ggscope mk=$build/bench_mkmodel mv=$build/bench_matvec bt=$build/bench_token
vocab=$shared/fixtures/vocab/ggml-vocab-llama-spm.gguf
TYPES=${TYPES:-q4_0 q4_K_M q8_0 f16}
ROUNDS=${ROUNDS:-5} THREADS=${THREADS:-2} PP=${PP:-512} TG=${TG:-48} PAIRED=${PAIRED:-1}
LOAD_MAX=${LOAD_MAX:-0.3} LOAD_WAIT=${LOAD_WAIT:-120} BUSY=${BUSY:-0}
[[ -x $peer ]] || { echo "no peer at $peer: skipped"; exit 77; }
[[ -f $vocab ]] || { echo "no vocabulary at $vocab: skipped"; exit 77; }
[[ -x $bin && -x $mk && -x $mv ]] || { echo "build first: $bin, $mk or $mv is missing"; exit 1; }
[[ $PAIRED == 0 || -x $bt ]] || { echo "build first: $bt is missing (or PAIRED=0)"; exit 1; }
work=${WORK:-}
if [[ -z $work ]]; then work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work"
raw=$(mktemp); trap 'rm -f "$raw"; [[ -z ${WORK:-} ]] && rm -rf "$work"' EXIT

# ---- the model files ----
f16=$work/tinyllama-f16.gguf
if [[ -z ${MODELS:-} && ! -f $f16 ]]; then
    echo "writing $f16 ..." >&2
    "$mk" "$f16.tmp" --tinyllama --type f16 --embd-type f16 --vocab "$vocab" --seed 7 && mv "$f16.tmp" "$f16" || exit 1
fi
model() { echo "$work/tinyllama-$1.gguf"; }
if [[ -n ${MODELS:-} ]]; then   # MODELS="A.gguf B.gguf": these files instead (labelled by name)
    declare -A path_of
    TYPES=""
    for f in $MODELS; do l=$(basename "$f" .gguf); path_of[$l]=$f; TYPES+="$l "; done
    model() { echo "${path_of[$1]}"; }
fi
for t in $TYPES; do
    f=$(model "$t")
    [[ -f $f ]] && continue
    echo "quantizing to $t ..." >&2
    "$bin" quantize "$f16" "$f" --type "$t" >/dev/null || exit 1
done

# the weight bytes one token reads, per type (without logits: no output head
# and no feed-forward in the last layer)
tok_bytes() {
    "$bin" info "$(model "$1")" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = {x["name"]: x for x in d["tensors"]}
e = t["token_embd.weight"]
logits = sys.argv[1] == "1"
last = max(int(k.split(".")[1]) for k in t if k.startswith("blk."))
skip = {"token_embd.weight"}
if not logits:  # no output head, no feed-forward in the last layer (llama.cpp without outputs)
    skip |= {"output.weight"} | {k for k in t if k.startswith("blk.%d.ffn_" % last)}
n = sum(x["bytes"] for k, x in t.items() if k not in skip)
n += e["bytes"] // e["shape"][1]
if logits and "output.weight" not in t: n += e["bytes"]
print(n)' "${LOGITS:-0}"
}

# ---- helpers ----
load1() { cut -d' ' -f1 /proc/loadavg; }
quiet() {   # wait until the 1-minute load is below LOAD_MAX (at most LOAD_WAIT s)
    local t0=$SECONDS
    while (( SECONDS - t0 < LOAD_WAIT )); do
        awk -v l="$(load1)" -v m="$LOAD_MAX" 'BEGIN { exit !(l < m) }' && return 0
        sleep 2
    done
    return 1
}
# run PROGRAM TYPE ROUND: one bench, its JSON line with the load and peak RSS appended to $raw
run() {
    local who=$1 t=$2 r=$3 f json
    f=$(model "$t")
    # WARM=1: the file read into the page cache first (untimed), so that a
    # program that maps the file lazily does not time the disk that the
    # other read at load time (or evicted)
    # (then the quiet wait again: the reads raise the load average)
    if [[ ${WARM:-0} == 1 ]]; then
        cat "$f" >/dev/null
        (( BUSY )) || quiet || true
    fi
    local l=$(load1)
    local cmd
    if [[ $who == ggscope ]]; then
        cmd=("$bin" bench "$f" -p "$PP" -n "$TG" -t "$THREADS" --backend cpu --json)
        [[ ${LOGITS:-0} == 1 ]] || cmd+=(--no-logits)
    else
        cmd=("$peer" bench "$f" -p "$PP" -n "$TG" -t "$THREADS")
    fi
    # the peak RSS of the program and its children (the peer is node + llama.cpp)
    json=$(python3 -c '
import json, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
line = [l for l in p.stdout.splitlines() if l.startswith("{")]
if p.returncode or not line:
    print(json.dumps({"error": "exit %d" % p.returncode})); sys.exit(0)
d = json.loads(line[-1])
d["rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(d))' "${cmd[@]}")
    # the plain read just after the run (its decode ran last)
    local after
    after=$("$mv" --bw-only --threads "$THREADS" | awk '{print $3}')
    json=$(python3 -c 'import json, sys; d = json.loads(sys.argv[1]); d["read_after_gb_s"] = float(sys.argv[2]); print(json.dumps(d))' "$json" "${after:-0}")
    echo "{\"who\": \"$who\", \"type\": \"$t\", \"round\": $r, \"load\": $l, \"round_load\": $round_load, \"state\": \"$round_state\", \"r\": $json}" >>"$raw"
    printf '  round %d %-8s %-7s load %-5s %s\n' "$r" "$t" "$who" "$l" "$json" >&2
}

# paired TYPE ROUND: bench_token --bw (ggscope's decode, each token followed
# by a plain read of the same weights): its whole-run and median shares
paired() {
    local t=$1 r=$2 line
    line=$("$bt" "$(model "$t")" -t "$THREADS" -n "$TG" --bw 2>/dev/null | awk '/^paired share:/ {print $4, $6}')
    [[ -n $line ]] || { echo "  round $r $t paired: failed" >&2; return; }
    set -- $line
    echo "{\"who\": \"paired\", \"type\": \"$t\", \"round\": $r, \"whole\": $1, \"median\": $2}" >>"$raw"
    printf '  round %d %-8s paired  share of the same weights read plainly: whole %s, token median %s\n' "$r" "$t" "$1" "$2" >&2
}

busy_pid=
if (( BUSY )); then
    bash -c 'while :; do :; done' &
    busy_pid=$!
    trap 'kill $busy_pid 2>/dev/null; rm -f "$raw"; [[ -z ${WORK:-} ]] && rm -rf "$work"' EXIT
    echo "one competing busy process: pid $busy_pid" >&2
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for (( r = 1; r <= ROUNDS; r++ )); do
    round_state=quiet
    if (( ! BUSY )); then quiet || round_state=loaded; fi
    round_load=$(load1)
    bw=$("$mv" --bw-only --threads "$THREADS" | awk '{print $3}')
    echo "{\"who\": \"machine\", \"round\": $r, \"read_gb_s\": $bw}" >>"$raw"
    echo "round $r: load $round_load ($round_state), plain read $bw GB/s with $THREADS threads" >&2
    for t in $TYPES; do
        if (( r % 2 )); then run ggscope "$t" "$r"; run llama.cpp "$t" "$r"
        else run llama.cpp "$t" "$r"; run ggscope "$t" "$r"; fi
        (( PAIRED )) && paired "$t" "$r"
    done
done
[[ -n ${OUT:-} ]] && cp "$raw" "$OUT"
sizes=""
for t in $TYPES; do sizes+="$t=$(tok_bytes "$t") "; done

python3 - "$raw" "$THREADS" "$PP" "$TG" "$BUSY" "$sizes" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rbw = {r["round"]: r["read_gb_s"] for r in rows if r["who"] == "machine"}
bws = [rbw[k] for k in sorted(rbw)]
pairs = [r for r in rows if r["who"] == "paired"]
rows = [r for r in rows if r["who"] not in ("machine", "paired")]
threads, pp, tg, busy = sys.argv[2:6]
tbytes = dict(kv.split("=") for kv in sys.argv[6].split())
types = []
for r in rows:
    if r["type"] not in types: types.append(r["type"])
def vals(who, t, key):
    return [r["r"][key] for r in rows if r["who"] == who and r["type"] == t and key in r["r"]]
def fmt(v):
    return "%.1f / %.1f" % (max(v), statistics.median(v)) if v else "failed"
def ratio(a, b):
    return "%.2f× / %.2f×" % (max(a) / max(b), statistics.median(a) / statistics.median(b)) if a and b else "-"
def paired(t, key):
    # the two programs' runs of one round are next to each other in time: their
    # ratio is less moved by the machine's bandwidth changing between rounds
    g = {r["round"]: r["r"][key] for r in rows if r["who"] == "ggscope" and r["type"] == t and key in r["r"]}
    l = {r["round"]: r["r"][key] for r in rows if r["who"] == "llama.cpp" and r["type"] == t and key in r["r"]}
    v = [g[k] / l[k] for k in g if k in l and l[k] > 0]
    return "%.2f× (%.2f–%.2f)" % (statistics.median(v), min(v), max(v)) if v else "-"
loads = [r["load"] for r in rows]
starts = sorted({(r["round"], r["round_load"], r["state"]) for r in rows})
loaded = sum(s[2] == "loaded" for s in starts)
print("%s threads, prompt %s tokens, decode %s tokens; %d rounds, %d runs; load average at the start of each round %s; before each run %.2f–%.2f%s%s" % (
    threads, pp, tg, len(starts), len(rows), " ".join("%.2f" % s[1] for s in starts), min(loads), max(loads),
    ", %d rounds started above the load limit" % loaded if loaded else "",
    ", one competing busy process" if busy == "1" else ""))
print("plain read bandwidth with %s threads, per round: %s GB/s (best %.1f, median %.1f)" % (
    threads, " ".join("%.1f" % b for b in bws), max(bws), statistics.median(bws)))
print()
print("| weights | decode tok/s ggscope (best / median) | llama.cpp | ratio | per round | prompt tok/s ggscope | llama.cpp | ratio | per round | peak RSS MB ggscope / llama.cpp |")
print("|---|---|---|---|---|---|---|---|---|---|")
for t in types:
    gd, ld = vals("ggscope", t, "tg_tok_s"), vals("llama.cpp", t, "tg_tok_s")
    gp, lp = vals("ggscope", t, "pp_tok_s"), vals("llama.cpp", t, "pp_tok_s")
    gm, lm = vals("ggscope", t, "rss_mb"), vals("llama.cpp", t, "rss_mb")
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (t, fmt(gd), fmt(ld), ratio(gd, ld), paired(t, "tg_tok_s"),
          fmt(gp), fmt(lp), ratio(gp, lp), paired(t, "pp_tok_s"),
          "%.0f / %.0f" % (max(gm), max(lm)) if gm and lm else "-"))
print()
print("ratio: best over best / median over median; per round: the median (and range) of the rounds' own ratios")
print()
print("Decode against the bandwidth limit (the plain read bandwidth of the round over the weight bytes a token reads); best / median of the runs' shares:")
print()
print("| weights | MB read per token | limit tok/s (best / median round) | ggscope share of limit | llama.cpp share of limit | ggscope share of the read after its run | llama.cpp share of the read after its run |")
print("|---|---|---|---|---|---|---|")
def share(who, t, mb):
    v = [r["r"]["tg_tok_s"] * mb / 1e3 / rbw[r["round"]] for r in rows
         if r["who"] == who and r["type"] == t and "tg_tok_s" in r["r"] and r["round"] in rbw]
    return "%.0f%% / %.0f%%" % (100 * max(v), 100 * statistics.median(v)) if v else "-"
def share_after(who, t, mb):
    v = [r["r"]["tg_tok_s"] * mb / 1e3 / r["r"]["read_after_gb_s"] for r in rows
         if r["who"] == who and r["type"] == t and "tg_tok_s" in r["r"] and r["r"].get("read_after_gb_s", 0) > 0]
    return "%.0f%% / %.0f%%" % (100 * max(v), 100 * statistics.median(v)) if v else "-"
for t in types:
    mb = int(tbytes[t]) / 1e6
    print("| %s | %.0f | %.1f / %.1f | %s | %s | %s | %s |" % (t, mb, max(bws) * 1e3 / mb, statistics.median(bws) * 1e3 / mb,
          share("ggscope", t, mb), share("llama.cpp", t, mb), share_after("ggscope", t, mb), share_after("llama.cpp", t, mb)))
if pairs:
    print()
    print("ggscope's decode against a plain read of the same weight bytes, each token followed by the read "
          "(bench_token --bw, with logits); per round the decode ratio to llama.cpp and that share:")
    print()
    print("| weights | share, whole run (best / median) | per round: ratio, share |")
    print("|---|---|---|")
    g = {(r["type"], r["round"]): r["r"]["tg_tok_s"] for r in rows if r["who"] == "ggscope" and "tg_tok_s" in r["r"]}
    l = {(r["type"], r["round"]): r["r"]["tg_tok_s"] for r in rows if r["who"] == "llama.cpp" and "tg_tok_s" in r["r"]}
    for t in types:
        p = sorted((r["round"], r["whole"]) for r in pairs if r["type"] == t)
        if not p:
            continue
        v = [x for _, x in p]
        per = " ".join("r%d %s, %.0f%%" % (k, "%.2f×" % (g[(t, k)] / l[(t, k)]) if l.get((t, k)) and (t, k) in g else "-", 100 * x)
                       for k, x in p)
        print("| %s | %.0f%% / %.0f%% | %s |" % (t, 100 * max(v), 100 * statistics.median(v), per))
EOF
