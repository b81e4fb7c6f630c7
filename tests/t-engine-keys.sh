#!/bin/sh
# t-engine-keys.sh - the Docker Engine API's JSON keys are built and read
# in src/engine/ alone (tests/engine-keys.py, docs/hacking.md "Layers"):
# session/ and svc/ know a container and an exec by engine.h's structures.
# First the checker on small trees of its own, with violations planted
# (it must fail, naming each) and with look-alikes that are not (it must
# pass); then the real tree.
set -u
. "$srcdir/tests/tap.sh"
command -v python3 >/dev/null || skip_all "python3 is not installed"
T=$(mktemp -d "${TMPDIR:-/tmp}/t-engine-keys.XXXXXX")
trap 'rm -rf "$T"' EXIT
CHECK="python3 $srcdir/tests/engine-keys.py"

mk() { # mk TREE FILE TEXT
	mkdir -p "$T/$1/$(dirname "$2")"
	printf '%s\n' "$3" >"$T/$1/$2"
}
# What may name the keys: engine/ itself; a key in a comment, in a call
# that is not jansson's, or a word that is not the API's.
for t in good bad; do
	mk $t engine/engine-spec.c 'long pid(json_t *j) {
	return json_integer_value(json_object_get(json_object_get(j, "State"), "Pid"));
}'
	mk $t session/ok.c '/* reads "State" of json_object_get(j, "State") */
int f(const char *s, json_t *o) {
	json_object_set_new(o, "state", json_string("running"));
	return strcmp(s, "State") == 0 && json_object_get(o, "status") != NULL;
}'
done
# The violations: a read nested in another call, a pack over lines, a
# set, one in serve/, and the allowed file's twin under another name.
mk bad session/reads.c 'long f(json_t *j) {
	return json_integer_value(
	    json_object_get(json_object_get(j, "State"),
			    "Pid"));
}'
mk bad svc/builds.c 'json_t *g(void) {
	return xjson_pack("{s:b, s:[s]}", "Tty", 0,
			  "Cmd", "true");
}'
mk bad serve/sets.c 'void h(json_t *o) { json_object_set_new(o, "Memory", json_integer(1)); }'
mk bad svc/svc-exec.c 'int k(json_t *j) { return json_is_true(json_object_get(j, "Running")); }'

$CHECK "$T/good" >"$T/out" 2>&1
is "$?" 0 "the checker passes a tree whose keys are engine/'s (and look-alikes elsewhere)" ||
	diag "$(cat "$T/out")"
$CHECK "$T/bad" >"$T/out" 2>&1
is "$?" 1 "the checker fails a tree with keys outside engine/"
grep -q 'src/session/reads.c:3: "State" in json_object_get' "$T/out"
ok $? "... naming a read nested in another call, at its line" || diag "$(cat "$T/out")"
grep -q 'src/session/reads.c:4: "Pid" in json_object_get' "$T/out"
ok $? "... and its key on the next line"
grep -q 'src/svc/builds.c:3: "Cmd" in xjson_pack' "$T/out"
ok $? "... naming a key of a pack that spans lines"
grep -q 'src/serve/sets.c:1: "Memory" in json_object_set_new' "$T/out"
ok $? "... naming a key set in serve/"
grep -q 'src/svc/svc-exec.c:1: "Running"' "$T/out"
ok $? "... and one in svc-exec.c (no file is let off)"
n=$(grep -c 'outside engine/' "$T/out")
is "$n" 6 "... and nothing else (no comment, no strcmp, no engine/ file)" || diag "$(cat "$T/out")"

# The real tree.
$CHECK "$srcdir/src" >"$T/out" 2>&1
is "$?" 0 "no Docker API key is built or read outside src/engine/" || diag "$(cat "$T/out")"
$CHECK "$srcdir/src" --count >"$T/out" 2>&1
is "$(grep -E '^(session|serve|cli) ' "$T/out" | tr '\n' ' ')" "cli 0 serve 0 session 0 " \
	"session/, serve/ and cli/ name none of them at all" || diag "$(cat "$T/out")"
# The same tree with one read planted where the typed one was: a
# violation in the real code is seen too.
cp -R "$srcdir/src" "$T/real" &&
	printf '%s\n' 'long planted(json_t *j) { return json_integer_value(json_object_get(j, "OOMKilled")); }' \
		>>"$T/real/session/session-engine.c"
$CHECK "$T/real" >"$T/out" 2>&1
is "$?:$(grep -c 'session-engine.c:[0-9]*: "OOMKilled"' "$T/out")" "1:1" \
	"... and a read planted in a copy of it fails, named" || diag "$(cat "$T/out")"
done_testing
