// tests/e2b/seizu.mjs - Seizu's sequence through the real E2B SDK (npm
// `e2b`, `@e2b/code-interpreter`) against `sbxcat serve`, in TAP: one
// `ok`/`not ok` per check, what the SDK returned or threw in the
// diagnostics.  tests/t-e2b-sdk.sh installs the SDKs and points them at
// the service the way a self-hosting platform does (the environment:
// E2B_API_URL and E2B_SANDBOX_URL, or E2B_DOMAIN over TLS); this file only
// calls the SDK, so what passes here passes for Seizu.
//
// Environment:
//   E2B_MODULES   the directory whose node_modules holds the SDKs
//   E2B_SDK       the package to drive: e2b (the current one, create at
//                 POST /v2/sandboxes) or an alias of an older one
//   E2B_CODE      1: also the code interpreter (@e2b/code-interpreter,
//                 bound to the e2b its package.json takes)
//   E2B_API_KEY   tenant A's token; E2B_API_KEY_B tenant B's
//   E2B_TEMPLATES the catalogue's aliases, comma-separated (the first is
//                 the default runtime)
//   SEIZU_RUN     a tag unique to this run, put in every sandbox's metadata
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const req = createRequire(path.join(process.env.E2B_MODULES, "index.js"));
const SDK = process.env.E2B_SDK || "e2b";
const e2b = req(SDK);
const withCode = process.env.E2B_CODE === "1";
const ci = withCode ? req("@e2b/code-interpreter") : null;
const KEY_B = process.env.E2B_API_KEY_B;
const RUN = process.env.SEIZU_RUN || `r${process.pid}`;
const TEMPLATES = (process.env.E2B_TEMPLATES || "").split(",").filter(Boolean);
// Each call is bounded: a server that never answers is a failed check, not
// a hung test.
const STEP_MS = Number(process.env.SEIZU_STEP_MS || 90000);

let n = 0;
let failed = 0;
const made = []; // every sandbox made here, killed at the end whatever happened

function diag(s) {
	for (const line of String(s).split("\n")) console.log(`# ${line}`);
}
// What an error is, as the SDK gave it: its class, message and cause.
function describe(e) {
	if (!(e instanceof Error)) return `threw ${JSON.stringify(e)}`;
	let s = `${e.constructor.name}: ${e.message}`;
	if (e.cause) s += `\n  cause: ${e.cause.constructor?.name}: ${e.cause.message ?? e.cause}`;
	if (e.code !== undefined) s += `\n  code: ${e.code}`;
	return s;
}
function bounded(p, what) {
	let t;
	const limit = new Promise((_, rej) => {
		t = setTimeout(() => rej(new Error(`no answer within ${STEP_MS} ms (${what})`)), STEP_MS);
	});
	return Promise.race([p, limit]).finally(() => clearTimeout(t));
}
// check DESC FN: one TAP line; FN throws (or its assertion does) to fail.
async function check(desc, fn) {
	n++;
	try {
		await bounded(Promise.resolve().then(fn), desc);
		console.log(`ok ${n} - ${desc}`);
		return true;
	} catch (e) {
		failed++;
		console.log(`not ok ${n} - ${desc}`);
		diag(describe(e));
		return false;
	}
}
// A check that cannot run because what it needs failed before it.
function cannot(desc, why) {
	n++;
	failed++;
	console.log(`not ok ${n} - ${desc}`);
	diag(`not tried: ${why}`);
}
function expect(cond, what) {
	if (!cond) throw new Error(`expected ${what}`);
}
function eq(got, want, what) {
	if (JSON.stringify(got) !== JSON.stringify(want))
		throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}
// rejects P CLASS: P throws an instance of the SDK's CLASS; the error.
async function rejects(p, cls, what) {
	try {
		const v = await p;
		throw new Error(`${what}: expected ${cls.name}, it returned ${JSON.stringify(v)}`);
	} catch (e) {
		if (e instanceof cls) return e;
		if (e.message?.startsWith(`${what}: expected`)) throw e;
		throw new Error(`${what}: expected ${cls.name}, got ${describe(e)}`);
	}
}
const ID = /^[a-z0-9]{1,63}$/;

