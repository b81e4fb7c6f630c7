/*
 * auditweb-html.c - the auditor's page's HTML, drawn by the server so it
 * reads with JavaScript off, and the chart as plain SVG.  app.js (share/
 * audit-web/) enhances it and hooks on these ids and classes, which stay
 * stable:
 *
 *   every page   body[data-page="log"|"session"|"login"|"error"],
 *                header#top (span#who: the auditor's tenant or "*",
 *                form#logout), main#main
 *   the log (/)  form#filters (method GET, action /): input#f-q[name=q]
 *                (search), select#f-op[name=op], input#f-failed
 *                [name=failed][value=1] (checkbox), input#f-tenant,
 *                #f-agent, #f-run, #f-session, #f-since, #f-until (their
 *                names without "f-"), select#f-by[name=by]
 *                (tenant|agent), button#f-apply;
 *                div#ticker[hidden] (the live ticker: the page's JS
 *                shows it; data-live="/api/live?FILTERS");
 *                img#chart[src="/chart.svg?FILTERS"];
 *                p#count; table#log[data-api="/api/ops?FILTERS"] >
 *                tbody > tr.op (tr.op.failed when not ok)
 *                [data-seq][data-session], cells td.c-time > time
 *                [datetime=RFC 3339], td.c-tenant, td.c-session > a,
 *                td.c-agent, td.c-run, td.c-op, td.c-target, td.c-ok,
 *                td.c-ms, td.c-detail; nav#pager > a#next
 *                [data-after=CURSOR] (absent on the last page);
 *                p#exports > a#export-csv, a#export-jsonl
 *   a session    section#summary (dl: dd#s-key, #s-wire, #s-tenant,
 *                #s-runtime, #s-first > time, #s-last > time, #s-rows),
 *                table#timeline[data-api] > tbody > tr.ev (tr.ev.failed)
 *                [data-seq]: td.c-seq, td.c-time > time, td.c-op,
 *                td.c-target, td.c-ok, td.c-ms, td.c-detail; a#timeline-
 *                next; ul#files > li (span.path, span.read, .written,
 *                .removed), p#files-truncated; div#chain[data-state=
 *                verified|broken|too_long] (p#chain-why)
 *   escapes      span.esc: a control or bidi character shown as \uXXXX
 *
 * No inline script or style anywhere (the CSP forbids both): the only
 * script is /static/app.js, the only style /static/app.css.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "basic/alloc.h"
#include "basic/text.h"
#include "serve/auditweb-int.h"

/* ---- escaping ---- */

static bool shown_escaped(uint32_t cp)
{
	return text_is_control(cp) || text_is_bidi(cp) || cp == 0x200E ||
	       cp == 0x200F || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF;
}

/* s as HTML text (attr false) or an attribute's value (attr true: an
 * escape is its text, without the span). */
static void html_add(struct strbuf *out, const char *s, bool attr)
{
	size_t len = s ? strlen(s) : 0;

	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = utf8_decode(s + i, len - i, &cp);

		if (!n) {
			strbuf_addstr(out, "&#xfffd;");
			i++;
			continue;
		}
		if (shown_escaped(cp)) {
			if (!attr)
				strbuf_addstr(out, "<span class=\"esc\">");
			strbuf_addf(out, "\\u%04x", (unsigned)cp);
			if (!attr)
				strbuf_addstr(out, "</span>");
		} else if (cp == '&') {
			strbuf_addstr(out, "&amp;");
		} else if (cp == '<') {
			strbuf_addstr(out, "&lt;");
		} else if (cp == '>') {
			strbuf_addstr(out, "&gt;");
		} else if (cp == '"') {
			strbuf_addstr(out, "&quot;");
		} else if (cp == '\'') {
			strbuf_addstr(out, "&#39;");
		} else {
			strbuf_add(out, s + i, n);
		}
		i += n;
	}
}

void aw_html_text(struct strbuf *out, const char *s)
{
	html_add(out, s, false);
}

static void attr(struct strbuf *out, const char *s)
{
	html_add(out, s, true);
}

