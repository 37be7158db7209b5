#!/usr/bin/env python3
"""Compare ggscope's tokenizer with llama.cpp's (../shared/peer/peer) on
generated strings, per vocabulary file.

    python3 bench/compare_tokenizer.py [--ggscope build/ggscope] [--count N]
                                       [--special] [VOCAB.gguf ...]

Default: every ../shared/fixtures/vocab/*.gguf. For each file it runs
`peer tokenize-many MODEL TEXTS.json` and `ggscope tokenize MODEL --many
TEXTS.json` (no BOS) and prints the number of strings whose ids differ,
with the first few differences. Exit status 1 if any differ.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def with_pre(src, pre, dst):
    """Copy a tensor-free GGUF v2/v3 file with tokenizer.ggml.pre set to `pre`
    (to check a pre-tokenizer with a vocabulary built for another)."""
    import struct
    data = open(src, "rb").read()
    magic, ver, nt, nkv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF" and ver >= 2 and nt == 0, "need a tensor-free GGUF v2/v3 file"
    off = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip_val(o, t):
        if t == 8:
            n, = struct.unpack_from("<Q", data, o)
            return o + 8 + n
        if t == 9:
            at, n = struct.unpack_from("<IQ", data, o)
            o += 12
            if at in sizes:
                return o + sizes[at] * n
            for _ in range(n):
                o = skip_val(o, at)
            return o
        return o + sizes[t]

    out = []
    found = False
    for _ in range(nkv):
        start = off
        kl, = struct.unpack_from("<Q", data, off)
        key = data[off + 8: off + 8 + kl]
        off += 8 + kl
        t, = struct.unpack_from("<I", data, off)
        end = skip_val(off + 4, t)
        if key == b"tokenizer.ggml.pre":
            pb = pre.encode()
            out.append(struct.pack("<Q", kl) + key + struct.pack("<IQ", 8, len(pb)) + pb)
            found = True
        else:
            out.append(data[start:end])
        off = end
    if not found:
        pb = pre.encode()
        k = b"tokenizer.ggml.pre"
        out.append(struct.pack("<Q", len(k)) + k + struct.pack("<IQ", 8, len(pb)) + pb)
        nkv += 1
    body = struct.pack("<4sIQQ", b"GGUF", ver, 0, nkv) + b"".join(out)
    body += b"\0" * (-len(body) % 32)
    open(dst, "wb").write(body)


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        err = [l for l in p.stderr.splitlines() if "Error" in l or "error" in l]
        print("  skipped: %s failed: %s" % (os.path.basename(cmd[0]), (err or ["?"])[0][:160]))
        return None
    line = next((l for l in p.stdout.splitlines() if l.startswith("[")), None)
    if line is None:
        sys.exit("no JSON from: " + " ".join(cmd) + "\n" + p.stdout[-500:] + p.stderr[-2000:])
    return json.loads(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ggscope", default=os.path.join(ROOT, "build", "ggscope"))
    ap.add_argument("--peer", default=os.path.join(ROOT, "..", "shared", "peer", "peer"))
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--special", action="store_true")
    ap.add_argument("--show", type=int, default=5)
    ap.add_argument("--pre", help="run each gpt2-model vocabulary with this tokenizer.ggml.pre instead")
    ap.add_argument("vocabs", nargs="*")
    a = ap.parse_args()
    vocabs = a.vocabs or sorted(glob.glob(os.path.join(ROOT, "..", "shared", "fixtures", "vocab", "*.gguf")))
    texts = json.loads(subprocess.run([sys.executable, os.path.join(HERE, "gen_tokenizer_strings.py"),
                                       str(a.count), str(a.seed)], capture_output=True, text=True,
                                      check=True).stdout)
    extra = ["--special"] if a.special else []
    total = 0
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as tf:
        json.dump(texts, tf, ensure_ascii=False)
        path = tf.name
    try:
        for v in vocabs:
            label = os.path.basename(v)
            if a.pre:
                if b"tokenizer.ggml.pre" not in open(v, "rb").read(1 << 16) or b"gpt2" not in open(v, "rb").read(1 << 16):
                    continue
                tmpv = path + "." + os.path.basename(v)
                with_pre(v, a.pre, tmpv)
                label += " pre=" + a.pre
                v = tmpv
            ref = run_json([a.peer, "tokenize-many", v, path] + extra)
            got = run_json([a.ggscope, "tokenize", v, "--many", path] + extra) if ref else None
            if ref is None or got is None:
                print("%-36s skipped" % label)
                continue
            diffs = [i for i in range(len(texts)) if ref[i] != got[i]]
            total += len(diffs)
            print("%-36s %5d strings  %4d differ" % (label, len(texts), len(diffs)))
            for i in diffs[:a.show]:
                print("   text %r\n   peer %s\n   ours %s" % (texts[i], ref[i], got[i]))
            if a.pre:
                os.unlink(v)
    finally:
        os.unlink(path)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