// The SDK's Sandbox (the code interpreter's when it is driven: Seizu's).
const Sandbox = withCode ? ci.Sandbox : e2b.Sandbox;
const { CommandExitError, TimeoutError, NotFoundError, AuthenticationError } = e2b;
const pause = (s) => (typeof s.pause === "function" ? s.pause() : s.betaPause());

let sbx = null;
let sbx2 = null;
const meta = { seizu: RUN, user: "u-42" };

// ---- create ----
await check(`${SDK}: Sandbox.create({metadata, timeoutMs})`, async () => {
	sbx = await Sandbox.create({ metadata: meta, timeoutMs: 300000 });
	made.push(sbx.sandboxId);
	diag(`sandbox ${sbx.sandboxId}`);
	expect(ID.test(sbx.sandboxId), `a DNS-label id, got ${sbx.sandboxId}`);
});
const need = (desc, fn) => (sbx ? check(desc, fn) : cannot(desc, "Sandbox.create failed"));

// ---- commands ----
await need("commands.run('echo hi'): exit 0, stdout 'hi\\n'", async () => {
	const r = await sbx.commands.run("echo hi");
	eq(r.exitCode, 0, "exitCode");
	eq(r.stdout, "hi\n", "stdout");
	eq(r.stderr, "", "stderr");
});
await need("a non-zero exit throws CommandExitError with exitCode, stdout and stderr", async () => {
	const e = await rejects(sbx.commands.run("echo out; echo err >&2; exit 3"), CommandExitError, "run");
	eq(e.exitCode, 3, "exitCode");
	eq(e.stdout, "out\n", "stdout");
	eq(e.stderr, "err\n", "stderr");
});
await need("a deadline (timeoutMs 2000, sleep 30) throws TimeoutError within 15 s", async () => {
	const t0 = Date.now();
	await rejects(sbx.commands.run("sleep 30", { timeoutMs: 2000 }), TimeoutError, "run");
	const dt = Date.now() - t0;
	expect(dt < 15000, `the deadline to act within 15 s, took ${dt} ms`);
});
await need("files.makeDir of a work dir under /home/user", async () => {
	eq(await sbx.files.makeDir("/home/user/work/sub"), true, "makeDir of a new dir");
	eq(await sbx.files.makeDir("/home/user/work/sub"), false, "makeDir of an existing dir");
});
await need("commands.run with envs and cwd", async () => {
	const r = await sbx.commands.run('echo "$SEIZU_V"; pwd', {
		envs: { SEIZU_V: "v 1=2" },
		cwd: "/home/user/work/sub",
	});
	eq(r.stdout, "v 1=2\n/home/user/work/sub\n", "stdout");
});
await need("the default cwd and HOME are /home/user", async () => {
	const r = await sbx.commands.run('pwd; echo "$HOME"');
	eq(r.stdout, "/home/user\n/home/user\n", "stdout");
});
await need("onStdout and onStderr stream each line", async () => {
	const out = [];
	const err = [];
	await sbx.commands.run("for i in 1 2 3; do echo o$i; echo e$i >&2; done", {
		onStdout: (d) => out.push(d),
		onStderr: (d) => err.push(d),
	});
	eq(out.join(""), "o1\no2\no3\n", "stdout chunks");
	eq(err.join(""), "e1\ne2\ne3\n", "stderr chunks");
});
await need("a background command: pid, commands.list, kill", async () => {
	const h = await sbx.commands.run("sleep 120", { background: true });
	expect(Number.isInteger(h.pid) && h.pid > 0, `a pid, got ${h.pid}`);
	const ps = await sbx.commands.list();
	expect(ps.some((p) => p.pid === h.pid), `commands.list to show pid ${h.pid}: ${JSON.stringify(ps)}`);
	eq(await h.kill(), true, "kill");
	const t0 = Date.now();
	const e = await rejects(h.wait(), CommandExitError, "wait after kill");
	expect(e.exitCode !== 0, "a non-zero exit after SIGKILL");
	expect(Date.now() - t0 < 10000, "wait to end soon after kill");
	const ps2 = await sbx.commands.list();
	expect(!ps2.some((p) => p.pid === h.pid), `pid ${h.pid} gone from the list`);
});
await need("stdin: sendStdin then closeStdin", async () => {
	const h = await sbx.commands.run("cat", { background: true, stdin: true });
	await sbx.commands.sendStdin(h.pid, "abc\n");
	await sbx.commands.sendStdin(h.pid, "def\n");
	await sbx.commands.closeStdin(h.pid);
	const r = await h.wait();
	eq(r.stdout, "abc\ndef\n", "stdout");
});
await need("commands.kill of a pid that does not exist is false", async () => {
	eq(await sbx.commands.kill(999999), false, "kill");
});

