// Render template cases with @huggingface/jinja (the reference of engine/template/jinja.h).
// usage: node jinja_ref.mjs PATH/TO/@huggingface/jinja/dist/index.js IN.json OUT.json
// IN.json: [{"template": T, "vars": {...}}]; OUT.json: [{"out": TEXT} | {"err": MESSAGE}]
import fs from "node:fs";
import {pathToFileURL} from "node:url";
const {Template} = await import(pathToFileURL(process.argv[2]).href);
const cases = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const res = cases.map((c) => {
  try { return {out: new Template(c.template).render(c.vars)}; }
  catch (e) { return {err: String(e.message)}; }
});
fs.writeFileSync(process.argv[4], JSON.stringify(res));
