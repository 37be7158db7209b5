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


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
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
            ref = run_json([a.peer, "tokenize-many", v, path] + extra)
            got = run_json([a.ggscope, "tokenize", v, "--many", path] + extra)
            diffs = [i for i in range(len(texts)) if ref[i] != got[i]]
            total += len(diffs)
            print("%-36s %5d strings  %4d differ" % (os.path.basename(v), len(texts), len(diffs)))
            for i in diffs[:a.show]:
                print("   text %r\n   peer %s\n   ours %s" % (texts[i], ref[i], got[i]))
    finally:
        os.unlink(path)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
