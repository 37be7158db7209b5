#!/usr/bin/env python3
"""The folder-level include graph of engine/, ui/ and app/: which folder's
files include which other folder's headers. Prints one line a folder and
exits 1 when two folders include each other, directly or around a cycle
(docs/architecture.md: folders depend downwards only).
usage: tools/include_graph.py [REPO]   (default: this script's repository)"""
import collections, os, re, sys

repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.chdir(repo)
roots = ["engine", "ui", "app"]
src = lambda f: f.endswith((".c", ".h", ".inc"))
headers = collections.defaultdict(list)   # file name -> folders that hold it
for r in roots:
    for d, _, fs in os.walk(r):
        for f in fs:
            if f.endswith((".h", ".inc")):
                headers[f].append(d)
dep = collections.defaultdict(set)
for r in roots:
    for d, _, fs in os.walk(r):
        for f in filter(src, fs):
            text = open(os.path.join(d, f), encoding="utf-8", errors="replace").read()
            for inc in re.findall(r'#\s*include\s+"([^"]+)"', text):
                for hd in headers.get(os.path.basename(inc), []):
                    if hd != d:
                        dep[d].add(hd)
cycles, state, stack = [], {}, []
def visit(u):
    state[u] = 1
    stack.append(u)
    for v in sorted(dep[u]):
        if state.get(v) == 1:
            cycles.append(stack[stack.index(v):] + [v])
        elif not state.get(v):
            visit(v)
    stack.pop()
    state[u] = 2
for u in sorted(dep):
    if not state.get(u):
        visit(u)
for u in sorted(dep):
    print(f"{u} -> {', '.join(sorted(dep[u]))}")
for c in cycles:
    print("cycle: " + " -> ".join(c))
sys.exit(1 if cycles else 0)
