// bench/e2b_bench.mjs MODE N [POOL] - the timed side of bench/bench-e2b.sh,
// through the real E2B SDK (tests/e2b/sdk.sh installs it), each time in
// seconds to OUT/NAME, one a line:
//   exec N   commands.run("true") through the E2B front (exec.e2b) and
//            POST /sessions/ID/exec {"command": "true"} through sandboxd's
//            front of the same service (exec.wire), alternately, each on
//            a client that keeps its connection (the SDK's undici agent;
//            node's fetch), after two rounds of warming up; and beside
//            them, for where the time goes, the command the SDK sends
//            (`/bin/bash -l -c true`) through sandboxd's front
//            (exec.wirebash);
//   first N POOL  Sandbox.create() then commands.run("true") (first.e2b)
//            against a service with a warm pool of POOL, and `docker run
//            -d` + `docker exec NAME true` with bench-session.sh's flags
//            (first.docker), alternately; between runs the pool is given
//            time to refill (its sbxcat_pool_ready gauge back at POOL, at
//            most 15 s), outside both timings.
// Environment: E2B_MODULES, E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY (a
// tenant's token, also the sandboxd front's), SERVE_URL, SERVE_TOKEN (the
// service's, for /metrics), OUT, RT, IMG, DEP, DOCKER, PREFIX.
import { execFileSync } from "node:child_process";
import { mkdirSync, chmodSync, chownSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const E = process.env;
const req = createRequire(path.join(E.E2B_MODULES, "index.js"));
const { Sandbox } = req("e2b");
const [mode, nArg, poolArg] = process.argv.slice(2);
const N = Number(nArg);
const now = () => Number(process.hrtime.bigint()) / 1e9;
const write = (name, ts) => writeFileSync(path.join(E.OUT, name), ts.map((t) => t.toFixed(6)).join("\n") + "\n");

async function wire(pathName, body, token) {
	const r = await fetch(`${E.SERVE_URL}${pathName}`, {
		method: "POST",
		headers: { "X-Sandbox-Token": token, "Content-Type": "application/json" },
		body: JSON.stringify(body),
	});
	const t = await r.text();
	if (r.status !== 200) throw new Error(`POST ${pathName}: ${r.status} ${t.slice(0, 300)}`);
	return JSON.parse(t);
}

async function modeExec() {
	const sbx = await Sandbox.create({ timeoutMs: 3600000 });
	const open = await wire("/sessions", { session_id: `${E.PREFIX}exec` }, E.E2B_API_KEY);
	const sid = open.session.session_id;
	const te = [];
	const tw = [];
	const tb = [];
	for (let i = 0; i < N + 2; i++) {
		const t0 = now();
		const r = await sbx.commands.run("true");
		const t1 = now();
		if (r.exitCode !== 0) throw new Error(`commands.run true: ${JSON.stringify(r)}`);
		const d = await wire(`/sessions/${sid}/exec`, { command: "true" }, open.token);
		const t2 = now();
		if (d.exit_code !== 0) throw new Error(`exec true: ${JSON.stringify(d)}`);
		// What the SDK runs, through sandboxd's front: where the time goes.
		const b = await wire(`/sessions/${sid}/exec`, { command: "/bin/bash -l -c true" }, open.token);
		const t3 = now();
		if (b.exit_code !== 0) throw new Error(`exec bash -l -c true: ${JSON.stringify(b)}`);
		if (i >= 2) {
			te.push(t1 - t0);
			tw.push(t2 - t1);
			tb.push(t3 - t2);
		}
	}
	write("exec.e2b", te);
	write("exec.wire", tw);
	write("exec.wirebash", tb);
	await sbx.kill();
	await fetch(`${E.SERVE_URL}/sessions/${sid}`, { method: "DELETE", headers: { "X-Sandbox-Token": E.E2B_API_KEY } });
}

async function poolReady() {
	const r = await fetch(`${E.SERVE_URL}/metrics`, { headers: { "X-Sandbox-Token": E.SERVE_TOKEN } });
	for (const line of (await r.text()).split("\n"))
		if (line.startsWith("sbxcat_pool_ready{") && line.includes(`runtime="${E.RT}"`)) return Number(line.split(" ").at(-1));
	return null;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitPool(size, seen) {
	let v = await poolReady();
	if (v === null) return sleep(500);
	seen.gauge = 1;
	const end = now() + 15;
	while (v < size && now() < end) {
		await sleep(20);
		v = await poolReady();
	}
	if (v < size) seen.timeouts++;
}

// docker run -d with bench-session.sh's flags (serve_bench.py's docker_run).
function dockerRun(name, key) {
	const d = path.join(E.OUT, "docker", key);
	const ws = path.join(d, "workspace");
	mkdirSync(ws, { recursive: true });
	chmodSync(d, 0o700);
	chownSync(ws, 10001, 10001);
	execFileSync(E.DOCKER, ["run", "-d", "--name", name, "--init", "--user", "10001:10001",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pids-limit", "512",
		"--cpus", "2", "--memory", "1g", "--memory-swap", "1g", "--tmpfs", "/tmp:size=64m",
		"--network", "none", "--label", `io.sbxcat.deployment=${E.DEP}`,
		"--label", "io.sbxcat.tenant=bench", "--label", `io.sbxcat.key=${key}`,
		"--label", `io.sbxcat.runtime=${E.RT}`, "--mount", `type=bind,source=${ws},target=${ws}`,
		"-w", ws, "--entrypoint", "/bin/sleep", E.IMG, "2147483647"], { stdio: "ignore" });
}

async function modeFirst() {
	const size = Number(poolArg);
	const seen = { gauge: 0, timeouts: 0 };
	const ts = [];
	const td = [];
	// The pool full before the first run.
	for (let w = 0; w < 300; w++) {
		const v = await poolReady();
		if (v === null || v >= size) break;
		await sleep(100);
	}
	for (let i = 0; i <= N; i++) {
		await waitPool(size, seen);
		const t0 = now();
		const sbx = await Sandbox.create({ template: E.RT, timeoutMs: 600000 });
		const r = await sbx.commands.run("true");
		const t1 = now();
		if (r.exitCode !== 0) throw new Error(`commands.run true: ${JSON.stringify(r)}`);
		await sbx.kill();
		await waitPool(size, seen); // the claim's refill, not in docker's time
		const name = `${E.RT}-first-${i}`;
		const t2 = now();
		dockerRun(name, `first-${i}`);
		execFileSync(E.DOCKER, ["exec", name, "true"]);
		const t3 = now();
		execFileSync(E.DOCKER, ["rm", "-f", name], { stdio: "ignore" });
		if (i > 0) {
			ts.push(t1 - t0);
			td.push(t3 - t2);
		}
	}
	write("first.e2b", ts);
	write("first.docker", td);
	console.log(`# gauge ${seen.gauge}`);
	console.log(`# refill_timeouts ${seen.timeouts}`);
}

try {
	if (mode === "exec") await modeExec();
	else if (mode === "first") await modeFirst();
	else throw new Error(`unknown mode ${mode}`);
} catch (e) {
	console.log(`# error ${e.constructor.name}: ${e.message}`);
	process.exitCode = 1;
}
