#!/bin/sh
# t-compose-config.sh - the real docker-compose reads back exactly what
# sbxcat wrote.
#
# Each shipped file must pass `docker-compose -f FILE config -q`, and for
# it, for every golden file of tests/compose and for the shipped files
# regenerated from a catalogue full of $ ' " \ # : U+2028 and non-ASCII
# text, the value compose hands to the container must equal
# `sbxcat compose --print FILE` byte for byte.  Compose is asked twice: its
# `config` output (which writes every literal '$' as '$$' again, so that is
# undone) and its own config loader, the code `up` runs.  Without
# docker-compose the whole test skips, saying why; it never passes
# silently.
set -u
. "$srcdir/tests/tap.sh"
S=${SBXCAT:?SBXCAT must name the built binary}

DC=$(command -v docker-compose) ||
	skip_all "docker-compose not found (apt-get install docker-compose): cannot check what compose reads back"
# docker-compose 1.x is Python; its interpreter has PyYAML and compose's
# own modules.  Anything else: fall back to python3 for the YAML only.
PY=$(sed -n '1s/^#! *\([^ ]*\).*/\1/p' "$DC")
if [ -z "$PY" ] || ! "$PY" -c 'import yaml' 2>/dev/null; then
	PY=python3
	"$PY" -c 'import yaml' 2>/dev/null ||
		skip_all "no Python with PyYAML to read docker-compose's output"
fi
have_loader=yes
"$PY" -c 'import compose.config.config' 2>/dev/null || have_loader=no

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset SBXCAT_CATALOG COMPOSE_FILE COMPOSE_PROJECT_NAME
# The dev and prod files take their secrets from the environment and refuse
# to start without them: stand-ins, for config only.
export SANDBOXD_IMAGE=example/sandboxd:test SANDBOXD_API_TOKEN=stand-in POSTGRES_PASSWORD=stand-in
export PYTHONIOENCODING=utf-8

cat >"$T/from-config.py" <<'EOF'
# The SANDBOXD_RUNTIMES value in `docker-compose config` output, with the
# '$$' that config writes for every literal '$' read back as '$'.
import sys, yaml
env = yaml.safe_load(sys.stdin.buffer)["services"]["sandboxd"]["environment"]
if isinstance(env, list):
    env = dict(e.split("=", 1) for e in env)
sys.stdout.buffer.write(env["SANDBOXD_RUNTIMES"].replace("$$", "$").encode() + b"\n")
EOF
cat >"$T/from-loader.py" <<'EOF'
# The value as compose's own loader resolves it for `up`: interpolated.
# One process for every file (arguments FILE OUT ...): each start of
# compose costs half a second.
import os, sys
from compose.config import config
from compose.config.environment import Environment
args = sys.argv[1:]
for path, out in zip(args[::2], args[1::2]):
    d = os.path.dirname(path)
    cfg = config.load(config.find(d, [path], Environment.from_env_file(d)))
    svc = [s for s in cfg.services if s["name"] == "sandboxd"][0]
    with open(out, "wb") as f:
        f.write(svc["environment"]["SANDBOXD_RUNTIMES"].encode() + b"\n")
EOF

# round_trip FILE LABEL [-C CATALOG]: docker-compose config reads back
# sbxcat's value.  FILE is absolute; what compose's loader reads is queued
# for one run at the end.
n=0
loader_args=""
round_trip() {
	f=$1 label=$2
	shift 2
	n=$((n + 1))
	eval "label_$n=\$label"
	"$S" "$@" compose --print "$f" >"$T/want.$n" 2>"$T/err" ||
		{ ok 1 "$label: sbxcat compose --print"; sed 's/^/# /' "$T/err"; return; }
	"$DC" -f "$f" config >"$T/config" 2>"$T/err"
	ok $? "$label: docker-compose config accepts it" || sed 's/^/# /' "$T/err"
	"$PY" "$T/from-config.py" <"$T/config" >"$T/got" 2>"$T/err"
	cmp -s "$T/got" "$T/want.$n"; ok $? "$label: docker-compose config gives back the value" ||
		{ sed 's/^/# /' "$T/err"; diff "$T/got" "$T/want.$n" | head -n 4 | cut -c1-200 | sed 's/^/# /'; }
	loader_args="$loader_args $f $T/loader.$n"
}

for f in docker-compose.yml docker-compose-dev.yml docker-compose-prod.yml; do
	"$DC" -f "$srcdir/compose/$f" config -q >"$T/out" 2>&1
	ok $? "compose/$f passes docker-compose config -q" || sed 's/^/# /' "$T/out"
	round_trip "$srcdir/compose/$f" "compose/$f" -C "$srcdir/catalog/sandbox_runtimes.json"
done

# Without its secrets the prod file refuses to start, naming what is missing.
(unset POSTGRES_PASSWORD; "$DC" -f "$srcdir/compose/docker-compose-prod.yml" config -q) >"$T/out" 2>&1
is "$?:$(grep -c 'set POSTGRES_PASSWORD' "$T/out")" "1:1" "the prod file refuses to run without POSTGRES_PASSWORD"

# The shipped files regenerated from the hostile catalogue.
mkdir "$T/hostile"
install -m 644 "$srcdir"/compose/*.yml "$T/hostile/"
"$S" -C "$srcdir/tests/compose/catalog.json" compose "$T"/hostile/*.yml >/dev/null
ok $? "the shipped files take the hostile catalogue's value"
for f in "$T"/hostile/*.yml; do
	round_trip "$f" "hostile $(basename "$f")" -C "$srcdir/tests/compose/catalog.json"
done

# Every golden file: list and mapping forms, flow style, CRLF, BOM.
for f in "$srcdir"/tests/compose/*.out.yml; do
	round_trip "$f" "golden $(basename "$f")" -C "$srcdir/tests/compose/catalog.json"
done

# Compose's own loader, the code `docker-compose up` runs.
if [ $have_loader = no ]; then
	skip "$PY cannot import compose's config loader" "compose's loader gives back every value"
else
	# shellcheck disable=SC2086
	"$PY" "$T/from-loader.py" $loader_args >"$T/out" 2>&1 || sed 's/^/# /' "$T/out"
	i=1
	while [ $i -le $n ]; do
		eval "label=\$label_$i"
		cmp -s "$T/loader.$i" "$T/want.$i"; ok $? "$label: compose's loader gives back the value"
		i=$((i + 1))
	done
fi

done_testing
