#!/usr/bin/env bash
# Differential test of engine/template/jinja.h against @huggingface/jinja (the peer's
# copy, installed by ../shared/peer/peer on first use) on random templates.
# usage: bench/jinja_diff.sh [COUNT] [SEED]    (from the repository root, after a build)
# Prints, per mode, how many cases render identically, fail in both, or differ
# (the differences are listed). Needs python3 and node; not part of the tests.
set -euo pipefail
count=${1:-20000}
seed=${2:-1}
bin=${BENCH_JINJA:-build/bench_jinja}
cache=${PEER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggscope-peer}
ref=$cache/node_modules/@huggingface/jinja/dist/index.js
if [[ ! -f $ref ]]; then
  ../shared/peer/peer template /dev/null /dev/null >/dev/null 2>&1 || true # installs it
fi
[[ -f $ref ]] || { echo "no @huggingface/jinja at $ref (run ../shared/peer/peer once)" >&2; exit 2; }
[[ -x $bin ]] || { echo "build bench_jinja first ($bin)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for mode in expr ws; do
  python3 bench/jinja_gen.py "$mode" "$count" "$seed" >"$tmp/cases.json"
  node bench/jinja_ref.mjs "$ref" "$tmp/cases.json" "$tmp/ref.json"
  "$bin" --cases "$tmp/cases.json" "$tmp/mine.json"
  python3 - "$mode" "$tmp" <<'PY' || status=1
import json, sys
mode, d = sys.argv[1], sys.argv[2]
cases = json.load(open(d + "/cases.json")); ref = json.load(open(d + "/ref.json")); mine = json.load(open(d + "/mine.json"))
same = both_err = crash = 0
diffs = []
for c, r, m in zip(cases, ref, mine):
    if "out" in r and "out" in m and r["out"] == m["out"]:
        same += 1
    elif "err" in r and "err" in m:
        both_err += 1
    elif "err" in r and r["err"].startswith("Cannot read properties of undefined"):
        crash += 1  # the reference crashed (e.g. `[] | first`); ggscope renders
    else:
        diffs.append((c["template"], r, m))
print(f"{mode}: {len(cases)} cases: {same} identical renders, {both_err} errors in both, "
      f"{crash} reference crashes, {len(diffs)} differences")
for t, r, m in diffs[:20]:
    print("---", t); print("  reference:", r); print("  ggscope:  ", m)
sys.exit(1 if diffs else 0)
PY
done
exit $status