void aw_url_value(struct strbuf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-_.~", *p))
			strbuf_addch(out, *p);
		else
			strbuf_addf(out, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
}

static void q_add(struct strbuf *out, const char *name, const char *v)
{
	if (!v || !*v)
		return;
	strbuf_addstr(out, out->len ? "&" : "");
	strbuf_addstr(out, name);
	strbuf_addch(out, '=');
	aw_url_value(out, v);
}

void aw_filter_query(struct strbuf *out, const struct aw_query *q,
		     bool with_tenant)
{
	const svc_audit_filter *f = &q->f;

	if (with_tenant)
		q_add(out, "tenant", q->tenant_asked);
	q_add(out, "session", f->session);
	q_add(out, "agent", f->agent);
	q_add(out, "run", f->run);
	q_add(out, "op", q->op_text);
	q_add(out, "failed", f->failed ? "1" : NULL);
	q_add(out, "q", f->search);
	q_add(out, "since", q->since);
	q_add(out, "until", q->until);
	if (q->by_agent)
		q_add(out, "by", "agent");
}

/* ---- the frame ---- */

static void head(struct strbuf *out, const char *page, const char *title,
		 const struct aw_who *who)
{
	strbuf_addstr(out, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
			   "<meta charset=\"utf-8\">"
			   "<meta name=\"viewport\" content=\"width=device-"
			   "width, initial-scale=1\">"
			   "<meta name=\"referrer\" content=\"no-referrer\">"
			   "<title>");
	aw_html_text(out, title);
	strbuf_addstr(out, " - sbxcat audit</title>"
			   "<link rel=\"stylesheet\" href=\"/static/app.css\">"
			   "<script src=\"/static/app.js\" defer></script>"
			   "</head>\n");
	strbuf_addf(out,
		    "<body data-page=\"%s\">\n<header id=\"top\">"
		    "<a class=\"home\" href=\"/\">sbxcat audit</a>",
		    page);
	if (who) {
		strbuf_addstr(out, " <span id=\"who\">tenant ");
		aw_html_text(out, who->tenant ? who->tenant : "*");
		strbuf_addstr(out,
			      "</span> <form id=\"logout\" method=\"post\" "
			      "action=\"/logout\"><button type=\"submit\">"
			      "Log out</button></form>");
	}
	strbuf_addstr(out, "</header>\n<main id=\"main\">\n");
}

static void foot(struct strbuf *out)
{
	strbuf_addstr(out, "</main>\n</body></html>\n");
}

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* An integer member as text ("" for null). */
static void jnum(struct strbuf *out, json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (json_is_integer(v))
		strbuf_addf(out, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		strbuf_addf(out, "%.0f", json_real_value(v));
}

static void time_cell(struct strbuf *out, const char *t)
{
	strbuf_addstr(out, "<time datetime=\"");
	attr(out, t ? t : "");
	strbuf_addstr(out, "\">");
	if (t && strlen(t) >= 19) {
		char d[32];

		/* "2026-12-01 10:00:00Z" until app.js puts it in the
		 * viewer's zone. */
		snprintf(d, sizeof(d), "%.10s %.8sZ", t, t + 11);
		aw_html_text(out, d);
	} else {
		aw_html_text(out, t ? t : "");
	}
	strbuf_addstr(out, "</time>");
}

static void input(struct strbuf *out, const char *name, const char *label,
		  const char *type, const char *value, const char *hint)
{
	strbuf_addf(out,
		    "<label for=\"f-%s\">%s</label><input id=\"f-%s\" "
		    "name=\"%s\" type=\"%s\"",
		    name, label, name, name, type);
	if (hint)
		strbuf_addf(out, " placeholder=\"%s\"", hint);
	strbuf_addstr(out, " value=\"");
	attr(out, value ? value : "");
	strbuf_addstr(out, "\">\n");
}

/* ---- the log ---- */

static const char *const ops[] = {
    "write",	 "edit",     "read",	"read_bytes", "ls_info",
    "glob_info", "grep_raw", "execute", "open",	      "close",
    "reap",	 "stat",     "remove",
};

static void filters(struct strbuf *out, const struct aw_who *who,
		    const struct aw_query *q)
{
	const svc_audit_filter *f = &q->f;

	strbuf_addstr(out, "<form id=\"filters\" method=\"get\" action=\"/\" "
			   "role=\"search\">\n");
	input(out, "q", "Search targets", "search", f->search, "path or text");
	strbuf_addstr(out, "<label for=\"f-op\">Operation</label><select "
			   "id=\"f-op\" name=\"op\"><option value=\"\">any"
			   "</option>");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		strbuf_addf(out, "<option value=\"%s\"%s>%s</option>", ops[i],
			    q->op_text && !strcmp(q->op_text, ops[i])
				? " selected"
				: "",
			    ops[i]);
	strbuf_addstr(out, "</select>\n<label for=\"f-failed\"><input "
			   "id=\"f-failed\" name=\"failed\" type=\"checkbox\" "
			   "value=\"1\"");
	if (f->failed)
		strbuf_addstr(out, " checked");
	strbuf_addstr(out, "> Failed only</label>\n");
	input(out, "tenant", "Tenant", "text",
	      who->tenant ? who->tenant : q->tenant_asked, NULL);
	input(out, "agent", "Agent", "text", f->agent, NULL);
	input(out, "run", "Run", "text", f->run, NULL);
	input(out, "session", "Session", "text", f->session, NULL);
	input(out, "since", "Since", "text", q->since, "2h, 2026-12-01");
	input(out, "until", "Until", "text", q->until, "now");
	strbuf_addf(out,
		    "<label for=\"f-by\">Chart by</label><select "
		    "id=\"f-by\" name=\"by\"><option value=\"tenant\""
		    "%s>tenant</option><option value=\"agent\"%s>agent"
		    "</option></select>\n",
		    q->by_agent ? "" : " selected",
		    q->by_agent ? " selected" : "");
	strbuf_addstr(out, "<button id=\"f-apply\" type=\"submit\">Apply"
			   "</button> <a id=\"f-clear\" href=\"/\">Clear</a>"
			   "\n</form>\n");
}

static void cell(struct strbuf *out, const char *cls, const char *text)
{
	strbuf_addf(out, "<td class=\"%s\">", cls);
	aw_html_text(out, text ? text : "");
	strbuf_addstr(out, "</td>");
}

static void log_row(struct strbuf *out, json_t *r)
{
	bool ok = json_is_true(json_object_get(r, "ok"));
	const char *sess = jstr(r, "session");

	strbuf_addf(out, "<tr class=\"op%s\" data-seq=\"", ok ? "" : " failed");
	jnum(out, r, "seq");
	strbuf_addstr(out, "\" data-session=\"");
	attr(out, sess ? sess : "");
	strbuf_addstr(out, "\"><td class=\"c-time\">");
	time_cell(out, jstr(r, "created_at"));
	strbuf_addstr(out, "</td>");
	cell(out, "c-tenant", jstr(r, "tenant"));
	strbuf_addstr(out, "<td class=\"c-session\">");
	if (sess) {
		strbuf_addstr(out, "<a href=\"/session/");
		{
			struct strbuf u = STRBUF_INIT;

			aw_url_value(&u, sess);
			attr(out, u.buf ? u.buf : "");
			strbuf_release(&u);
		}
		strbuf_addstr(out, "\">");
		aw_html_text(out, sess);
		strbuf_addstr(out, "</a>");
	}
	strbuf_addstr(out, "</td>");
	cell(out, "c-agent", jstr(r, "agent"));
	cell(out, "c-run", jstr(r, "run"));
	cell(out, "c-op", jstr(r, "op"));
	cell(out, "c-target", jstr(r, "target"));
	cell(out, "c-ok", ok ? "ok" : "FAILED");
	strbuf_addstr(out, "<td class=\"c-ms\">");
	jnum(out, r, "duration_ms");
	strbuf_addstr(out, "</td>");
	cell(out, "c-detail", jstr(r, "detail"));
	strbuf_addstr(out, "</tr>\n");
}

void aw_page_log(struct strbuf *out, const struct aw_who *who,
		 const struct aw_query *q, json_t *rows, const char *next)
{
	struct strbuf qs = STRBUF_INIT, u = STRBUF_INIT;
	const char *qss;
	size_t i;
	json_t *r;

	aw_filter_query(&qs, q, true);
	qss = qs.buf ? qs.buf : "";
	head(out, "log", "operations", who);
	filters(out, who, q);
	strbuf_addstr(out, "<div id=\"ticker\" hidden data-live=\"/api/live");
	if (qs.len) {
		strbuf_addch(out, '?');
		attr(out, qss);
	}
	strbuf_addstr(out, "\"></div>\n<img id=\"chart\" alt=\"operations per "
			   "hour, ok and failed\" width=\"900\" height=\"240\" "
			   "src=\"/chart.svg");
	if (qs.len) {
		strbuf_addch(out, '?');
		attr(out, qss);
	}
	strbuf_addf(out, "\">\n<p id=\"count\">%zu %s%s</p>\n",
		    json_array_size(rows),
		    json_array_size(rows) == 1 ? "operation" : "operations",
		    next ? " on this page" : "");
	strbuf_addstr(out, "<table id=\"log\" data-api=\"/api/ops");
	if (qs.len) {
		strbuf_addch(out, '?');
		attr(out, qss);
	}
	strbuf_addstr(out,
		      "\"><thead><tr><th>Time</th><th>Tenant</th>"
		      "<th>Session</th><th>Agent</th><th>Run</th>"
		      "<th>Op</th><th>Target</th><th>Result</th>"
		      "<th>ms</th><th>Detail</th></tr></thead>\n<tbody>\n");
	json_array_foreach(rows, i, r) log_row(out, r);
	strbuf_addstr(out, "</tbody></table>\n<nav id=\"pager\">");
	if (next) {
		strbuf_addstr(&u, "/?");
		if (qs.len)
			strbuf_addf(&u, "%s&", qss);
		strbuf_addstr(&u, "after=");
		aw_url_value(&u, next);
		strbuf_addstr(out, "<a id=\"next\" rel=\"next\" href=\"");
		attr(out, u.buf);
		strbuf_addstr(out, "\" data-after=\"");
		attr(out, next);
		strbuf_addstr(out, "\">Next page</a>");
	}
	strbuf_addstr(out,
		      "</nav>\n<p id=\"exports\">Export: "
		      "<a id=\"export-csv\" href=\"/api/export?format=csv");
	if (qs.len) {
		strbuf_addstr(out, "&amp;");
		attr(out, qss);
	}
	strbuf_addstr(out, "\">CSV</a> <a id=\"export-jsonl\" "
			   "href=\"/api/export?format=jsonl");
	if (qs.len) {
		strbuf_addstr(out, "&amp;");
		attr(out, qss);
	}
	strbuf_addstr(out, "\">JSON lines</a></p>\n");
	foot(out);
	strbuf_release(&qs);
	strbuf_release(&u);
}

/* ---- a session ---- */

static void dd(struct strbuf *out, const char *id, const char *label,
	       const char *v)
{
	strbuf_addf(out, "<dt>%s</dt><dd id=\"%s\">", label, id);
	aw_html_text(out, v ? v : "-");
	strbuf_addstr(out, "</dd>");
}

void aw_page_session(struct strbuf *out, const struct aw_who *who, json_t *info,
		     json_t *events, long long next, const char *id,
		     json_t *files, bool truncated, json_t *chain)
{
	const char *key = jstr(info, "session"), *state = jstr(chain, "state");
	struct strbuf u = STRBUF_INIT;
	size_t i;
	json_t *e;

	head(out, "session", "session", who);
	aw_url_value(&u, id);
	strbuf_addstr(out, "<h1>Session <span class=\"key\">");
	aw_html_text(out, key);
	strbuf_addstr(out, "</span></h1>\n<section id=\"summary\"><dl>");
	dd(out, "s-key", "Key", key);
	dd(out, "s-wire", "Wire id", jstr(info, "wire_id"));
	dd(out, "s-tenant", "Tenant", jstr(info, "tenant"));
	dd(out, "s-runtime", "Runtime", jstr(info, "runtime"));
	strbuf_addstr(out, "<dt>First</dt><dd id=\"s-first\">");
	time_cell(out, jstr(info, "first_at"));
	strbuf_addstr(out, "</dd><dt>Last</dt><dd id=\"s-last\">");
	time_cell(out, jstr(info, "last_at"));
	strbuf_addstr(out, "</dd><dt>Rows</dt><dd id=\"s-rows\">");
	jnum(out, info, "rows");
	strbuf_addstr(out, "</dd></dl></section>\n");

	strbuf_addf(out,
		    "<h2>Chain</h2>\n<div id=\"chain\" data-state=\"%s\">"
		    "<p class=\"state\">",
		    state && !strcmp(state, "verified")	  ? "verified"
		    : state && !strcmp(state, "too_long") ? "too_long"
							  : "broken");
	if (state && !strcmp(state, "verified")) {
		strbuf_addstr(out, "Verified: ");
		jnum(out, chain, "rows");
		strbuf_addstr(out, " rows, each hash recomputed now.");
	} else if (state && !strcmp(state, "too_long")) {
		strbuf_addstr(out, "Too long to verify here.");
	} else {
		strbuf_addstr(out, "BROKEN");
		if (json_is_integer(json_object_get(chain, "at_seq"))) {
			strbuf_addstr(out, " at row ");
			jnum(out, chain, "at_seq");
		}
		strbuf_addch(out, '.');
	}
	strbuf_addstr(out, "</p>");
	if (jstr(chain, "why")) {
		strbuf_addstr(out, "<p id=\"chain-why\">");
		aw_html_text(out, jstr(chain, "why"));
		strbuf_addstr(out, "</p>");
	}
	strbuf_addstr(out, "</div>\n");

	strbuf_addstr(out, "<h2>Timeline</h2>\n<table id=\"timeline\" "
			   "data-api=\"/api/sessions/");
	attr(out, u.buf ? u.buf : "");
	strbuf_addstr(out,
		      "/timeline\"><thead><tr><th>Seq</th><th>Time</th>"
		      "<th>Op</th><th>Target</th><th>Result</th>"
		      "<th>ms</th><th>Detail</th></tr></thead>\n<tbody>\n");
	json_array_foreach(events, i, e)
	{
		bool ok = json_is_true(json_object_get(e, "ok"));

		strbuf_addf(out, "<tr class=\"ev%s\" data-seq=\"",
			    ok ? "" : " failed");
		jnum(out, e, "seq");
		strbuf_addstr(out, "\"><td class=\"c-seq\">");
		jnum(out, e, "seq");
		strbuf_addstr(out, "</td><td class=\"c-time\">");
		time_cell(out, jstr(e, "at"));
		strbuf_addstr(out, "</td>");
		cell(out, "c-op", jstr(e, "op"));
		cell(out, "c-target", jstr(e, "target"));
		cell(out, "c-ok", ok ? "ok" : "FAILED");
		strbuf_addstr(out, "<td class=\"c-ms\">");
		jnum(out, e, "duration_ms");
		strbuf_addstr(out, "</td>");
		cell(out, "c-detail", jstr(e, "detail"));
		strbuf_addstr(out, "</tr>\n");
	}
	strbuf_addstr(out, "</tbody></table>\n");
	if (next >= 0) {
		strbuf_addstr(out, "<p><a id=\"timeline-next\" rel=\"next\" "
				   "href=\"/session/");
		attr(out, u.buf);
		strbuf_addf(out, "?after=%lld\">Later events</a></p>\n", next);
	}

	strbuf_addstr(out, "<h2>Files touched</h2>\n<ul id=\"files\">\n");
	json_array_foreach(files, i, e)
	{
		strbuf_addstr(out, "<li><span class=\"path\">");
		aw_html_text(out, jstr(e, "path"));
		strbuf_addstr(out, "</span> <span class=\"read\">read ");
		jnum(out, e, "read");
		strbuf_addstr(out, "</span> <span class=\"written\">written ");
		jnum(out, e, "written");
		strbuf_addstr(out, "</span> <span class=\"removed\">removed ");
		jnum(out, e, "removed");
		strbuf_addstr(out, "</span></li>\n");
	}
	strbuf_addstr(out, "</ul>\n");
	if (truncated)
		strbuf_addstr(out, "<p id=\"files-truncated\">Only the most "
				   "recent paths are listed.</p>\n");
	strbuf_addstr(out, "<p id=\"exports\">Export this session: "
			   "<a id=\"export-csv\" href=\"/api/export?format=csv"
			   "&amp;session=");
	attr(out, u.buf);
	strbuf_addstr(out, "\">CSV</a> <a id=\"export-jsonl\" href=\"/api/"
			   "export?format=jsonl&amp;session=");
	attr(out, u.buf);
	strbuf_addstr(out, "\">JSON lines</a></p>\n");
	foot(out);
	strbuf_release(&u);
}

/* ---- login, errors ---- */

void aw_page_login(struct strbuf *out, const char *msg)
{
	head(out, "login", "log in", NULL);
	strbuf_addstr(out, "<h1>Log in</h1>\n");
	if (msg) {
		strbuf_addstr(out, "<p id=\"login-error\" class=\"error\">");
		aw_html_text(out, msg);
		strbuf_addstr(out, "</p>\n");
	}
	strbuf_addstr(out,
		      "<form id=\"login\" method=\"post\" "
		      "action=\"/login\"><label for=\"token\">Auditor "
		      "token</label><input id=\"token\" name=\"token\" "
		      "type=\"password\" autocomplete=\"current-password\" "
		      "required><button type=\"submit\">Log in</button>"
		      "</form>\n");
	foot(out);
}

void aw_page_error(struct strbuf *out, int status, const char *msg)
{
	char t[32];

	snprintf(t, sizeof(t), "error %d", status);
	head(out, "error", t, NULL);
	strbuf_addf(out, "<h1>Error %d</h1>\n<p id=\"error\" class=\"error\">",
		    status);
	aw_html_text(out, msg);
	strbuf_addstr(out, "</p>\n<p><a href=\"/\">Back to the log</a></p>\n");
	foot(out);
}

/* ---- the chart ---- */

/* Series colours (ok), and their failed shade; "other" is grey. */
static const char *const ok_fill[] = {"#4e79a7", "#59a14f", "#9c755f",
				      "#b07aa1", "#76b7b2", "#edc948",
				      "#f28e2b", "#ff9da7", "#bab0ac"};
static const char *const bad_fill[] = {"#1f3b5a", "#24501f", "#4d3a2e",
				       "#5a3552", "#2f5f5b", "#8a7420",
				       "#8a4a10", "#a04050", "#5e5753"};

#define W 900
#define H 240
#define LEFT 48
#define TOP 12
#define PLOT_H 170

static void svg_text(struct strbuf *out, const char *s)
{
	/* The SVG is XML: the HTML text escapes are XML's too, and the
	 * span of an escape is not; an attribute's form is plain text. */
	html_add(out, s, true);
}

void aw_chart_svg(struct strbuf *out, json_t *chart)
{
	json_t *hours = json_object_get(chart, "hours");
	json_t *series = json_object_get(chart, "series"), *s;
	size_t nh = json_array_size(hours), ns = json_array_size(series), i;
	long long max = 0;
	double bw;

	for (size_t h = 0; h < nh; h++) {
		long long tot = 0;

		json_array_foreach(series, i, s) tot +=
		    json_integer_value(
			json_array_get(json_object_get(s, "ok"), h)) +
		    json_integer_value(
			json_array_get(json_object_get(s, "failed"), h));
		if (tot > max)
			max = tot;
	}
	bw = nh ? (double)(W - LEFT - 8) / (double)nh : 1;
	strbuf_addf(out,
		    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
		    "xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		    "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
		    "font-family=\"sans-serif\" font-size=\"11\">\n<title>"
		    "Operations per hour, ok and failed, ",
		    W, H, W, H);
	svg_text(out, json_string_value(json_object_get(chart, "since")));
	strbuf_addstr(out, " to ");
	svg_text(out, json_string_value(json_object_get(chart, "until")));
	strbuf_addf(out,
		    "</title>\n<rect width=\"%d\" height=\"%d\" "
		    "fill=\"#ffffff\"/>\n<line x1=\"%d\" y1=\"%d\" x2=\"%d\" "
		    "y2=\"%d\" stroke=\"#888888\"/>\n<text x=\"%d\" y=\"%d\" "
		    "text-anchor=\"end\">%lld</text>\n<text x=\"%d\" y=\"%d\" "
		    "text-anchor=\"end\">0</text>\n",
		    W, H, LEFT, TOP + PLOT_H, W - 8, TOP + PLOT_H, LEFT - 4,
		    TOP + 10, max, LEFT - 4, TOP + PLOT_H);
	for (size_t h = 0; h < nh; h++) {
		double y = TOP + PLOT_H, x = LEFT + (double)h * bw;

		json_array_foreach(series, i, s)
		{
			const char *key =
			    json_string_value(json_object_get(s, "key"));
			bool other = json_is_true(json_object_get(s, "other"));

			for (int part = 0; part < 2; part++) {
				long long n = json_integer_value(json_array_get(
				    json_object_get(s, part ? "failed" : "ok"),
				    h));
				double bh;

				if (!n || !max)
					continue;
				bh = (double)n * PLOT_H / (double)max;
				y -= bh;
				strbuf_addf(
				    out,
				    "<rect x=\"%.1f\" y=\"%.1f\" "
				    "width=\"%.1f\" "
				    "height=\"%.1f\" fill=\"%s\"><title>",
				    x + 0.5, y, bw > 2 ? bw - 1 : bw, bh,
				    (part ? bad_fill
					  : ok_fill)[other ? 8 : i % 8]);
				svg_text(out, other ? "other"
					      : key ? key
						    : "(none)");
				strbuf_addstr(out, ", ");
				svg_text(out, json_string_value(
						  json_array_get(hours, h)));
				strbuf_addf(out, ": %lld %s</title></rect>\n",
					    n, part ? "failed" : "ok");
			}
		}
		/* A label every sixth hour: the hour, UTC. */
		if (h % 6 == 0) {
			const char *t =
			    json_string_value(json_array_get(hours, h));

			strbuf_addf(out,
				    "<text x=\"%.1f\" y=\"%d\" "
				    "fill=\"#444444\">",
				    x, TOP + PLOT_H + 14);
			if (t && strlen(t) >= 16) {
				char l[16];

				snprintf(l, sizeof(l), "%.5s %.5s", t + 5,
					 t + 11);
				svg_text(out, l);
			}
			strbuf_addstr(out, "</text>\n");
		}
	}
	/* The legend: each series' ok and failed swatches and its key. */
	json_array_foreach(series, i, s)
	{
		const char *key = json_string_value(json_object_get(s, "key"));
		bool other = json_is_true(json_object_get(s, "other"));
		int x = LEFT + (int)(i % 5) * 168,
		    y = H - 30 + (int)(i / 5) * 14;

		strbuf_addf(out,
			    "<rect x=\"%d\" y=\"%d\" width=\"8\" height=\"8\" "
			    "fill=\"%s\"/><rect x=\"%d\" y=\"%d\" width=\"8\" "
			    "height=\"8\" fill=\"%s\"/><text x=\"%d\" "
			    "y=\"%d\">",
			    x, y, ok_fill[other ? 8 : i % 8], x + 9, y,
			    bad_fill[other ? 8 : i % 8], x + 21, y + 8);
		{
			/* A long key is cut: the legend has its width. */
			char cut[64];
			const char *k = other ? "other" : key ? key : "(none)";
			size_t n =
			    utf8_whole(k, strlen(k) < 24 ? strlen(k) : 24);

			snprintf(cut, sizeof(cut), "%.*s%s", (int)n, k,
				 strlen(k) > n ? "..." : "");
			svg_text(out, cut);
		}
		strbuf_addstr(out, "</text>\n");
	}
	if (!ns)
		strbuf_addf(out,
			    "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
			    "fill=\"#666666\">no operations in this window"
			    "</text>\n",
			    W / 2, TOP + PLOT_H / 2);
	strbuf_addstr(out, "</svg>\n");
}
