/*
 * share/audit-web/app.js - the auditor's page, with JavaScript on.
 *
 * `sbxcat audit web` renders every page on the server, readable without
 * this file; this file only enhances what is there, from the page's own
 * JSON API (docs/audit.md, "The auditor's page"):
 *   - the log (/): filters applied as you type, pages loaded in place with
 *     the keyset cursor, a live ticker (/api/live), the chart redrawn for
 *     the filters and by tenant or agent, export links carrying the
 *     filters;
 *   - a session (/session/ID): its timeline with failures marked and the
 *     time each step took, the files it touched, its chain state;
 *   - everywhere: times in the viewer's zone (the server writes UTC in
 *     <time datetime=...>), or UTC at the viewer's choice.
 *
 * It hooks on the ids and classes the server's HTML keeps stable (the
 * list at the top of src/serve/auditweb-html.c) and draws its rows with
 * the same ones (table#log > tr.op[data-seq], table#timeline > tr.ev,
 * td.c-*), so a reader or a test finds the same things with JavaScript
 * on or off.
 *
 * Every value that came from a sandbox (targets, details, labels) is a
 * hostile string: it only ever becomes a text node (textContent), never
 * markup, and control and bidi characters are shown as visible escapes
 * exactly as the server's HTML shows them (escText).  No inline style, no
 * eval, no innerHTML: the page's Content-Security-Policy forbids them and
 * this file needs none.  No library, no build step.
 */
