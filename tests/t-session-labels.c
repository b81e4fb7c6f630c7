/*
 * t-session-labels.c - session-labels.c without an engine: what a key and
 * a value may be (each bound at its edge), sbxcat's own namespace
 * refused in any case, KEY=VALUE parsing, the set's order, duplicates and
 * its bound of 32, JSON both ways, and a fuzz loop of random keys and
 * values checked against an independent statement of the rules (every
 * accepted label comes back exactly from the JSON).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "basic/error.h"
#include "basic/text.h"
#include "session/session-labels.h"
#include "tap.h"

/* Add one, and say the error's message (or "" when accepted). */
static const char *try_add(struct session_labels *l, const char *k,
			   const char *v, size_t len)
{
	static char msg[512];
	struct sbx_error *err = NULL;

	msg[0] = '\0';
	if (session_labels_add(l, k, v, len, &err) < 0) {
		snprintf(msg, sizeof(msg), "%s", err->msg);
		sbx_error_free(&err);
	}
	return msg;
}

static void keys(void)
{
	char k63[64], k64[65];

	memset(k63, 'a', 63);
	k63[63] = '\0';
	memset(k64, 'a', 64);
	k64[64] = '\0';
	ok(!session_label_check_key("env"), "a plain key");
	ok(!session_label_check_key("team/owner.name_x-1"),
	   "every punctuation");
	ok(!session_label_check_key("9lives"), "a digit first");
	ok(!session_label_check_key(k63), "63 bytes");
	ok(session_label_check_key(k64) != NULL, "64 bytes refused");
	ok(session_label_check_key("") != NULL, "empty refused");
	ok(session_label_check_key(".x") != NULL, "'.' first refused");
	ok(session_label_check_key("-x") != NULL, "'-' first refused");
	ok(session_label_check_key("a b") != NULL, "a space refused");
	ok(session_label_check_key("a=b") != NULL, "'=' refused");
	ok(session_label_check_key("caf\xc3\xa9") != NULL, "non-ASCII refused");
	ok(session_label_check_key("a\nb") != NULL, "a newline refused");
	ok(session_label_check_key("io.sbxcat.tenant") != NULL,
	   "sbxcat's own tenant label refused");
	ok(session_label_check_key("IO.SbxCat.key") != NULL,
	   "sbxcat's namespace refused in any case");
	ok(session_label_check_key("io.sbxcat") != NULL,
	   "the namespace itself refused");
	ok(session_label_check_key("io.sbxcat/x") != NULL,
	   "the namespace with '/' refused");
	ok(!session_label_check_key("io.sbxcatalog"),
	   "a longer word that starts alike is the user's");
	ok(!session_label_check_key("com.example.sbxcat"),
	   "sbxcat further in is the user's");
}

static void values(void)
{
	char v256[257], v257[258];

	memset(v256, 'v', 256);
	v256[256] = '\0';
	memset(v257, 'v', 257);
	v257[257] = '\0';
	ok(!session_label_check_value("", 0), "an empty value");
	ok(!session_label_check_value(v256, 256), "256 bytes");
	ok(session_label_check_value(v257, 257) != NULL, "257 bytes refused");
	ok(!session_label_check_value(
	       "caf\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x90\x88",
	       strlen("caf\xc3\xa9 \xe2\x98\x83 "
		      "\xf0\x9f\x90\x88")),
	   "unicode");
	ok(!session_label_check_value("a = b, c", 8), "'=' and spaces");
	ok(session_label_check_value("a\0b", 3) != NULL, "a NUL refused");
	ok(session_label_check_value("a\tb", 3) != NULL, "a tab refused");
	ok(session_label_check_value("a\x1b[31m", 6) != NULL, "ESC refused");
	ok(session_label_check_value("\x7f", 1) != NULL, "DEL refused");
	ok(session_label_check_value("\xc2\x85", 2) != NULL, "C1 NEL refused");
	ok(session_label_check_value("\xe2\x80\xae", 3) != NULL,
	   "a bidi override refused");
	ok(session_label_check_value("\xff", 1) != NULL, "invalid UTF-8");
	ok(session_label_check_value("\xc0\xaf", 2) != NULL, "overlong");
	ok(session_label_check_value("\xed\xa0\x80", 3) != NULL, "surrogate");
	ok(session_label_check_value("\xe2\x98", 2) != NULL, "cut short");
}

