#!/usr/bin/env bash
# Regenerate the expected renders from the reference (@huggingface/jinja via
# ../shared/peer/peer). Run from the repository root; needs ../shared.
# An optional argument (a regular expression) picks the lines of cases.txt.
set -uo pipefail
dir=tests/data/templates
peer=../shared/peer/peer
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -v "^#" "$dir/cases.txt" | grep -E -- "${1:-.}" | while read -r t m; do
  [[ -z $t ]] && continue
  base=$dir/$t.$m
  rm -f "$base.expected" "$base.nogen.expected" "$base.error"
  if "$peer" template "$dir/$t.jinja" "$dir/$m.messages.json" --bos '<s>' --eos '</s>' >"$tmp/out" 2>"$tmp/err"; then
    cp "$tmp/out" "$base.expected"
    "$peer" template "$dir/$t.jinja" "$dir/$m.messages.json" --bos '<s>' --eos '</s>' --no-gen >"$base.nogen.expected"
  else
    # node's report names the error on its first "Error: MESSAGE" line
    grep -m1 -E '^[A-Za-z]*Error: ' "$tmp/err" | sed -E 's/^[A-Za-z]*Error: //' | tr -d '\n' >"$base.error"
  fi
  echo "$base: $(ls "$base".* | xargs -n1 basename | tr '\n' ' ')"
done
