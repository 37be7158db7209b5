#!/usr/bin/env python3
"""Compare ggscope's logits and greedy generation with the peer oracle's
(llama.cpp) on one model. Used by bench/compare_logits.sh.

usage: compare_logits.py GGSCOPE PEER MODEL IDS N_GEN TOL [PEER_MODEL] [options]
(PEER_MODEL: the file the peer loads, when it cannot load MODEL itself but
holds the same weights, e.g. the GGUF v1 sibling of stories260K.)
options: --threads T      both engines on T threads (ggscope --threads and
                          --backend cpu, peer -t):
                          a decode step past 256 cells takes ggml's split-KV
                          attention, whose chunks are llama.cpp's threads
         --logits-at L,.. logits of the first L tokens of prompt + generation
                          (teacher forcing) for each L instead of all but the
                          last token: with L % 512 == 1 the last row is a
                          decode step (llama.cpp's 512-token batches)
                          (a peer generation that stops at an end-of-generation
                          token is then continued with ggscope's tokens)
         --exact          pass only when the generations are equal and every
                          row is bit-identical
Prints one JSON line: rel_rms (max over positions), gen_equal, first_diff,
first_close (first generated step where the peer's two best logits are closer
than the measured max |logit error|), last_rows_bit_identical (with
--logits-at), pass."""
import json, math, subprocess, sys

argv, threads, logits_at, exact = [], None, None, False
it = iter(sys.argv[1:])
for a in it:
    if a == "--threads":
        threads = next(it)
    elif a == "--logits-at":
        logits_at = sorted(int(x) for x in next(it).split(","))
    elif a == "--exact":
        exact = True
    else:
        argv.append(a)
ggscope, peer, model, ids, n_gen, tol = argv[:6]
peer_model = argv[6] if len(argv) > 6 else model
n_gen, tol = int(n_gen), float(tol)
ours_t = ["--threads", threads, "--backend", "cpu"] if threads else []
peer_t = ["-t", threads] if threads else []


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{' '.join(cmd[:3])}...: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return r.stdout


def logits(cmd_prefix, seq, m, extra):
    out = run(cmd_prefix + ["logits", m, ",".join(map(str, seq)), "--all", "--top", "2"] + extra)
    return [json.loads(l) for l in out.splitlines() if l.strip()]


prompt = [int(x) for x in ids.split(",")]
# greedy generation, both engines
peer_gen = json.loads(run([peer, "generate", peer_model, ids, "-n", str(n_gen)] + peer_t))
# the peer's generate context (max(256, prompt + n + 8)): it decides LongRoPE's factors
ctx = max(256, len(ids.split(",")) + n_gen + 8)
ours_txt = run([ggscope, "run", model, "--tokens", ids, "-n", str(n_gen), "--temp", "0",
                "--repeat-penalty", "1", "--ids", "--ignore-eos", "--ctx", str(ctx)] + (ours_t or ["--threads", "2"])).strip()
ours_gen = [int(x) for x in ours_txt.split(",") if x]
n = min(len(peer_gen), len(ours_gen))
first_diff = next((i for i in range(n) if peer_gen[i] != ours_gen[i]), None)
# the peer stops at an end-of-generation token (ggscope runs with --ignore-eos): with
# --logits-at, a peer that stopped early where ggscope agrees so far is the same generation
peer_stop = len(peer_gen) if len(peer_gen) < n_gen and first_diff is None else None
if first_diff is None and len(peer_gen) != len(ours_gen) and not (logits_at and peer_stop):
    first_diff = n

# logits on prompt + the peer's generation (teacher forcing)
full = prompt + peer_gen + (ours_gen[len(peer_gen):] if peer_stop else [])  # past the peer's stop: ggscope's
seqs = [full[:L] for L in logits_at] if logits_at else [prompt + peer_gen[:-1] if peer_gen else prompt]
worst_rel, max_abs, sum_rel, n_exact, n_rows, last_exact, P = 0.0, 0.0, 0.0, 0, 0, [], []
for seq in seqs:
    P = logits([peer], seq, peer_model, peer_t)
    O = logits([ggscope], seq, model, ours_t)
    assert len(P) == len(O) == len(seq), (len(P), len(O), len(seq))
    for p, o in zip(P, O):
        a, b = p["logits"], o["logits"]
        n_exact += a == b
        num = sum((x - y) ** 2 for x, y in zip(a, b))
        den = sum(x * x for x in a)
        rel = math.sqrt(num / den) if den else math.sqrt(num)
        worst_rel = max(worst_rel, rel)
        sum_rel += rel
        max_abs = max(max_abs, max(abs(x - y) for x, y in zip(a, b)))
    n_rows += len(seq)
    last_exact.append(P[-1]["logits"] == O[-1]["logits"])
# first generated step where the peer's top-2 gap is below the measured error
first_close = None
for k in range(min(len(peer_gen), len(P) - len(prompt) + 1)):  # P: the longest sequence's rows
    t = P[len(prompt) - 1 + k]["top"]
    if len(t) > 1 and t[0][1] - t[1][1] < max_abs:
        first_close = k
        break
gen_ok = first_diff is None or (first_close is not None and first_diff >= first_close)
res = {
    "model": model.split("/")[-1], "peer_model": peer_model.split("/")[-1], "positions": n_rows, "rel_rms_max": worst_rel,
    "rel_rms_mean": sum_rel / n_rows, "max_abs": max_abs, "positions_bit_identical": n_exact, "tol": tol,
    "gen_len": [len(peer_gen), len(ours_gen)], "gen_equal": first_diff is None,
    "first_diff": first_diff, "first_close": first_close,
    "pass": worst_rel < tol and gen_ok,
}
if peer_stop is not None:
    res["peer_stopped_at"] = peer_stop
if threads:
    res["threads"] = int(threads)
if logits_at:
    res["logits_at"], res["last_rows_bit_identical"] = logits_at, last_exact
if exact:
    res["pass"] = res["pass"] and first_diff is None and n_exact == n_rows
print(json.dumps(res))
sys.exit(0 if res["pass"] else 1)
