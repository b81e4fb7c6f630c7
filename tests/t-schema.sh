#!/bin/sh
#
# t-schema.sh - docs/catalog.schema.json agrees with 'sbxcat check'.
#
# Editors validate the catalogue with the schema; sbxcat validates it with
# its own code.  Two validators drift unless a test holds them together, so
# every catalogue below goes through both: the good ones must pass both,
# the bad ones must be refused by both (sbxcat with exit status 1 and a
# message naming what is wrong).
#
# Needs python3 with jsonschema >= 4 (Debian: python3-jsonschema) for
# draft 2020-12; without it the test skips, loudly.

set -u

SBXCAT=${SBXCAT:-./sbxcat}
srcdir=${srcdir:-.}
. "$srcdir/tests/tap.sh"
PYTHON=${PYTHON:-python3}
schema="$srcdir/docs/catalog.schema.json"

if ! "$PYTHON" -c 'from jsonschema import Draft202012Validator' \
	>/dev/null 2>&1; then
	echo "t-schema.sh: $PYTHON cannot import jsonschema.Draft202012Validator;" \
		"install python3-jsonschema to run this test" >&2
	skip_all "python3-jsonschema not installed"
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# show FILE: its lines as TAP comments
show() {
	diag "$(cat "$1")"
}

# schema_valid FILE: exit 0 valid, 1 invalid (errors on stdout), 2 broken.
schema_valid() {
	"$PYTHON" - "$schema" "$1" <<'EOF'
import json, sys
from jsonschema import Draft202012Validator
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    with open(sys.argv[2], encoding="utf-8-sig") as f:
        doc = json.load(f)
except Exception as e:
    print("cannot load: %s" % e)
    sys.exit(2)
errors = list(Draft202012Validator(schema).iter_errors(doc))
for e in errors:
    print("%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "$",
                      e.message[:200]))
sys.exit(1 if errors else 0)
EOF
}