// ---- files ----
const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
await need("files.write then files.read (text)", async () => {
	const w = await sbx.files.write("/home/user/a.txt", "hello seizu\n");
	eq(w.path, "/home/user/a.txt", "WriteInfo.path");
	eq(w.name, "a.txt", "WriteInfo.name");
	eq(await sbx.files.read("/home/user/a.txt"), "hello seizu\n", "read");
});
await need("files.write then files.read (bytes, every byte value)", async () => {
	await sbx.files.write("/home/user/b.bin", bytes);
	const got = await sbx.files.read("/home/user/b.bin", { format: "bytes" });
	eq(Array.from(got), Array.from(bytes), "bytes");
});
// The SDK uploads as multipart/form-data unless told otherwise; with
// useOctetStream, or data that is a stream, as application/octet-stream.
await need("files.write with useOctetStream (application/octet-stream)", async () => {
	await sbx.files.write("/home/user/o.bin", bytes, { useOctetStream: true });
	eq(Array.from(await sbx.files.read("/home/user/o.bin", { format: "bytes" })), Array.from(bytes), "bytes");
});
await need("files.write of a ReadableStream", async () => {
	const rs = new ReadableStream({
		start(c) {
			c.enqueue(new TextEncoder().encode("streamed "));
			c.enqueue(new TextEncoder().encode("data"));
			c.close();
		},
	});
	await sbx.files.write("/home/user/s.txt", rs);
	eq(await sbx.files.read("/home/user/s.txt"), "streamed data", "read");
});
// gzip (Content-Encoding: gzip) either round-trips or is refused: never
// a file that holds the compressed bytes.
await need("files.write with gzip: the content, or a refusal", async () => {
	let wrote = true;
	try {
		await sbx.files.write("/home/user/g.txt", "gzipped text", { gzip: true });
	} catch (e) {
		wrote = false;
		diag(`refused: ${describe(e)}`);
	}
	if (wrote) eq(await sbx.files.read("/home/user/g.txt"), "gzipped text", "read");
	else eq(await sbx.files.exists("/home/user/g.txt"), false, "no file after the refusal");
});
await need("files.write of a relative path lands under /home/user", async () => {
	await sbx.files.write("rel.txt", "r");
	eq(await sbx.files.read("/home/user/rel.txt"), "r", "read back");
});
await need("files.write of several files at once", async () => {
	const w = await sbx.files.write([
		{ path: "/home/user/m/1.txt", data: "one" },
		{ path: "/home/user/m/2.txt", data: "two" },
	]);
	eq(w.length, 2, "WriteInfo entries");
	eq(await sbx.files.read("/home/user/m/2.txt"), "two", "read");
});
await need("files.list(/home/user): names, types, sizes", async () => {
	const l = await sbx.files.list("/home/user");
	const by = Object.fromEntries(l.map((e) => [e.name, e]));
	expect(by["a.txt"], `a.txt listed: ${JSON.stringify(l.map((e) => e.name))}`);
	eq(by["a.txt"].type, "file", "a.txt type");
	eq(by["a.txt"].path, "/home/user/a.txt", "a.txt path");
	eq(by["a.txt"].size, 12, "a.txt size");
	eq(by["work"].type, "dir", "work type");
});
await need("files.exists", async () => {
	eq(await sbx.files.exists("/home/user/a.txt"), true, "a.txt");
	eq(await sbx.files.exists("/home/user/nope"), false, "nope");
});
await need("files.getInfo", async () => {
	const i = await sbx.files.getInfo("/home/user/a.txt");
	eq([i.name, i.type, i.path, i.size], ["a.txt", "file", "/home/user/a.txt", 12], "EntryInfo");
	expect(i.modifiedTime instanceof Date && !isNaN(i.modifiedTime), "a modifiedTime");
});
await need("files.rename", async () => {
	const i = await sbx.files.rename("/home/user/a.txt", "/home/user/work/c.txt");
	eq(i.path, "/home/user/work/c.txt", "the new path");
	eq(await sbx.files.exists("/home/user/a.txt"), false, "the old name gone");
	eq(await sbx.files.read("/home/user/work/c.txt"), "hello seizu\n", "the content moved");
});
await need("files.remove", async () => {
	await sbx.files.remove("/home/user/work/c.txt");
	eq(await sbx.files.exists("/home/user/work/c.txt"), false, "removed");
});
await need("files.read of a missing file throws NotFoundError", async () => {
	await rejects(sbx.files.read("/home/user/missing.txt"), NotFoundError, "read");
});
await need("a file written by a command is read by files.read, and the reverse", async () => {
	await sbx.commands.run("printf from-cmd > /home/user/cmd.txt");
	eq(await sbx.files.read("/home/user/cmd.txt"), "from-cmd", "files.read");
	await sbx.files.write("/home/user/api.txt", "from-api");
	eq((await sbx.commands.run("cat /home/user/api.txt")).stdout, "from-api", "cat");
});
await need("files.read outside /home/user (/etc/hostname) is the container's", async () => {
	const h = await sbx.files.read("/etc/hostname");
	const c = (await sbx.commands.run("cat /etc/hostname")).stdout;
	expect(h.length > 0, "a hostname");
	eq(h, c, "the same as cat in the sandbox");
});
await need("files.list('/') is the container's root", async () => {
	const names = (await sbx.files.list("/")).map((e) => e.name);
	for (const d of ["etc", "home", "tmp"]) expect(names.includes(d), `${d} in / (${JSON.stringify(names)})`);
});
await need("files.write and read under /tmp (outside /home/user)", async () => {
	await sbx.files.write("/tmp/seizu.txt", "in tmp");
	eq(await sbx.files.read("/tmp/seizu.txt"), "in tmp", "read");
	eq((await sbx.commands.run("cat /tmp/seizu.txt")).stdout, "in tmp", "cat");
});