(function () {
	"use strict";

	var PAGE = 50;		/* rows a page of the log (the API's default) */
	var LIVE_MAX = 200;	/* ticker rows kept in the document */
	var TL_PAGE = 1000;	/* timeline events a request (the API's max) */
	var TL_MAX_PAGES = 20;	/* then a "more" button: 20,000 events */
	var FILTERS = ["tenant", "session", "agent", "run", "op", "failed",
		"q", "since", "until"];

	/* -- DOM, text only -- */

	/* el(TAG, ATTRS, CHILD...): an element; a string child is a text node. */
	function el(tag, attrs) {
		var e = document.createElement(tag), k, i, c;

		for (k in attrs || {}) {
			if (!Object.prototype.hasOwnProperty.call(attrs, k) ||
			    attrs[k] === null || attrs[k] === undefined ||
			    attrs[k] === false)
				continue;
			if (k === "text")
				e.textContent = attrs[k];
			else if (k === "class")
				e.className = attrs[k];
			else
				e.setAttribute(k, attrs[k] === true ? "" : attrs[k]);
		}
		for (i = 2; i < arguments.length; i++) {
			c = arguments[i];
			if (c === null || c === undefined)
				continue;
			e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
		}
		return e;
	}

	function clear(e) {
		while (e.firstChild)
			e.removeChild(e.firstChild);
	}

	function hex4(n) {
		return ("000" + n.toString(16)).slice(-4);
	}

	/*
	 * The visible-escape rule, the server's: C0 and C1 controls, DEL, the
	 * direction marks and embeddings/overrides/isolates are shown as
	 * \uXXXX in a span.esc, and so are the line and paragraph separators
	 * and the byte order mark, which the server shows escaped too; a lone
	 * surrogate (what invalid UTF-8 becomes on the way) as U+FFFD.
	 * Everything else is text as it is.
	 */
	function isEscaped(c) {
		return c <= 0x1f || (c >= 0x7f && c <= 0x9f) ||
			c === 0x200e || c === 0x200f || c === 0x2028 || c === 0x2029 || c === 0xfeff ||
			(c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
	}

	function escText(s) {
		var f = document.createDocumentFragment(), run = "", i, c, d;

		s = s === null || s === undefined ? "" : String(s);
		for (i = 0; i < s.length; i++) {
			c = s.charCodeAt(i);
			if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
				d = s.charCodeAt(i + 1);
				if (d >= 0xdc00 && d <= 0xdfff) {
					run += s.charAt(i) + s.charAt(i + 1);
					i++;
					continue;
				}
			}
			if (c >= 0xd800 && c <= 0xdfff) {
				run += "\ufffd";
			} else if (isEscaped(c)) {
				if (run)
					f.appendChild(document.createTextNode(run));
				run = "";
				f.appendChild(el("span", {class: "esc", title: "U+" + hex4(c).toUpperCase()},
					"\\u" + hex4(c)));
			} else {
				run += s.charAt(i);
			}
		}
		if (run)
			f.appendChild(document.createTextNode(run));
		return f;
	}

	/* A cell holding a sandbox's string, escaped; "-" for none. */
	function textCell(s, cls) {
		var td = el("td", {class: cls});

		if (s === null || s === undefined || s === "")
			td.appendChild(el("span", {class: "none", text: "-"}));
		else
			td.appendChild(escText(s));
		return td;
	}

	/* -- Times: the viewer's zone, or UTC -- */

	var utc = false;
	try {
		utc = window.localStorage.getItem("sbxcat-audit-utc") === "1";
	} catch (e) { /* storage refused: local it is */ }

	var zone = (function () {
		try {
			return Intl.DateTimeFormat().resolvedOptions().timeZone || "local";
		} catch (e) {
			return "local";
		}
	})();

	/* " (GMT+5:30)": the zone's offset now, as Intl names it. */
	function offsetName() {
		try {
			var ps = new Intl.DateTimeFormat("en-US", {timeZoneName: "short"})
				.formatToParts(new Date());
			for (var i = 0; i < ps.length; i++) {
				if (ps[i].type === "timeZoneName")
					return " (" + ps[i].value + ")";
			}
		} catch (e) { /* the name alone */ }
		return "";
	}

	var fmtCache = {};
	function fmt() {
		var key = utc ? "utc" : "local", o;

		if (!fmtCache[key]) {
			o = {year: "numeric", month: "2-digit", day: "2-digit",
				hour: "2-digit", minute: "2-digit", second: "2-digit",
				hourCycle: "h23"};
			if (utc)
				o.timeZone = "UTC";
			try {
				o.fractionalSecondDigits = 3;
				fmtCache[key] = new Intl.DateTimeFormat("en-US", o);
			} catch (e) {
				delete o.fractionalSecondDigits;
				fmtCache[key] = new Intl.DateTimeFormat("en-US", o);
			}
		}
		return fmtCache[key];
	}

	/*
	 * 2026-12-06 19:24:45.059, in the zone said once at the top of the
	 * page (#zone-name): the digits of the viewer's zone (Intl), laid out
	 * as ISO 8601 whatever the browser's language, so that a column of
	 * times reads and sorts at a glance.
	 */
	function showTime(iso) {
		var d = new Date(iso), p = {}, parts, i;

		if (isNaN(d.getTime()))
			return String(iso);
		parts = fmt().formatToParts(d);
		for (i = 0; i < parts.length; i++)
			p[parts[i].type] = parts[i].value;
		return p.year + "-" + p.month + "-" + p.day + " " +
			(p.hour === "24" ? "00" : p.hour) + ":" + p.minute + ":" + p.second +
			(p.fractionalSecond ? "." + p.fractionalSecond : "");
	}

	/* A <time> element: the server's UTC kept in datetime= and title. */
	function timeEl(iso) {
		return el("time", {datetime: iso, title: iso + " (UTC)", text: showTime(iso)});
	}

	function retime() {
		var ts = document.querySelectorAll("time[datetime]"), i;

		for (i = 0; i < ts.length; i++) {
			if (!ts[i].title)
				ts[i].title = ts[i].getAttribute("datetime") + " (UTC)";
			ts[i].textContent = showTime(ts[i].getAttribute("datetime"));
		}
		var z = document.getElementById("zone-name");
		if (z)
			z.textContent = utc ? "UTC" : zone + offsetName();
	}

	/* The zone switch, at the top of main. */
	function zoneSwitch(main) {
		var b = el("button", {type: "button", id: "zone-switch", class: "small",
			"aria-pressed": utc ? "true" : "false"}, utc ? "Show my zone" : "Show UTC");
		var p = el("p", {class: "zone"}, "Times in ", el("strong", {id: "zone-name"}), " ", b);
		var top = document.getElementById("top");

		b.addEventListener("click", function () {
			utc = !utc;
			try {
				window.localStorage.setItem("sbxcat-audit-utc", utc ? "1" : "0");
			} catch (e) { /* not kept: fine */ }
			b.textContent = utc ? "Show my zone" : "Show UTC";
			b.setAttribute("aria-pressed", utc ? "true" : "false");
			retime();
		});
		/* In the header, before the logout button, else atop main. */
		if (top)
			top.insertBefore(p, document.getElementById("logout"));
		else
			main.insertBefore(p, main.firstChild);
	}

	/* -- Numbers -- */

	function duration(ms) {
		if (ms === null || ms === undefined)
			return "-";
		if (ms < 1000)
			return ms + " ms";
		if (ms < 60000)
			return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
		var s = Math.round(ms / 1000), h = Math.floor(s / 3600);
		var m = Math.floor((s % 3600) / 60);
		s %= 60;
		return (h ? h + " h " : "") + m + " min " + s + " s";
	}

	/* How a row ended in a few words, as `audit ls` says it. */
	function outcome(r) {
		var d = r.detail || "", i = d.indexOf("; ");

		if (i >= 0)
			d = d.slice(0, i);
		if (d)
			return d;
		if (r.exit_status !== null && r.exit_status !== undefined)
			return "exit " + r.exit_status;
		return r.ok ? "ok" : "failed";
	}

	/* -- The API -- */

	function status(text, bad) {
		var s = document.getElementById("status");

		if (!s)
			return;
		s.textContent = text;
		s.className = bad ? "status bad" : "status";
	}

	/* get(URL, then): the JSON, or the error said in #status. */
	function get(url, then) {
		var x = new XMLHttpRequest();

		x.open("GET", url);
		x.setRequestHeader("Accept", "application/json");
		x.onload = function () {
			var j = null;

			try {
				j = JSON.parse(x.responseText);
			} catch (e) { /* said below */ }
			if (x.status === 401) {
				window.location.assign("/login");
				return;
			}
			if (x.status !== 200 || !j) {
				status((j && j.error) ? j.error : "the server answered " + x.status, true);
				then(null);
				return;
			}
			then(j);
		};
		x.onerror = function () {
			status("the server cannot be reached", true);
			then(null);
		};
		x.send();
	}

	function enc(s) {
		return encodeURIComponent(s);
	}

	/* -- The log: / -- */

	function filterForm() {
		var fs = document.querySelectorAll("form"), i;

		for (i = 0; i < fs.length; i++) {
			if (fs[i].elements.namedItem("q") || fs[i].elements.namedItem("op"))
				return fs[i];
		}
		return null;
	}

	/* A form when the server gave none (it always does; kept for safety). */
	function makeForm(main) {
		var f = el("form", {method: "get", action: "/", id: "filters", class: "filters"});

		function field(name, label, type) {
			f.appendChild(el("label", {}, label + " ",
				el("input", {name: name, type: type || "text"})));
		}
		field("q", "Search");
		field("op", "Op");
		f.appendChild(el("label", {}, el("input", {name: "failed", type: "checkbox", value: "1"}),
			" failed only"));
		field("tenant", "Tenant");
		field("session", "Session");
		field("agent", "Agent");
		field("run", "Run");
		field("since", "Since");
		field("until", "Until");
		f.appendChild(el("button", {type: "submit"}, "Apply"));
		main.appendChild(f);
		return f;
	}

	/* The filters the form says, as a query string (empty ones left out). */
	function filtersOf(form) {
		var p = new URLSearchParams(), i, n, e;

		for (i = 0; i < FILTERS.length; i++) {
			n = FILTERS[i];
			e = form.elements.namedItem(n);
			if (!e)
				continue;
			if (e.type === "checkbox") {
				if (e.checked)
					p.set(n, e.value && e.value !== "on" ? e.value : "1");
			} else if (e.value && e.value.trim()) {
				p.set(n, e.value.trim());
			}
		}
		return p;
	}

	function opsHead() {
		return el("thead", {}, el("tr", {},
			el("th", {scope: "col", text: "Time"}),
			el("th", {scope: "col", text: "Tenant"}),
			el("th", {scope: "col", text: "Session"}),
			el("th", {scope: "col", text: "Agent"}),
			el("th", {scope: "col", text: "Run"}),
			el("th", {scope: "col", text: "Op"}),
			el("th", {scope: "col", text: "Target"}),
			el("th", {scope: "col", text: "Result"}),
			el("th", {scope: "col", class: "c-ms", text: "Took"})));
	}

	function sessionLink(key) {
		if (!key)
			return textCell(null);
		var td = el("td", {class: "c-session"});
		var a = el("a", {href: "/session/" + enc(key), title: key});
		a.appendChild(escText(key));
		td.appendChild(a);
		return td;
	}

	function resultCell(r) {
		var td = el("td", {class: "c-ok"});

		if (!r.ok)
			td.appendChild(el("span", {class: "mark", "aria-label": "failed", text: "\u2717 "}));
		td.appendChild(escText(outcome(r)));
		if (r.detail)
			td.title = r.detail;
		return td;
	}

	function opRow(r) {
		var tr = el("tr", {"data-seq": String(r.seq), "data-session": r.session || "",
			class: r.ok ? "op" : "op failed"});

		tr.appendChild(el("td", {class: "c-time"}, timeEl(r.created_at)));
		tr.appendChild(textCell(r.tenant, "c-tenant"));
		tr.appendChild(sessionLink(r.session));
		tr.appendChild(textCell(r.agent, "c-agent"));
		tr.appendChild(textCell(r.run, "c-run"));
		tr.appendChild(el("td", {class: "c-op", text: r.op}));
		tr.appendChild(textCell(r.target, "c-target"));
		tr.appendChild(resultCell(r));
		tr.appendChild(el("td", {class: "c-ms", text: duration(r.duration_ms)}));
		return tr;
	}

	function logPage(main) {
		var form = filterForm() || makeForm(main);
		var old = document.getElementById("log") || main.querySelector("table");
		var table = el("table", {id: "log", class: "log"});
		var tbody = el("tbody");
		var more = el("button", {type: "button", id: "more", disabled: true}, "Next page");
		var pager = document.getElementById("pager");
		var shown = document.getElementById("count");
		var next = null, seen = {}, gen = 0, timer = null, n = 0;

		table.appendChild(el("caption", {class: "vh", text: "Operations, newest first"}));
		table.appendChild(opsHead());
		table.appendChild(tbody);
		if (old) {
			old.parentNode.insertBefore(table, old);
			old.parentNode.removeChild(old);
		} else {
			main.appendChild(table);
		}
		/* The server's "next page" link: the button does its work now,
		 * below the rows already shown instead of on a page of its own. */
		if (pager) {
			clear(pager);
		} else {
			pager = el("nav", {id: "pager"});
			table.parentNode.insertBefore(pager, table.nextSibling);
		}
		pager.setAttribute("aria-label", "pages");
		pager.className = "pager";
		pager.appendChild(more);
		if (!shown) {
			shown = el("p", {id: "count"});
			table.parentNode.insertBefore(shown, table);
		}
		shown.className = "count";
		table.parentNode.insertBefore(el("p", {id: "status", class: "status",
			role: "status", "aria-live": "polite"}), table);

		function count() {
			shown.textContent = n + (n === 1 ? " operation" : " operations") +
				(next ? " shown, more to come" : n ? ", all shown" : "");
		}

		/* load(FIRST): the first page for the filters, or the next one. */
		function load(first) {
			var p = filtersOf(form), g;

			if (first) {
				gen++;
				next = null;
			}
			g = gen;
			p.set("limit", String(PAGE));
			if (!first && next)
				p.set("after", next);
			more.disabled = true;
			status("loading\u2026");
			get("/api/ops?" + p.toString(), function (j) {
				if (g !== gen)
					return;	/* the filters changed meanwhile */
				if (!j) {
					/* rows of other filters than the form's
					 * would mislead: none rather */
					if (first) {
						clear(tbody);
						seen = {};
						n = 0;
						count();
					}
					more.disabled = !next;
					return;
				}
				if (first) {
					clear(tbody);
					seen = {};
					n = 0;
				}
				for (var k = 0; k < j.rows.length; k++) {
					if (seen[j.rows[k].seq])
						continue;
					seen[j.rows[k].seq] = true;
					tbody.appendChild(opRow(j.rows[k]));
					n++;
				}
				next = j.next || null;
				more.disabled = !next;
				more.textContent = next ? "Next page" : "No more rows";
				status(n ? "" : "No operation matches these filters.");
				count();
			});
		}

		more.addEventListener("click", function () {
			load(false);
		});

		function apply() {
			var p = filtersOf(form);

			window.history.replaceState(null, "", p.toString() ? "/?" + p.toString() : "/");
			load(true);
			chart.update(p);
			exportLinks(p);
			live.restart(p);
		}

		form.addEventListener("submit", function (ev) {
			ev.preventDefault();
			if (timer)
				clearTimeout(timer);
			apply();
		});
		/* As you type: once typing pauses, not at every key. */
		form.addEventListener("input", function () {
			if (timer)
				clearTimeout(timer);
			timer = setTimeout(apply, 300);
		});
		form.addEventListener("change", function (ev) {
			if (ev.target.type === "checkbox" || ev.target.tagName === "SELECT") {
				if (timer)
					clearTimeout(timer);
				apply();
			}
		});

		var chart = chartPart(main, pager);
		var live = livePart(main, form);
		var p0 = filtersOf(form);
		exportLinks(p0);
		chart.update(p0);
		live.restart(p0);
		load(true);
	}

	/* The export links: the format each link has, the filters of the form. */
	function exportLinks(p) {
		var as = document.querySelectorAll("a[href*='/api/export']"), i, u, f;

		if (!as.length) {
			var main = document.querySelector("main") || document.body;
			var nav = el("p", {class: "export"}, "Export: ");
			["csv", "jsonl"].forEach(function (fm, k) {
				if (k)
					nav.appendChild(document.createTextNode(" \u00b7 "));
				nav.appendChild(el("a", {href: "/api/export?format=" + fm, download: ""},
					fm.toUpperCase()));
			});
			main.appendChild(nav);
			as = nav.querySelectorAll("a");
		}
		for (i = 0; i < as.length; i++) {
			u = new URL(as[i].getAttribute("href"), window.location.href);
			f = u.searchParams.get("format") || "csv";
			var q = new URLSearchParams(p.toString());
			q.set("format", f);
			as[i].setAttribute("href", "/api/export?" + q.toString());
		}
	}

	/* The chart: the server's SVG, for the filters, by tenant or agent. */
	function chartPart(main, after) {
		var img = document.querySelector("img[src^='/chart.svg']");
		var by = "tenant", last = null;

		if (!img) {
			img = el("img", {src: "/chart.svg", alt: "Operations per hour, ok and failed"});
			var fig = el("figure", {class: "chart"}, img);
			after.parentNode.insertBefore(fig, after.nextSibling);
		}
		try {
			by = new URL(img.getAttribute("src"), window.location.href)
				.searchParams.get("by") || "tenant";
		} catch (e) { /* tenant */ }
		/* The switch: the form's own (select#f-by), else one made here. */
		var sel = document.getElementById("f-by");
		if (sel) {
			by = sel.value || by;
			sel.addEventListener("change", function () {
				by = sel.value;
				update(last);
			});
		} else {
			var sw = el("fieldset", {class: "by"}, el("legend", {text: "Chart by"}));
			["tenant", "agent"].forEach(function (b) {
				var r = el("input", {type: "radio", name: "chart-by", value: b,
					checked: b === by});
				r.addEventListener("change", function () {
					by = b;
					update(last);
				});
				sw.appendChild(el("label", {}, r, " " + b));
			});
			img.parentNode.insertBefore(sw, img);
		}
		img.id = "chart";

		function update(p) {
			var q = new URLSearchParams(p ? p.toString() : "");

			last = p;
			q.delete("after");
			q.set("by", by);
			var src = "/chart.svg?" + q.toString();
			if (img.getAttribute("src") !== src)
				img.setAttribute("src", src);
		}
		return {update: update};
	}

	/* The live ticker: /api/live's rows, newest on top, the last 200. */
	function livePart(main, form) {
		var box = document.getElementById("ticker");
		var pause = el("button", {type: "button", id: "live-pause", class: "small",
			"aria-pressed": "false"}, "Pause");
		var state = el("span", {id: "live-state", class: "count", text: "connecting"});
		var list = el("ol", {id: "live", class: "live", reversed: true});
		var es = null, paused = false, held = [], got = 0;

		if (box) {
			clear(box);
			box.hidden = false;
		} else {
			box = el("section", {id: "ticker"});
			form.parentNode.insertBefore(box, form.nextSibling);
		}
		box.className = "ticker";
		box.setAttribute("role", "region");
		box.setAttribute("aria-labelledby", "ticker-h");
		box.appendChild(el("h2", {id: "ticker-h"}, "Live ", pause, " ", state));
		box.appendChild(list);

		function say() {
			state.textContent = (es && es.readyState === 1 ? "connected" :
				es && es.readyState === 0 ? "connecting" : "closed") +
				", " + got + (got === 1 ? " new row" : " new rows") +
				(paused ? " (paused, " + held.length + " waiting)" : "");
		}

		function item(r) {
			var li = el("li", {"data-seq": String(r.seq), class: r.ok ? "ok" : "failed"});

			li.appendChild(timeEl(r.created_at));
			li.appendChild(document.createTextNode(" "));
			li.appendChild(el("span", {class: "tenant"}, escText(r.tenant)));
			li.appendChild(document.createTextNode(" "));
			li.appendChild(el("span", {class: "op", text: r.op}));
			li.appendChild(document.createTextNode(" "));
			var t = el("span", {class: "target"}, escText(r.target));
			if (r.session) {
				var a = el("a", {href: "/session/" + enc(r.session)}, t);
				li.appendChild(a);
			} else {
				li.appendChild(t);
			}
			li.appendChild(document.createTextNode(" "));
			var res = el("span", {class: "result"});
			if (!r.ok)
				res.appendChild(el("span", {class: "mark", "aria-label": "failed", text: "\u2717 "}));
			res.appendChild(escText(outcome(r)));
			li.appendChild(res);
			return li;
		}

		function show(r) {
			list.insertBefore(item(r), list.firstChild);
			while (list.children.length > LIVE_MAX)
				list.removeChild(list.lastChild);
		}

		pause.addEventListener("click", function () {
			paused = !paused;
			pause.textContent = paused ? "Resume" : "Pause";
			pause.setAttribute("aria-pressed", paused ? "true" : "false");
			if (!paused) {
				held.forEach(show);
				held = [];
			}
			say();
		});

		function restart(p) {
			if (es)
				es.close();
			if (!window.EventSource) {
				state.textContent = "not available in this browser";
				return;
			}
			es = new EventSource("/api/live?" + p.toString());
			es.addEventListener("open", say);
			es.addEventListener("error", say);
			es.addEventListener("op", function (ev) {
				var r;

				try {
					r = JSON.parse(ev.data);
				} catch (e) {
					return;
				}
				got++;
				if (paused) {
					held.push(r);
					if (held.length > LIVE_MAX)
						held.shift();
				} else {
					show(r);
				}
				say();
			});
			say();
		}
		return {restart: restart};
	}

	/* -- A session: /session/ID -- */

	function replaceOrAdd(main, selector, node) {
		var old = selector ? main.querySelector(selector) : null;

		if (old) {
			old.parentNode.replaceChild(node, old);
		} else {
			main.appendChild(node);
		}
	}

	function sessionPage(main, id) {
		var base = "/api/sessions/" + enc(id);
		var table = el("table", {id: "timeline", class: "timeline"});
		var tbody = el("tbody");
		var sum = el("dl", {id: "summary", class: "summary"});
		var more = el("button", {type: "button", id: "tl-more", hidden: true}, "More events");
		var first = null, prev = null, n = 0, nf = 0, next = null, pages = 0;

		table.appendChild(el("caption", {class: "vh", text: "The session's operations, in order"}));
		table.appendChild(el("thead", {}, el("tr", {},
			el("th", {scope: "col", class: "c-seq", text: "Seq"}),
			el("th", {scope: "col", text: "Time"}),
			el("th", {scope: "col", class: "c-elapsed", title: "since the first event",
				text: "Elapsed"}),
			el("th", {scope: "col", text: "Op"}),
			el("th", {scope: "col", text: "Target"}),
			el("th", {scope: "col", text: "Result"}),
			el("th", {scope: "col", text: "Detail"}),
			el("th", {scope: "col", class: "c-ms", text: "Took"}),
			el("th", {scope: "col", class: "c-gap", title: "the pause before it",
				text: "Gap"}))));
		table.appendChild(tbody);
		var old = document.getElementById("timeline") ||
			main.querySelector("table.timeline") || main.querySelector("table");
		if (old) {
			old.parentNode.replaceChild(table, old);
		} else {
			main.appendChild(table);
		}
		table.parentNode.insertBefore(el("p", {id: "status", class: "status",
			role: "status", "aria-live": "polite"}), table);
		table.parentNode.insertBefore(more, table.nextSibling);

		function dt(k, v) {
			sum.appendChild(el("dt", {text: k}));
			var d = el("dd");
			d.appendChild(v);
			sum.appendChild(d);
		}

		function summary(j) {
			clear(sum);
			dt("Session", escText(j.session));
			if (j.wire_id)
				dt("Wire id", escText(j.wire_id));
			dt("Tenant", escText(j.tenant));
			dt("Runtime", escText(j.runtime));
			dt("First", j.first_at ? timeEl(j.first_at) : escText("-"));
			dt("Last", j.last_at ? timeEl(j.last_at) : escText("-"));
			if (j.first_at && j.last_at)
				dt("Span", document.createTextNode(duration(
					new Date(j.last_at) - new Date(j.first_at))));
			dt("Events", el("span", {id: "tl-count", text: String(n)}));
			dt("Failed", el("span", {id: "tl-failed", class: nf ? "bad" : "",
				text: String(nf)}));
			if (!document.getElementById("chain"))
				dt("Chain", el("span", {id: "chain-state", text: "checking\u2026"}));
		}

		function event(e) {
			var t = new Date(e.at).getTime();
			var tr = el("tr", {"data-seq": String(e.seq), class: e.ok ? "ev" : "ev failed"});

			if (first === null)
				first = t;
			tr.appendChild(el("td", {class: "c-seq", text: String(e.seq)}));
			tr.appendChild(el("td", {class: "c-time"}, timeEl(e.at)));
			tr.appendChild(el("td", {class: "c-elapsed", text: "+" + duration(t - first)}));
			tr.appendChild(el("td", {class: "c-op", text: e.op}));
			tr.appendChild(textCell(e.target, "c-target"));
			var r = el("td", {class: "c-ok"});
			if (e.ok) {
				r.appendChild(document.createTextNode(
					e.exit_status !== null && e.exit_status !== undefined ?
					"exit " + e.exit_status : "ok"));
			} else {
				r.appendChild(el("span", {class: "mark", text: "\u2717 failed"}));
				if (e.exit_status !== null && e.exit_status !== undefined)
					r.appendChild(document.createTextNode(" (exit " + e.exit_status + ")"));
			}
			tr.appendChild(r);
			tr.appendChild(textCell(e.detail, "c-detail"));
			tr.appendChild(el("td", {class: "c-ms", text: duration(e.duration_ms)}));
			/* The pause before this step: where an agent waited. */
			tr.appendChild(el("td", {class: "c-gap", text: prev === null ? "" : duration(t - prev)}));
			prev = t;
			return tr;
		}

		function load() {
			var u = base + "/timeline?limit=" + TL_PAGE + (next !== null ? "&after=" + enc(next) : "");

			more.hidden = true;
			get(u, function (j) {
				if (!j)
					return;
				if (!pages)
					summary(j);
				pages++;
				for (var i = 0; i < j.events.length; i++) {
					tbody.appendChild(event(j.events[i]));
					n++;
					if (!j.events[i].ok)
						nf++;
				}
				document.getElementById("tl-count").textContent = String(n);
				var f = document.getElementById("tl-failed");
				f.textContent = String(nf);
				f.className = nf ? "bad" : "";
				next = j.next === null || j.next === undefined ? null : j.next;
				if (next !== null && pages < TL_MAX_PAGES) {
					load();
				} else if (next !== null) {
					more.hidden = false;
				} else {
					status(n ? "" : "This session has no operation.");
					chain();
				}
			});
		}
		more.addEventListener("click", function () {
			pages = 1;
			load();
		});

		var sumOld = main.querySelector("#summary dl") || main.querySelector("dl");
		if (sumOld) {
			sumOld.parentNode.replaceChild(sum, sumOld);
		} else {
			table.parentNode.insertBefore(sum, table.previousSibling);
		}

		/* The server's page checked the chain already (div#chain): its
		 * state is said in the summary too, not asked for again. */
		function chain() {
			var sv = document.getElementById("chain"), s = document.getElementById("chain-state");

			if (sv) {
				var st = sv.getAttribute("data-state") || "";
				var p = sv.querySelector(".state");
				sv.className = "chain " + st;
				if (p && (st === "verified" || st === "broken"))
					p.insertBefore(el("span", {class: "mark",
						text: st === "verified" ? "\u2713 " : "\u2717 "}), p.firstChild);
				return;
			}
			get(base + "/chain", function (j) {
				if (!j || !s)
					return;
				clear(s);
				s.className = "chain " + j.state;
				if (j.state === "verified") {
					s.appendChild(document.createTextNode("\u2713 verified, " + j.rows + " rows"));
				} else if (j.state === "broken") {
					s.appendChild(document.createTextNode("\u2717 broken" +
						(j.at_seq !== null && j.at_seq !== undefined ? " at row " + j.at_seq : "") +
						(j.why ? ": " : "")));
					if (j.why)
						s.appendChild(escText(j.why));
				} else {
					s.appendChild(document.createTextNode(j.rows + " rows, too long to check here" +
						(j.why ? ": " : "")));
					if (j.why)
						s.appendChild(escText(j.why));
				}
			});
		}

		/* All the events are loaded in place: the server's link to the
		 * later ones is not needed. */
		var later = document.getElementById("timeline-next");
		if (later)
			(later.closest("p") || later).hidden = true;
		files(main, base);
		load();
	}

	function files(main, base) {
		get(base + "/files", function (j) {
			if (!j)
				return;
			var t = el("table", {id: "files", class: "files"});
			t.appendChild(el("caption", {text: "Files touched" +
				(j.truncated ? " (the 1,000 most recent)" : "")}));
			t.appendChild(el("thead", {}, el("tr", {},
				el("th", {scope: "col", text: "Path"}),
				el("th", {scope: "col", class: "c-ms", text: "Read"}),
				el("th", {scope: "col", class: "c-ms", text: "Written"}),
				el("th", {scope: "col", class: "c-ms", text: "Removed"}),
				el("th", {scope: "col", text: "Last"}))));
			var tb = el("tbody");
			j.files.forEach(function (f) {
				tb.appendChild(el("tr", {},
					textCell(f.path, "c-target"),
					el("td", {class: "c-ms", text: f.read ? String(f.read) : ""}),
					el("td", {class: "c-ms", text: f.written ? String(f.written) : ""}),
					el("td", {class: "c-ms", text: f.removed ? String(f.removed) : ""}),
					el("td", {class: "c-time"}, timeEl(f.last_at))));
			});
			if (!j.files.length)
				tb.appendChild(el("tr", {}, el("td", {colspan: "5", class: "none",
					text: "No file read, written or removed."})));
			t.appendChild(tb);
			replaceOrAdd(main, "#files", t);
			var tr = document.getElementById("files-truncated");
			if (tr)
				tr.hidden = true;
		});
	}

	/* -- Start -- */

	function start() {
		var main = document.querySelector("main") || document.body;
		var path = window.location.pathname;
		/* What the server says the page is (body[data-page]): an error
		 * page at /session/X is no session to enhance. */
		var page = document.body.getAttribute("data-page") ||
			(path === "/" ? "log" : path.indexOf("/session/") === 0 ? "session" : "");

		document.documentElement.classList.add("js");
		if (page === "log")
			logPage(main);
		else if (page === "session" && path.indexOf("/session/") === 0 && path.length > 9)
			sessionPage(main, decodeURIComponent(path.slice(9)));
		if (page === "log" || page === "session")
			zoneSwitch(main);
		retime();
	}

	if (document.readyState === "loading")
		document.addEventListener("DOMContentLoaded", start);
	else
		start();
})();
