// tests/e2b/resolve.cjs - preloaded (node --require) by the TLS run of
// tests/t-e2b-sdk.sh: the names under E2B_RESOLVE_DOMAIN (e2b.test) and the
// domain itself resolve to 127.0.0.1, every other name as before, so the
// SDK's own URLs (https://api.DOMAIN, https://PORT-ID.DOMAIN) reach the
// test's service with no /etc/hosts edit.  Node's net and tls (and so
// its fetch and the undici package the SDK loads) call dns.lookup at
// connect time, through the module's property: replacing it is enough.
"use strict";
const dns = require("node:dns");
const domain = (process.env.E2B_RESOLVE_DOMAIN || "e2b.test").toLowerCase();
const ours = (h) => typeof h === "string" && (h.toLowerCase() === domain || h.toLowerCase().endsWith(`.${domain}`));
const lookup = dns.lookup;
dns.lookup = function (hostname, options, callback) {
	if (!ours(hostname)) return lookup.apply(this, arguments);
	if (typeof options === "function") {
		callback = options;
		options = {};
	}
	if (typeof options === "number") options = { family: options };
	if (options && options.all) process.nextTick(callback, null, [{ address: "127.0.0.1", family: 4 }]);
	else process.nextTick(callback, null, "127.0.0.1", 4);
};
const plookup = dns.promises.lookup;
dns.promises.lookup = function (hostname, options) {
	if (!ours(hostname)) return plookup.apply(this, arguments);
	const a = { address: "127.0.0.1", family: 4 };
	return Promise.resolve(options && options.all ? [a] : a);
};