# The bad catalogues: name, a text sbxcat's message must contain, the JSON.
# Every entry but the one broken thing is valid, so each line tests one rule.
cat >"$tmp/bad.tab" <<'EOF'
both image and base_image	never both	[{"alias": "a", "description": "d", "image": "debian", "base_image": "debian"}]
neither image nor base_image	needs 'image'	[{"alias": "a", "description": "d"}]
packages on an image entry	builds nothing	[{"alias": "a", "description": "d", "image": "debian", "packages": ["requests"]}]
setup_commands on an image entry	builds nothing	[{"alias": "a", "description": "d", "image": "debian", "setup_commands": ["true"]}]
alias Work-Bench	'alias'	[{"alias": "Work-Bench", "description": "d", "image": "debian"}]
alias of 33 characters	the limit is 32	[{"alias": "abcdefghijklmnopqrstuvwxyz0123456", "description": "d", "image": "debian"}]
alias missing	'alias': required	[{"description": "d", "image": "debian"}]
description missing	'description': required	[{"alias": "a", "image": "debian"}]
description of 201 characters	'description'	[{"alias": "a", "description": "ddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "image": "debian"}]
C1 control character in description	U+0085	[{"alias": "a", "description": "one\u0085two", "image": "debian"}]
unknown field	did you mean 'image'	[{"alias": "a", "description": "d", "imgae": "debian", "image": "debian"}]
image name in upper case	not a valid image reference	[{"alias": "a", "description": "d", "image": "Debian:12"}]
package requests; rm -rf /	shell metacharacter	[{"alias": "a", "description": "d", "base_image": "debian", "packages": ["requests; rm -rf /"]}]
package given as a URL	URLs	[{"alias": "a", "description": "d", "base_image": "debian", "packages": ["pkg @ https://example.com/pkg.whl"]}]
package that is a pip option	pip options	[{"alias": "a", "description": "d", "base_image": "debian", "packages": ["--index-url=http://evil"]}]
env name 1BAD	not a valid environment variable name	[{"alias": "a", "description": "d", "image": "debian", "env_vars": {"1BAD": "x"}}]
env value not a string	must be a string	[{"alias": "a", "description": "d", "image": "debian", "env_vars": {"X": 1}}]
mem_limit 2gb	not a size: 1 to 15 digits	[{"alias": "a", "description": "d", "image": "debian", "mem_limit": "2gb"}]
mem_limit below Docker's minimum	minimum of 6m	[{"alias": "a", "description": "d", "image": "debian", "mem_limit": "5m"}]
mem_limit zero	greater than zero	[{"alias": "a", "description": "d", "image": "debian", "mem_limit": "0g"}]
needs_network as a string	true or false	[{"alias": "a", "description": "d", "image": "debian", "needs_network": "yes"}]
empty briefing sentence	'briefing[0]'	[{"alias": "a", "description": "d", "image": "debian", "briefing": [""]}]
newline in a setup command	control character	[{"alias": "a", "description": "d", "base_image": "debian", "setup_commands": ["true\nUSER root"]}]
setup command ending in a backslash	ends with a backslash	[{"alias": "a", "description": "d", "base_image": "debian", "setup_commands": ["true \\"]}]
setup command starting with a RUN flag	starts with '-'	[{"alias": "a", "description": "d", "base_image": "debian", "setup_commands": ["--network=host curl x"]}]
setup command of blanks then a RUN flag	starts with '-'	[{"alias": "a", "description": "d", "base_image": "debian", "setup_commands": ["\u00a0\u3000--mount=type=bind,source=/,target=/h true"]}]
setup command in exec form	starts with '['	[{"alias": "a", "description": "d", "base_image": "debian", "setup_commands": [" [\"/bin/true\"]"]}]
setup command of only blanks	only white space	[{"alias": "a", "description": "d", "base_image": "debian", "setup_commands": [" \u2003 "]}]
digest of 32 hex digits	a digest is	[{"alias": "a", "description": "d", "image": "debian@sha256:0123456789abcdef0123456789abcdef"}]
digest in upper case	a digest is	[{"alias": "a", "description": "d", "image": "debian@sha256:0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"}]
digest with md5	a digest is	[{"alias": "a", "description": "d", "image": "debian@md5:0123456789abcdef0123456789abcdef"}]
an image ID for an image	image ID	[{"alias": "a", "description": "d", "base_image": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]
empty array	no runtimes	[]
not an array	JSON array	{"alias": "a", "description": "d", "image": "debian"}
EOF

# A catalogue that uses every field, in both shapes.
cat >"$tmp/full.json" <<'EOF'
[
  {
    "alias": "analyst",
    "description": "Python 3.12 with pandas and DuckDB for data analysis",
    "base_image": "docker.io/library/python:3.12-slim",
    "setup_commands": [
      "set -eu; apt-get update; apt-get install -y --no-install-recommends git ripgrep; rm -rf /var/lib/apt/lists/*",
      "pip install --no-cache-dir uv",
      "\u00a0 echo --network=host [x] -y"
    ],
    "packages": ["pandas>=2,<3", "duckdb==1.1.3", "httpx[http2]", "pyyaml"],
    "env_vars": {"MPLBACKEND": "Agg", "PYTHONUTF8": "1", "GREETING": "say \"hi\" for $5 \\o/"},
    "briefing": ["Query large CSV files with DuckDB instead of loading them into pandas."],
    "mem_limit": "4g",
    "needs_network": false
  },
  {
    "alias": "node",
    "description": "Node.js 22 as published, nothing added",
    "image": "node:22-bookworm-slim",
    "env_vars": {"NODE_ENV": "production"},
    "briefing": ["Use npm; there is no Python."],
    "mem_limit": "1024m",
    "needs_network": true
  }
]
EOF

if "$PYTHON" - "$schema" >"$tmp/out" 2>&1 <<'EOF'; then
import json, sys
from jsonschema import Draft202012Validator
with open(sys.argv[1], encoding="utf-8") as f:
    schema = json.load(f)
Draft202012Validator.check_schema(schema)
assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
EOF
	ok 0 "the schema is a valid draft 2020-12 schema"
else
	ok 1 "the schema is a valid draft 2020-12 schema"
	show "$tmp/out"
fi

# good NAME FILE: both validators accept FILE.
good() {
	schema_valid "$2" >"$tmp/out" 2>&1
	ok $? "schema accepts $1" || show "$tmp/out"
	"$SBXCAT" check "$2" >"$tmp/out" 2>&1
	ok $? "sbxcat check accepts $1" || show "$tmp/out"
}
good "the shipped catalogue" "$srcdir/catalog/sandbox_runtimes.json"
good "a catalogue using every field" "$tmp/full.json"

tab=$(printf '\t')
while IFS="$tab" read -r name expect json; do
	f="$tmp/bad.json"
	printf '%s\n' "$json" >"$f"

	schema_valid "$f" >"$tmp/out" 2>&1
	is $? 1 "schema rejects $name" || show "$tmp/out"

	"$SBXCAT" check "$f" >"$tmp/out" 2>&1
	rc=$?
	grep -qF -- "$expect" "$tmp/out"
	is "$rc $?" "1 0" "sbxcat check rejects $name, saying \"$expect\"" ||
		show "$tmp/out"
done <"$tmp/bad.tab"
done_testing
