#!/usr/bin/env python3
"""Compare ggscope's logits and greedy generation with the peer oracle's
(llama.cpp) on one model. Used by bench/compare_logits.sh.

usage: compare_logits.py GGSCOPE PEER MODEL IDS N_GEN TOL [PEER_MODEL]
(PEER_MODEL: the file the peer loads, when it cannot load MODEL itself but
holds the same weights, e.g. the GGUF v1 sibling of stories260K.)
Prints one JSON line: rel_rms (max over positions), gen_equal, first_diff,
first_close (first generated step where the peer's two best logits are closer
than the measured max |logit error|), pass."""
import json, math, subprocess, sys

ggscope, peer, model, ids, n_gen, tol = sys.argv[1:7]
peer_model = sys.argv[7] if len(sys.argv) > 7 else model
n_gen, tol = int(n_gen), float(tol)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{' '.join(cmd[:3])}...: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return r.stdout


def logits(cmd_prefix, seq, m):
    out = run(cmd_prefix + ["logits", m, ",".join(map(str, seq)), "--all", "--top", "2"])
    return [json.loads(l) for l in out.splitlines() if l.strip()]


prompt = [int(x) for x in ids.split(",")]
# greedy generation, both engines
peer_gen = json.loads(run([peer, "generate", peer_model, ids, "-n", str(n_gen)]))
# the peer's generate context (max(256, prompt + n + 8)): it decides LongRoPE's factors
ctx = max(256, len(ids.split(",")) + n_gen + 8)
ours_txt = run([ggscope, "run", model, "--tokens", ids, "-n", str(n_gen), "--temp", "0",
                "--repeat-penalty", "1", "--ids", "--ignore-eos", "--threads", "2", "--ctx", str(ctx)]).strip()
ours_gen = [int(x) for x in ours_txt.split(",") if x]
n = min(len(peer_gen), len(ours_gen))
first_diff = next((i for i in range(n) if peer_gen[i] != ours_gen[i]), None)
if first_diff is None and len(peer_gen) != len(ours_gen):
    first_diff = n

# logits on prompt + the peer's generation (teacher forcing)
seq = prompt + peer_gen[:-1] if peer_gen else prompt
P = logits([peer], seq, peer_model)
O = logits([ggscope], seq, model)
assert len(P) == len(O) == len(seq), (len(P), len(O), len(seq))
worst_rel, max_abs, sum_rel, n_exact = 0.0, 0.0, 0.0, 0
for p, o in zip(P, O):
    a, b = p["logits"], o["logits"]
    n_exact += a == b
    num = sum((x - y) ** 2 for x, y in zip(a, b))
    den = sum(x * x for x in a)
    rel = math.sqrt(num / den) if den else math.sqrt(num)
    worst_rel = max(worst_rel, rel)
    sum_rel += rel
    max_abs = max(max_abs, max(abs(x - y) for x, y in zip(a, b)))
# first generated step where the peer's top-2 gap is below the measured error
first_close = None
for k in range(len(peer_gen)):
    t = P[len(prompt) - 1 + k]["top"]
    if len(t) > 1 and t[0][1] - t[1][1] < max_abs:
        first_close = k
        break
gen_ok = first_diff is None or (first_close is not None and first_diff >= first_close)
res = {
    "model": model.split("/")[-1], "peer_model": peer_model.split("/")[-1], "positions": len(seq), "rel_rms_max": worst_rel,
    "rel_rms_mean": sum_rel / len(seq), "max_abs": max_abs, "positions_bit_identical": n_exact, "tol": tol,
    "gen_len": [len(peer_gen), len(ours_gen)], "gen_equal": first_diff is None,
    "first_diff": first_diff, "first_close": first_close,
    "pass": worst_rel < tol and gen_ok,
}
print(json.dumps(res))
sys.exit(0 if res["pass"] else 1)
