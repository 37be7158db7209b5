#!/usr/bin/env bash
# The folders of engine/, ui/ and app/ include each other downwards only
# (docs/architecture.md): tools/include_graph.py finds no cycle.
set -u
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
here=$(cd "$(dirname "$0")/.." && pwd)
python3 "$here/tools/include_graph.py" "$here"
