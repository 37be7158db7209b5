// What llama.cpp reports for a model and context: its load log's buffer
// sizes (mapped and repacked weights, KV cache, compute buffer), through the
// peer's node-llama-cpp (../shared/peer/peer installs it; its own commands
// run at log level "error" and print none of this).
//   node bench/mem_peer.mjs MODEL CTX        (PEER_CACHE: the peer's cache folder)
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";
import os from "node:os";
const [model, ctx] = process.argv.slice(2);
if (!model || !ctx) { console.error("usage: node bench/mem_peer.mjs MODEL CTX"); process.exit(2); }
const cache = process.env.PEER_CACHE ?? `${process.env.XDG_CACHE_HOME ?? os.homedir() + "/.cache"}/ggscope-peer`;
let mod;
try {
  mod = await import(pathToFileURL(createRequire(`${cache}/package.json`).resolve("node-llama-cpp")).href);
} catch (e) {
  console.error(`mem_peer: node-llama-cpp not found under ${cache} (run ../shared/peer/peer once)`); process.exit(2);
}
const llama = await mod.getLlama({gpu: false, build: "never", logLevel: "debug", logger: (level, msg) => {
  if (/buffer size|llama_kv_cache: size/.test(msg)) process.stdout.write(msg.endsWith("\n") ? msg : msg + "\n");
}});
const m = await llama.loadModel({modelPath: model, gpuLayers: 0});
const c = await m.createContext({contextSize: Number(ctx), threads: 2, batchSize: 512});
await c.dispose();
await m.dispose();