// Paths that climb out of /home/user, by .. or by a symlink the sandbox
// made, reach the container's files, never the host's (this driver runs
// on the service's host, so it can look).
await need("a path climbing out of /home/user by .. stays in the container", async () => {
	const probe = `/tmp/seizu-probe-${RUN}`;
	let wrote = true;
	try {
		await sbx.files.write(`/home/user/../../..${probe}`, "p");
	} catch (e) {
		wrote = false;
		diag(`refused: ${describe(e)}`);
	}
	expect(!existsSync(probe), `${probe} not on the host`);
	if (wrote) eq((await sbx.commands.run(`cat ${probe}`)).stdout, "p", "in the container");
});
await need("a symlink to / made in the sandbox leads to the container's root", async () => {
	await sbx.commands.run("ln -s / /home/user/root-link");
	const probe = `/tmp/seizu-link-${RUN}`;
	let got = null;
	try {
		got = await sbx.files.read("/home/user/root-link/etc/hostname");
	} catch (e) {
		diag(`read refused: ${describe(e)}`);
	}
	if (got !== null) eq(got, (await sbx.commands.run("cat /etc/hostname")).stdout, "the container's hostname");
	try {
		await sbx.files.write(`/home/user/root-link${probe}`, "l");
	} catch (e) {
		diag(`write refused: ${describe(e)}`);
	}
	expect(!existsSync(probe), `${probe} not on the host`);
	await sbx.commands.run("rm /home/user/root-link");
});

