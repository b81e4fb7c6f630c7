/*
 * t-wire-status.c - the service's one map from an error to sandboxd's
 * answer (serve/wire-status.c): every kind has a status, the reasons
 * that have their own have it whatever their kind, an engine's reply is
 * 502, and the texts come from the error's facts (its reason and
 * numbers), never from its message: each error here carries a message
 * that says other numbers, a host path and a key, which no text of
 * sandboxd's may repeat.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "serve/wire-status.h"
#include "tap.h"

/* The command line's message: other numbers, a key and a host path. */
#define LYING_MSG                                                              \
	"tenant 'x' already holds 1 of 2 sessions; 'k-0123456789abcdef' "      \
	"matches 5 times in /srv/sbxcat/k-0123456789abcdef/workspace"

static struct sbx_error fact(enum sbx_kind kind, enum sbx_reason why,
			     unsigned long long n, unsigned long long max)
{
	struct sbx_error e = {.kind = kind, .msg = (char *)LYING_MSG};

	sbx_error_why(&e, why, n, max);
	return e;
}

static void statuses(void)
{
	static const int want[SBX_E_COUNT] = {
	    [SBX_E_INTERNAL] = 500,    [SBX_E_NOT_FOUND] = 404,
	    [SBX_E_CONFLICT] = 409,    [SBX_E_REFUSED] = 403,
	    [SBX_E_BAD_DATA] = 500,    [SBX_E_INVALID] = 422,
	    [SBX_E_UNAVAILABLE] = 502, [SBX_E_TIMEOUT] = 504,
	    [SBX_E_CANCELLED] = 503,
	};
	static const struct {
		enum sbx_reason why;
		enum sbx_kind kind; /* the kind the layer refuses it with */
		int status;
	} rows[] = {
	    {SBX_R_NOT_FOUND, SBX_E_REFUSED, 404},
	    {SBX_R_A_DIRECTORY, SBX_E_REFUSED, 404},
	    {SBX_R_NOT_A_DIRECTORY, SBX_E_REFUSED, 404},
	    {SBX_R_NOT_REGULAR, SBX_E_REFUSED, 404},
	    {SBX_R_OUTSIDE, SBX_E_REFUSED, 400},
	    {SBX_R_OVER_READ_LIMIT, SBX_E_REFUSED, 400},
	    {SBX_R_TENANT_QUOTA, SBX_E_REFUSED, 429},
	    {SBX_R_HOST_QUOTA, SBX_E_REFUSED, 429},
	    {SBX_R_OPEN_QUOTA, SBX_E_REFUSED, 429},
	    {SBX_R_KEPT_BUDGETS, SBX_E_REFUSED, 429},
	    {SBX_R_NOT_RUNNING, SBX_E_CONFLICT, 410},
	    {SBX_R_GONE, SBX_E_CONFLICT, 410},
	    {SBX_R_RUN_RUNNING, SBX_E_CONFLICT, 409},
	    {SBX_R_OLD_NOT_UNIQUE, SBX_E_CONFLICT, 409},
	    {SBX_R_DURABILITY_DIFFERS, SBX_E_CONFLICT, 409},
	    {SBX_R_BUDGET_DIFFERS, SBX_E_CONFLICT, 409},
	    {SBX_R_BAD_LABELS, SBX_E_INVALID, 422},
	    {SBX_R_OVER_CEILING, SBX_E_INVALID, 422},
	};

	for (int k = 0; k < SBX_E_COUNT; k++) {
		struct sbx_error e = {.kind = (enum sbx_kind)k};

		ok(want[k] >= 400, "kind %d has a status in the test", k);
		is_int(wire_status(&e), want[k], "kind '%s' answers %d",
		       sbx_kind_name((enum sbx_kind)k), want[k]);
		/* The engine's refusal is its fault to this client. */
		e.http = 400;
		is_int(wire_status(&e), 502,
		       "kind '%s' from the engine's reply answers 502",
		       sbx_kind_name((enum sbx_kind)k));
	}
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sbx_error e = fact(rows[i].kind, rows[i].why, 3, 4);

		is_int(wire_status(&e), rows[i].status,
		       "reason '%s' answers %d", sbx_reason_text(rows[i].why),
		       rows[i].status);
	}
	/* Every reason has a text (the audit's words) and a status. */
	for (int r = 1; r < SBX_R_COUNT; r++) {
		struct sbx_error e =
		    fact(SBX_E_REFUSED, (enum sbx_reason)r, 0, 0);
		int st = wire_status(&e);

		ok(sbx_reason_text((enum sbx_reason)r) != NULL && st >= 400 &&
		       st <= 599,
		   "reason %d ('%s') has a text and a status (%d)", r,
		   sbx_reason_text((enum sbx_reason)r), st);
	}
	{
		struct sbx_error e = {.kind = (enum sbx_kind)SBX_E_COUNT};

		is_int(wire_status(&e), 500, "a kind out of range: 500");
		is_int(wire_status(NULL), 500, "no error at all: 500");
	}
}

