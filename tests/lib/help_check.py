#!/usr/bin/env python3
# Every --help of ggscope: option descriptions aligned (one column per help,
# continuation lines at it), at most 80 columns (qerr: its own page's), and
# no internal word (module, function or development-tool names).
#   help_check.py BIN
import re, subprocess, sys
bin = sys.argv[1]
cmds = "info dump explore tokenize template run bench chat logits devices qerr quantize".split()
bad = 0
internal = re.compile(r"runner|\bchs\b|backend_cpu|engine_cli|ecli_|\bpeer\b|\.\./shared|llama_tensor_get_type|GGSCOPE_EXIT_AFTER|ne\[0\]|\btstats\b|\bcodec\b|\bqrecipe\b|\bgguf_\w+|\bvk_\w+")
for c in [None] + cmds:
    out = subprocess.run([bin] + ([c] if c else []) + ["--help"], capture_output=True, text=True).stdout
    name = c or "ggscope"
    cols = set()
    for ln in out.splitlines():
        if internal.search(ln):
            print(f"{name}: internal word: {ln}"); bad += 1
        if c != "qerr" and len(ln) > 80:
            print(f"{name}: wider than 80: {ln}"); bad += 1
        m = re.match(r"^  (-\S.*?|[a-z]+)(\s{2,})\S", ln)
        if m:
            cols.add(len(m.group(1)) + len(m.group(2)) + 2)
    if len(cols) > 1:
        print(f"{name}: option descriptions start at columns {sorted(cols)}"); bad += 1
    # continuation lines of an option's description start at its column
    if len(cols) == 1:
        col = cols.pop()
        lines = out.splitlines()
        body = lines.index("") if "" in lines else 0   # past the usage lines
        for i, ln in enumerate(lines):
            if i > body and re.match(r"^ {3,}\S", ln) and re.match(r"^  \S|^ {3,}\S", lines[i-1]) and not ln.startswith("       ggscope"):
                ind = len(ln) - len(ln.lstrip())
                if ind != col and not lines[i-1].startswith("usage"):
                    print(f"{name}: continuation at column {ind}, not {col}: {ln}"); bad += 1
print("help check:", "ok" if not bad else f"{bad} problem(s)")
sys.exit(1 if bad else 0)
