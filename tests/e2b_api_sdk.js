// The control plane through the real E2B SDK (npm `e2b`), when
// t-e2b-api.sh is given one (E2B_SDK_NODE_PATH: a node_modules holding
// it): create with metadata, getInfo, list by metadata and state with
// paging, pause, connect, setTimeout, kill, and a kill of what is gone.
// TAP on stdout.
const { Sandbox } = require("e2b");

let n = 0;
let failed = 0;
function ok(cond, name, extra) {
  n++;
  console.log(`${cond ? "ok" : "not ok"} ${n} - ${name}`);
  if (!cond) {
    failed++;
    if (extra !== undefined) console.log("#   " + JSON.stringify(extra));
  }
}

async function main() {
  const tag = process.env.E2B_TAG + "sdk";
  const opts = { apiKey: process.env.E2B_KEY_A };
  const sbx = await Sandbox.create("code-interpreter-v1", {
    ...opts, metadata: { sdk: tag }, timeoutMs: 120000,
  });
  ok(/^[a-z0-9]{20}$/.test(sbx.sandboxId), "Sandbox.create", sbx.sandboxId);
  const info = await sbx.getInfo();
  ok(info.metadata.sdk === tag && info.state === "running" &&
     info.templateId === "code-interpreter-v1" &&
     info.endAt.getTime() - info.startedAt.getTime() > 100000,
     "getInfo", info);
  const more = [];
  for (let i = 0; i < 2; i++)
    more.push(await Sandbox.create("base", { ...opts, metadata: { sdk: tag } }));
  const p = Sandbox.list({ ...opts, query: { metadata: { sdk: tag } }, limit: 1 });
  const seen = [];
  while (p.hasNext) seen.push(...(await p.nextItems()));
  ok(seen.length === 3 && new Set(seen.map((s) => s.sandboxId)).size === 3,
     "Sandbox.list pages by metadata, limit 1", seen.map((s) => s.sandboxId));
  ok(await sbx.pause(), "pause is true");
  ok((await Sandbox.pause(sbx.sandboxId, opts)) === false,
     "pause again is false (409)");
  const q = Sandbox.list({ ...opts, query: { metadata: { sdk: tag }, state: ["paused"] } });
  const paused = await q.nextItems();
  ok(paused.length === 1 && paused[0].sandboxId === sbx.sandboxId &&
     paused[0].state === "paused", "list state paused", paused);
  const again = await Sandbox.connect(sbx.sandboxId, { ...opts, timeoutMs: 60000 });
  ok(again.sandboxId === sbx.sandboxId, "Sandbox.connect resumes");
  ok((await again.getInfo()).state === "running", "... running");
  await Sandbox.setTimeout(sbx.sandboxId, 300000, opts);
  const i2 = await Sandbox.getInfo(sbx.sandboxId, opts);
  ok(Math.abs(i2.endAt.getTime() - Date.now() - 300000) < 10000,
     "setTimeout moves endAt", i2.endAt);
  let threw = "";
  try {
    await Sandbox.getInfo(sbx.sandboxId, { apiKey: process.env.E2B_KEY_B });
  } catch (e) {
    threw = e.constructor.name;
  }
  ok(threw === "SandboxNotFoundError", "another tenant: SandboxNotFoundError", threw);
  ok(await Sandbox.kill(sbx.sandboxId, opts), "kill is true");
  ok((await Sandbox.kill(sbx.sandboxId, opts)) === false, "kill again is false");
  for (const s of more) await s.kill();
  console.log(`1..${n}`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.log(`not ok ${n + 1} - the SDK threw: ${e && e.stack}`);
  console.log(`1..${n + 1}`);
  process.exit(1);
});
