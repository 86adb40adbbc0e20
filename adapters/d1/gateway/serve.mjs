// Runs worker.mjs on workerd (through miniflare) on loopback, with D1 and R2 state persisted in a
// directory. Prints one line of JSON, {"url": ...}, once it listens; stops on SIGTERM or SIGINT.
//
//   GATEWAY_SECRET=... node serve.mjs --state DIR [--port N]
import { Miniflare } from "miniflare";
import { fileURLToPath } from "node:url";
import path from "node:path";

const args = process.argv.slice(2);
function option(name, fallback) {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
}
const state = option("--state");
const secret = process.env.GATEWAY_SECRET;
if (!state || !secret) {
  console.error("usage: GATEWAY_SECRET=... node serve.mjs --state DIR [--port N]");
  process.exit(2);
}
const root = path.resolve(state);
let mf;
try {
  mf = new Miniflare({
    scriptPath: fileURLToPath(new URL("./worker.mjs", import.meta.url)),
    modules: true,
    compatibilityDate: "2025-09-01",
    host: "127.0.0.1",
    port: Number(option("--port", "0")),
    d1Databases: { DB: "waypost" },
    r2Buckets: { BLOBS: "waypost-blobs" },
    d1Persist: path.join(root, "d1"),
    r2Persist: path.join(root, "r2"),
    bindings: { GATEWAY_SECRET: secret },
  });
  const url = await mf.ready;
  console.log(JSON.stringify({ url: url.origin }));
} catch (error) {
  // One line, not workerd's stack: e.g. "Address already in use (127.0.0.1:8790)".
  console.error(`gateway: cannot start: ${error.message.split("\n")[0]}`);
  process.exit(1);
}
async function stop() {
  await mf.dispose();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
