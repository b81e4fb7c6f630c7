/*
 * auditweb-int.h - what the auditor's page's files share: auditweb-serve.c (the
 * auditors, logins, routes and the JSON API), auditweb-html.c (the pages
 * and the chart's SVG, every byte of a sandbox escaped).
 */
#ifndef SBX_AUDITWEB_INT_H
#define SBX_AUDITWEB_INT_H

#include <jansson.h>
#include <stdbool.h>

#include "basic/alloc.h"
#include "serve/http.h"
#include "svc/svc-auditweb.h"

struct auditpage;

/* A request's filter, from its query (auditweb-serve.c). */
struct aw_query {
	svc_audit_filter f;
	const char *tenant_asked; /* the tenant= parameter, or NULL */
	const char *op_text;	  /* op= as given */
	const char *since, *until, *after;
	unsigned long limit;
	bool by_agent;
};

/* What a page shows of its auditor. */
struct aw_who {
	const char *tenant; /* NULL: every tenant */
};

/* Text from a sandbox into HTML: & < > " ' as entities, invalid UTF-8 as
 * U+FFFD, control and bidi characters as a visible <span
 * class="esc">\uXXXX</span>. */
void aw_html_text(struct strbuf *out, const char *s);
/* A value into a URL's query (percent-encoded). */
void aw_url_value(struct strbuf *out, const char *s);
/* The query string of q's filter (without after), "" when none: for
 * links. */
void aw_filter_query(struct strbuf *out, const struct aw_query *q,
		     bool with_tenant);

/* The pages (auditweb-html.c): a whole HTML document into out. */
void aw_page_log(struct strbuf *out, const struct aw_who *who,
		 const struct aw_query *q, json_t *rows, const char *next);
void aw_page_session(struct strbuf *out, const struct aw_who *who, json_t *info,
		     json_t *events, long long next, const char *id,
		     json_t *files, bool truncated, json_t *chain);
void aw_page_login(struct strbuf *out, const char *msg);
void aw_page_error(struct strbuf *out, int status, const char *msg);
/* The chart (auditweb.h's document) as a stacked bar SVG. */
void aw_chart_svg(struct strbuf *out, json_t *chart);

/* The embedded assets (auditweb-assets.c, made at build time). */
struct aw_asset {
	const char *path, *type;
	const unsigned char *data;
	size_t len;
};
extern const struct aw_asset aw_assets[];
extern const size_t aw_nassets;

#endif
