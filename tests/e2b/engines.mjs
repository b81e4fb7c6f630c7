// tests/e2b/engines.mjs PACKAGE_JSON - exit 0 when this node satisfies the
// package's engines.node, else print why and exit 1.  npm's own check is
// only a warning (engine-strict is off), and an SDK installed on a node it
// does not support fails in ways that would read as the server's fault.
// The grammar is the part of node-semver's ranges that packages put in
// engines: comparators (>=, >, <=, <, =, bare) joined by spaces (and),
// alternatives by ||; x.y and x are x.y.0 and x.0.0.
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(process.argv[2], "utf8"));
const range = pkg.engines?.node;
const have = process.versions.node.split(".").map(Number);
const parse = (v) => {
	const p = v.split(".").map((x) => Number.parseInt(x, 10));
	return [p[0] || 0, p[1] || 0, p[2] || 0];
};
const cmp = (a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
const holds = (c) => {
	const m = /^(>=|<=|>|<|=)?v?([\d.]+)$/.exec(c);
	if (!m) throw new Error(`a comparator not understood: ${c}`);
	const d = cmp(have, parse(m[2]));
	return { ">=": d >= 0, "<=": d <= 0, ">": d > 0, "<": d < 0, "=": d === 0, undefined: d === 0 }[m[1]];
};
if (!range) process.exit(0);
const ok = range.split("||").some((alt) => alt.trim().split(/\s+/).filter(Boolean).every(holds));
if (!ok) {
	console.log(`${pkg.name} ${pkg.version} needs node ${range}; this is node ${process.versions.node}`);
	process.exit(1);
}