// ---- code ----
if (withCode) {
	await need("runCode('x = 41') then runCode('x + 1'): text '42'", async () => {
		const a = await sbx.runCode("x = 41");
		expect(!a.error, `no error: ${JSON.stringify(a.error)}`);
		const b = await sbx.runCode("x + 1");
		expect(!b.error, `no error: ${JSON.stringify(b.error)}`);
		eq(b.text, "42", "text");
		expect(Number.isInteger(b.executionCount), `an executionCount, got ${b.executionCount}`);
	});
	// Over TLS (SEIZU_HOST=1): what the Python code interpreter 2.8 and
	// any client that cannot set E2b-Sandbox-Id send, the sandbox and
	// port named by the Host alone, https://PORT-ID.E2B_DOMAIN.
	if (process.env.SEIZU_HOST === "1") {
		const host = (port) => `https://${port}-${sbx.sandboxId}.${process.env.E2B_DOMAIN}`;
		const tok = { "X-Access-Token": sbx.envdAccessToken };
		await need("Host alone: POST https://49999-ID.DOMAIN/execute (NDJSON, x is 41)", async () => {
			const r = await fetch(`${host(49999)}/execute`, {
				method: "POST",
				headers: { ...tok, "Content-Type": "application/json" },
				body: JSON.stringify({ code: "x" }),
			});
			eq(r.status, 200, "status");
			const lines = (await r.text()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
			expect(lines.some((l) => l.type === "result" && l.text === "41"), `a result 41: ${JSON.stringify(lines)}`);
		});
		await need("Host alone: Connect unary at https://49983-ID.DOMAIN (process.Process/List)", async () => {
			const r = await fetch(`${host(49983)}/process.Process/List`, {
				method: "POST",
				headers: { ...tok, "Content-Type": "application/json" },
				body: "{}",
			});
			eq(r.status, 200, "status");
			const m = await r.json();
			expect(Array.isArray(m.processes ?? []), `processes: ${JSON.stringify(m)}`);
		});
		await need("Host alone: a wrong X-Access-Token is refused (401)", async () => {
			const r = await fetch(`${host(49983)}/process.Process/List`, {
				method: "POST",
				headers: { "X-Access-Token": "wrong", "Content-Type": "application/json" },
				body: "{}",
			});
			eq(r.status, 401, "status");
		});
	}
	await need("runCode(print): logs.stdout", async () => {
		const r = await sbx.runCode("print('hi from python')");
		// Chunks as they were written (Jupyter coalesces within its flush
		// interval; a pipe may not): the text is what a client reads.
		eq(r.logs.stdout.join(""), "hi from python\n", "logs.stdout joined");
		eq(r.logs.stderr, [], "logs.stderr");
		if (r.logs.stdout.length > 1) diag(`stdout came in ${r.logs.stdout.length} chunks: ${JSON.stringify(r.logs.stdout)}`);
	});
	await need("createCodeContext, runCode in it, listCodeContexts, removeCodeContext", async () => {
		// The SDK sends these with the create's trafficAccessToken alone.
		const ctx = await sbx.createCodeContext({ language: "python" });
		expect(ctx && typeof ctx.id === "string" && ctx.id.length > 0, "a context id");
		await sbx.runCode("y = 'in ctx'", { context: ctx });
		const r = await sbx.runCode("y", { context: ctx });
		eq(r.text, "in ctx", "the context's own variable");
		const d = await sbx.runCode("'y' in dir()");
		eq(d.text, "False", "the default context does not see it");
		const all = await sbx.listCodeContexts();
		expect(all.some((c) => c.id === ctx.id), "listCodeContexts has it");
		await sbx.removeCodeContext(ctx.id);
		const after = await sbx.listCodeContexts();
		expect(!after.some((c) => c.id === ctx.id), "removed");
	});
	await need("runCode('1/0'): execution.error ZeroDivisionError", async () => {
		const r = await sbx.runCode("1/0");
		expect(r.error, "an error");
		eq(r.error.name, "ZeroDivisionError", "error.name");
		expect(r.error.value.includes("division by zero"), `error.value, got ${r.error.value}`);
		expect(typeof r.error.traceback === "string" && r.error.traceback.length > 0, "a traceback");
	});
}

// ---- pause, list, connect ----
await need("pause: true, then false when already paused", async () => {
	eq(await pause(sbx), true, "first pause");
	eq(await pause(sbx), false, "second pause");
});
await need("getInfo of a paused sandbox: state paused", async () => {
	eq((await Sandbox.getInfo(sbx.sandboxId)).state, "paused", "state");
});
await check("a second sandbox with the same metadata, paused", async () => {
	// Who acts, for the audit: the SDK's headers option (sent on the
	// control plane's calls) carries sbxcat's agent and run headers.
	const who = { "X-Sandbox-Agent": "seizu", "X-Sandbox-Run": RUN };
	sbx2 = await Sandbox.create({ metadata: { seizu: RUN, user: "u-43" }, timeoutMs: 300000, headers: who });
	made.push(sbx2.sandboxId);
	diag(`sandbox ${sbx2.sandboxId}`);
	expect(sbx2.sandboxId !== sbx?.sandboxId, "a new id");
	eq(await (typeof sbx2.pause === "function" ? sbx2.pause({ headers: who }) : sbx2.betaPause({ headers: who })), true, "pause");
});
await need("list({query: {metadata, state: ['paused']}, limit: 1}) pages with nextItems()", async () => {
	const p = Sandbox.list({ query: { metadata: { seizu: RUN }, state: ["paused"] }, limit: 1 });
	const seen = [];
	let pages = 0;
	while (p.hasNext && pages < 5) {
		const items = await p.nextItems();
		pages++;
		expect(items.length <= 1, `at most 1 a page, got ${items.length}`);
		for (const s of items) {
			eq(s.state, "paused", "state");
			eq(s.metadata.seizu, RUN, "metadata");
			expect(s.startedAt instanceof Date && !isNaN(s.startedAt), "startedAt");
			seen.push(s.sandboxId);
		}
	}
	eq(seen.slice().sort(), [sbx.sandboxId, sbx2?.sandboxId].sort(), "the two paused sandboxes, once each");
	expect(pages >= 2, `two pages or more, got ${pages}`);
	expect(!p.hasNext, "the end of the list");
});
await need("list by metadata of one sandbox (user u-42) finds it alone", async () => {
	const items = await Sandbox.list({ query: { metadata: { seizu: RUN, user: "u-42" } } }).nextItems();
	eq(items.map((s) => s.sandboxId), [sbx.sandboxId], "ids");
});
await need("list({state: ['running']}) does not show the paused ones", async () => {
	const items = await Sandbox.list({ query: { metadata: { seizu: RUN }, state: ["running"] } }).nextItems();
	eq(items.length, 0, "running with this run's metadata");
});
await need("tenant B: list is empty, connect/getInfo are NotFound, kill is false", async () => {
	const o = { apiKey: KEY_B };
	const items = await Sandbox.list({ ...o, query: { metadata: { seizu: RUN } } }).nextItems();
	eq(items.length, 0, "B's list");
	const all = await Sandbox.list(o).nextItems();
	expect(!all.some((s) => s.sandboxId === sbx.sandboxId), "B's unfiltered list without A's sandbox");
	await rejects(Sandbox.connect(sbx.sandboxId, o), NotFoundError, "connect as B");
	await rejects(Sandbox.getInfo(sbx.sandboxId, o), NotFoundError, "getInfo as B");
	eq(await Sandbox.kill(sbx.sandboxId, o), false, "kill as B");
	eq((await Sandbox.getInfo(sbx.sandboxId)).state, "paused", "A's sandbox untouched");
});
let again = null;
await need("Sandbox.connect(id) resumes a paused sandbox", async () => {
	again = await Sandbox.connect(sbx.sandboxId);
	eq(again.sandboxId, sbx.sandboxId, "id");
	eq((await again.getInfo()).state, "running", "state");
});
await need("after connect: the files and the processes' world are kept", async () => {
	const s = again || sbx;
	eq(await s.files.read("/home/user/rel.txt"), "r", "a file written before the pause");
	eq((await s.commands.run("echo back")).stdout, "back\n", "a command");
});
if (withCode)
	await need("after connect: runCode still has x (the interpreter survived the pause)", async () => {
		const r = await (again || sbx).runCode("x * 2");
		expect(!r.error, `no error: ${JSON.stringify(r.error)}`);
		eq(r.text, "82", "text");
	});
await need("getInfo(): every field", async () => {
	const i = await sbx.getInfo();
	eq(i.sandboxId, sbx.sandboxId, "sandboxId");
	expect(typeof i.templateId === "string" && i.templateId.length > 0, `a templateId, got ${i.templateId}`);
	eq(i.metadata, meta, "metadata");
	eq(i.state, "running", "state");
	expect(i.startedAt instanceof Date && !isNaN(i.startedAt), `startedAt, got ${i.startedAt}`);
	expect(i.endAt instanceof Date && i.endAt > i.startedAt, `endAt after startedAt, got ${i.endAt}`);
	expect(Number.isInteger(i.cpuCount) && i.cpuCount > 0, `cpuCount, got ${i.cpuCount}`);
	expect(Number.isInteger(i.memoryMB) && i.memoryMB > 0, `memoryMB, got ${i.memoryMB}`);
	expect(typeof i.envdVersion === "string" && /^\d+\.\d+\.\d+/.test(i.envdVersion), `envdVersion, got ${i.envdVersion}`);
});
await need("setTimeout(60 s): endAt about now + 60 s", async () => {
	await sbx.setTimeout(60000);
	const i = await sbx.getInfo();
	const d = i.endAt.getTime() - Date.now();
	expect(d > 45000 && d < 75000, `endAt in about 60 s, got ${d} ms`);
});
await need("isRunning() is true", async () => {
	eq(await sbx.isRunning(), true, "isRunning");
});
await need("kill(): true; then getInfo NotFound, kill false, connect NotFound", async () => {
	eq(await sbx.kill(), true, "kill");
	await rejects(Sandbox.getInfo(sbx.sandboxId), NotFoundError, "getInfo after kill");
	eq(await Sandbox.kill(sbx.sandboxId), false, "kill again");
	await rejects(Sandbox.connect(sbx.sandboxId), NotFoundError, "connect after kill");
});
if (sbx2)
	await check("Sandbox.kill(id) of the second", async () => {
		eq(await Sandbox.kill(sbx2.sandboxId), true, "kill");
	});

// ---- refusals ----
await check("a wrong API key: AuthenticationError", async () => {
	await rejects(
		Sandbox.create({ apiKey: `e2b_${"0".repeat(40)}`, timeoutMs: 60000 }),
		AuthenticationError,
		"create",
	);
});
await check("an unknown template is refused, naming the templates there are", async () => {
	let e = null;
	try {
		const s = await Sandbox.create("no-such-template-x", { timeoutMs: 60000 });
		made.push(s.sandboxId);
		diag(`sandbox ${s.sandboxId}`);
	} catch (err) {
		e = err;
	}
	expect(e, "an error");
	expect(!(e instanceof AuthenticationError), `not an auth error: ${describe(e)}`);
	expect(TEMPLATES.length === 0 || e.message.includes(TEMPLATES[0]), `the message to name ${TEMPLATES[0]}: ${describe(e)}`);
});
if (TEMPLATES.length)
	await check(`Sandbox.create of a catalogue alias as template (${TEMPLATES.at(-1)})`, async () => {
		const s = await e2b.Sandbox.create(TEMPLATES.at(-1), { timeoutMs: 60000 });
		made.push(s.sandboxId);
		diag(`sandbox ${s.sandboxId}`);
		eq((await s.getInfo()).templateId, TEMPLATES.at(-1), "templateId");
		eq((await s.commands.run("echo t")).stdout, "t\n", "a command");
		eq(await s.kill(), true, "kill");
	});

// Whatever failed, nothing made here is left behind.
for (const id of made) await e2b.Sandbox.kill(id).catch(() => {});
console.log(`1..${n}`);
process.exitCode = failed ? 1 : 0;
