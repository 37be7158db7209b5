#!/usr/bin/env bash
# Regenerate the expected renders of gpt-oss.cases.json with the reference
# (@huggingface/jinja from ../shared/peer's cache), the date pinned to the
# case file's "date" (strftime_now). The template is not in the repository:
# pass its path (default: llama.cpp's models/templates/openai-gpt-oss-120b.jinja
# under /tmp/llama-src). Run from the repository root after ../shared/peer/peer
# has installed its cache once.
set -euo pipefail
tmpl=${1:-/tmp/llama-src/models/templates/openai-gpt-oss-120b.jinja}
cache=${PEER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ggscope-peer}
cases=$PWD/tests/data/harmony/gpt-oss.cases.json
cat >"$cache/harmony-regen.mjs" <<'JS'
import {Template} from "@huggingface/jinja";
import fs from "node:fs";
const [tmplPath, casesPath] = process.argv.slice(2);
const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));
const date = "2026-11-21";
const Real = Date;
globalThis.Date = class extends Real { constructor(...a) { if (a.length) super(...a); else super(date + "T12:00:00"); } };
const t = new Template(fs.readFileSync(tmplPath, "utf8"));
for (const c of cases) {
  delete c.expected; delete c.error; c.date = date;
  try {
    c.expected = t.render({...(c.vars || {}), messages: c.messages, add_generation_prompt: c.add_generation_prompt,
                           bos_token: c.bos_token, eos_token: c.eos_token});
  } catch (e) { c.error = e.message; }
}
fs.writeFileSync(casesPath, JSON.stringify(cases, null, 1) + "\n");
JS
(cd "$cache" && node harmony-regen.mjs "$tmpl" "$cases")