static void sets(void)
{
	struct session_labels l = SESSION_LABELS_INIT, c = SESSION_LABELS_INIT;
	struct sbx_error *err = NULL;
	char *s;
	json_t *j;

	is_str(try_add(&l, "zeta", "1", 1), "", "added");
	is_str(try_add(&l, "alpha", "2", 1), "", "added");
	is_str(try_add(&l, "mid", "", 0), "", "added, empty");
	is_str(try_add(&l, "alpha", "3", 1), "label 'alpha': given twice",
	       "a key twice refused");
	is_str(try_add(&l, "io.sbxcat.key", "x", 1),
	       "label 'io.sbxcat.key': keys in 'io.sbxcat' are sbxcat's own "
	       "labels",
	       "the reserved key named in the error");
	is_str(try_add(&l, "a\x1b[2Jb", "x", 1),
	       "label 'a\\x1b[2Jb': a label's key is [A-Za-z0-9._/-], "
	       "starting with a letter or a digit",
	       "a key's escape shown escaped");
	is_int((long long)l.n, 3, "three kept");
	is_str(l.keys[0], "alpha", "sorted");
	is_str(l.keys[2], "zeta", "sorted");
	session_labels_copy(&c, &l);
	ok(session_labels_equal(&c, &l), "a copy is equal");
	free(c.values[1]);
	c.values[1] = strdup("other");
	ok(!session_labels_equal(&c, &l), "a changed value is not");

	j = session_labels_json(&l);
	s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	is_str(s, "{\"alpha\":\"2\",\"mid\":\"\",\"zeta\":\"1\"}", "as JSON");
	free(s);
	session_labels_release(&c);
	ok(session_labels_from_json(&c, j, &err) == 0 &&
	       session_labels_equal(&c, &l),
	   "JSON read back equal");
	json_decref(j);
	session_labels_release(&c);

	session_labels_release(&l);
	ok(session_labels_parse(&l, "k=a=b", &err) == 0 && l.n == 1 &&
	       strcmp(l.values[0], "a=b") == 0,
	   "the first '=' splits");
	ok(session_labels_parse(&l, "e=", &err) == 0, "KEY= is an empty value");
	ok(session_labels_parse(&l, "novalue", &err) < 0 &&
	       strstr(err->msg, "not KEY=VALUE"),
	   "no '=' refused");
	sbx_error_free(&err);
	ok(session_labels_parse(&l, "=v", &err) < 0, "no key refused");
	sbx_error_free(&err);
	session_labels_release(&l);

	for (int i = 0; i < SESSION_LABELS_MAX; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%02d", i);
		if (*try_add(&l, k, "v", 1))
			break;
	}
	is_int((long long)l.n, SESSION_LABELS_MAX, "32 labels");
	ok(strstr(try_add(&l, "k99", "v", 1), "at most 32") != NULL,
	   "a 33rd refused");
	session_labels_release(&l);

	j = json_pack("{s:i}", "n", 1);
	ok(session_labels_from_json(&l, j, &err) < 0 &&
	       strstr(err->msg, "not a string"),
	   "a number refused");
	sbx_error_free(&err);
	json_decref(j);
	j = json_pack("[s]", "x");
	ok(session_labels_from_json(&l, j, &err) < 0, "an array refused");
	sbx_error_free(&err);
	json_decref(j);
	ok(session_labels_from_json(&l, json_null(), &err) == 0 && l.n == 0,
	   "null is none");
	j = json_object();
	for (int i = 0; i < 40; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%02d", i);
		json_object_set_new(j, k, json_string("v"));
	}
	ok(session_labels_from_json(&l, j, &err) < 0 &&
	       strstr(err->msg, "at most 32"),
	   "40 in JSON refused");
	sbx_error_free(&err);
	json_decref(j);
	session_labels_release(&l);
}

/* The rules stated again, independently, for the fuzz loop. */
static bool model_key(const char *k, size_t n)
{
	if (n < 1 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)k[i];
		bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			     (c >= 'A' && c <= 'Z');

		if (!alnum && (i == 0 || !strchr("._/-", c) || c == 0))
			return false;
	}
	if (strncasecmp(k, "io.sbxcat", 9) == 0 &&
	    (n == 9 || strchr("./-_", k[9])))
		return false;
	return true;
}