/* The texts, case by case: the facts an error carries, what the route
 * names, the text wanted. */
typedef char *text_fn(const struct sbx_error *, const struct wire_subject *);
static const struct {
	text_fn *fn;
	enum sbx_kind kind;
	enum sbx_reason why;
	unsigned long long n, max;
	struct wire_subject sub;
	const char *want, *name;
} text_cases[] = {
    {wire_error_text,
     SBX_E_REFUSED,
     SBX_R_TENANT_QUOTA,
     10,
     10,
     {.tenant = "acme", .session = "s-1"},
     "Tenant 'acme' already holds 10 of 10 sessions. Release an idle session "
     "before opening another.",
     "tenant quota: n of max from the facts"},
    {wire_error_text,
     SBX_E_REFUSED,
     SBX_R_HOST_QUOTA,
     40,
     40,
     {.tenant = "acme", .session = "s-1"},
     "Session limit of 40 reached. Release an idle session before opening "
     "another.",
     "host quota: the limit from the facts"},
    {wire_error_text,
     SBX_E_REFUSED,
     SBX_R_HOST_QUOTA,
     40,
     40,
     {.session = "s-1", .waking = true},
     "Cannot wake session s-1: Session limit of 40 reached. Release an idle "
     "session before opening another.",
     "a wake the host has no room for"},
    {wire_error_text,
     SBX_E_REFUSED,
     SBX_R_OPEN_QUOTA,
     7,
     8,
     {.session = "s-1"},
     "Service holds its ceiling of 8 open sessions and all of them are in "
     "use. Close one before opening another.",
     "open quota: the ceiling from the facts"},
    {wire_error_text,
     SBX_E_CONFLICT,
     SBX_R_DURABILITY_DIFFERS,
     0,
     0,
     {.session = "s-1", .durability = "ephemeral"},
     "Session s-1 is persistent. Close it with purge before opening it "
     "ephemeral.",
     "durability differs: the other one named"},
    {wire_error_text,
     SBX_E_CONFLICT,
     SBX_R_BUDGET_DIFFERS,
     20971520,
     25165824,
     {.session = "s-1"},
     "Session s-1 has a disk budget of 20971520 bytes, not 25165824. Close "
     "it with purge to change it.",
     "budget differs: both sizes, no key"},
    {wire_error_text,
     SBX_E_CONFLICT,
     SBX_R_BUDGET_DIFFERS,
     0,
     25165824,
     {.session = "s-1"},
     "Session s-1 has no disk budget. Close it with purge to give it one.",
     "budget differs from none"},
    {wire_error_text,
     SBX_E_CONFLICT,
     SBX_R_GONE,
     0,
     0,
     {.session = "s-1"},
     "The sandbox is gone: its container was removed",
     "gone: no key, no path"},
    {wire_error_text,
     SBX_E_CONFLICT,
     SBX_R_RUN_RUNNING,
     0,
     0,
     {.run = "0123456789abcdef0123456789abcdef"},
     "Run 0123456789abcdef0123456789abcdef is running already",
     "a run of that id runs"},
    {wire_error_text,
     SBX_E_REFUSED,
     SBX_R_OUTSIDE,
     0,
     0,
     {.path = "../x"},
     "Path '../x' is outside the workspace",
     "outside, as given"},
    {wire_error_text,
     SBX_E_REFUSED,
     SBX_R_OVER_READ_LIMIT,
     9437184,
     8388608,
     {.path = "big"},
     "File is 9437184 bytes, over the 8388608-byte read limit",
     "over the read limit: both sizes"},
    {wire_error_text,
     SBX_E_REFUSED,
     SBX_R_NOT_FOUND,
     0,
     0,
     {.path = "nope"},
     "No such file: nope",
     "a file not found"},
    {wire_error_text,
     SBX_E_NOT_FOUND,
     SBX_R_NONE,
     0,
     0,
     {.path = "nodir", .dir = true},
     "No such directory: nodir",
     "a directory not found (its kind)"},
    {wire_error_text,
     SBX_E_UNAVAILABLE,
     SBX_R_NONE,
     0,
     0,
     {.failing = "Could not start sandbox"},
     "Could not start sandbox: the container engine or the host failed",
     "an error of no words of sandboxd's: what failed and the kind's "
     "words, never the message (it names host paths and keys)"},
    /* read's and edit's 200 texts. */
    {wire_read_text,
     SBX_E_REFUSED,
     SBX_R_OVER_READ_LIMIT,
     9437184,
     8388608,
     {.path = "big"},
     "[Error: File is 9437184 bytes, over the 8388608-byte read limit. Read "
     "a slice with execute() instead, e.g. \"sed -n '1,200p' big\".]",
     "read over the limit"},
    {wire_read_text,
     SBX_E_REFUSED,
     SBX_R_A_DIRECTORY,
     0,
     0,
     {.path = "d"},
     "Error: File 'd' not found",
     "read of a directory"},
    {wire_read_text,
     SBX_E_REFUSED,
     SBX_R_PAST_END,
     3,
     9,
     {.path = "f"},
     "[End of file]",
     "read past the end"},
    {wire_edit_text,
     SBX_E_CONFLICT,
     SBX_R_OLD_NOT_UNIQUE,
     3,
     0,
     {.path = "f", .old = "x"},
     "String 'x' found 3 times. Use replace_all=True to replace all, or "
     "provide more context.",
     "edit: the count from the facts, not the message's 5"},
    {wire_edit_text,
     SBX_E_NOT_FOUND,
     SBX_R_OLD_NOT_FOUND,
     0,
     0,
     {.path = "f", .old = "q"},
     "String 'q' not found in file",
     "edit: old text not found"},
    {wire_edit_text,
     SBX_E_REFUSED,
     SBX_R_NOT_FOUND,
     0,
     0,
     {.path = "f", .old = "q"},
     "File 'f' not found",
     "edit: no such file"},
};

static void texts(void)
{
	struct sbx_error e;

	for (size_t i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]);
	     i++) {
		char *got;

		e = fact(text_cases[i].kind, text_cases[i].why, text_cases[i].n,
			 text_cases[i].max);
		got = text_cases[i].fn(&e, &text_cases[i].sub);
		is_str(got, text_cases[i].want, "%s", text_cases[i].name);
		free(got);
	}
	/* A reason set as text afterwards is no constant any more. */
	e = fact(SBX_E_REFUSED, SBX_R_OUTSIDE, 0, 0);
	sbx_error_reason(&e, "something else");
	is_int(e.why, SBX_R_NONE, "a text reason replaces the constant");
	is_int(wire_status(&e), 403, "... and its status is the kind's");
}

int main(void)
{
	statuses();
	texts();
	return done_testing();
}