static void fuzz(void)
{
	/* Bytes a hostile client would try: every class at an edge. */
	static const char *const pieces[] = {"a",
					     "Z",
					     "0",
					     ".",
					     "_",
					     "/",
					     "-",
					     "=",
					     " ",
					     "\t",
					     "\n",
					     "\x1b",
					     "\x7f",
					     "\xc2\x85",
					     "\xc3\xa9",
					     "\xe2\x80\xae",
					     "\xf0\x9f\x90\x88",
					     "\xff",
					     "\xc0",
					     "\xed\xa0\x80",
					     "io.sbxcat",
					     "IO.SBXCAT.",
					     "\"",
					     "\\",
					     "\xe2\x98"};
	size_t npieces = sizeof(pieces) / sizeof(pieces[0]);
	const char *quick = getenv("T_SESSION_QUICK");
	int rounds = quick && *quick == '1' ? 500 : 20000;
	int agree = 0, back = 0, accepted = 0;

	for (int r = 0; r < rounds; r++) {
		char k[160], v[400];
		size_t kn = 0, vn = 0;
		struct session_labels l = SESSION_LABELS_INIT;
		struct session_labels m = SESSION_LABELS_INIT;
		struct sbx_error *err = NULL;
		int nk = (int)(tap_rand() % 20), nv = (int)(tap_rand() % 90);
		bool want_v;
		uint32_t cp;
		/* Half the rounds draw from what is allowed only, so that
		 * both sides of every rule are reached. */
		bool tame = tap_rand() % 2 == 0;
		static const char *const safe_v[] = {
		    "a",  "Z",	"=",	    " ", "\xc3\xa9", "\xf0\x9f\x90\x88",
		    "\"", "\\", "io.sbxcat"};

		for (int i = 0; i < nk; i++) {
			const char *p = pieces[tap_rand() % npieces];
			size_t pl = strlen(p);

			if (tame)
				p = pieces[tap_rand() % 7], pl = strlen(p);
			if (tap_rand() % 3 == 0)
				p = "abc", pl = 3;
			if (kn + pl >= sizeof(k))
				break;
			memcpy(k + kn, p, pl);
			kn += pl;
		}
		k[kn] = '\0';
		for (int i = 0; i < nv; i++) {
			const char *p = pieces[tap_rand() % npieces];
			size_t pl = strlen(p);

			if (tame)
				p = safe_v[tap_rand() % 9], pl = strlen(p);
			if (tap_rand() % 2 == 0)
				p = "xy", pl = 2;
			if (vn + pl >= sizeof(v))
				break;
			memcpy(v + vn, p, pl);
			vn += pl;
		}
		v[vn] = '\0';
		want_v = vn <= 256 && utf8_first_invalid(v, vn) < 0 &&
			 !text_find_control(v, vn, &cp) &&
			 !strstr(v, "\xe2\x80\xae");
		if ((session_labels_add(&l, k, v, vn, &err) == 0) ==
		    (model_key(k, kn) && want_v))
			agree++;
		else
			diag("disagree on key '%s' (%zu) value of %zu bytes", k,
			     kn, vn);
		if (!err) {
			json_t *j = session_labels_json(&l);
			char *text = json_dumps(j, 0);
			json_t *again = json_loads(text, 0, NULL);

			accepted++;
			if (session_labels_from_json(&m, again, &err) == 0 &&
			    session_labels_equal(&l, &m) &&
			    strlen(m.values[0]) == vn &&
			    memcmp(m.values[0], v, vn) == 0)
				back++;
			free(text);
			json_decref(j);
			json_decref(again);
		}
		sbx_error_free(&err);
		session_labels_release(&l);
		session_labels_release(&m);
	}
	is_int(agree, rounds, "fuzz: %d random labels judged as the rules say",
	       rounds);
	is_int(back, accepted, "fuzz: each of %d accepted came back exactly",
	       accepted);
	ok(accepted > rounds / 10, "fuzz: some were accepted (%d)", accepted);
}

int main(void)
{
	keys();
	values();
	sets();
	fuzz();
	return done_testing();
}
