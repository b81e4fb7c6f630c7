#!/bin/sh
# t-deploy.sh - two deployments (SBXCAT_DEPLOYMENT_ID) prewarming the same
# alias on one engine never remove each other's images: each claims the
# content tags it uses (sbxcat/ALIAS:HASH.ID), and a superseded content tag
# goes only when no other deployment claims it.  An invalid id is refused.
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
T=$(mktemp -d)
sfx=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
A=td-a-$sfx DEV=dev-$sfx PROD=prod-$sfx
cleanup() {
	testbed_remove_mine "$sfx"
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 1
unset SBXCAT_DEPLOYMENT_ID SBXCAT_CATALOG SBXCAT_ENGINE_STALL SBXCAT_ENGINE_TIMEOUT SBXCAT_ENGINE_TRACE

# cat_of NAME MODE: a catalogue of one runtime $A with env MODE.
cat_of() {
	cat >"$1.json" <<JSON
[{"alias": "$A", "description": "shared alias", "base_image": "sbxcat-test/busybox:1",
  "setup_commands": ["echo deploy $sfx"], "env_vars": {"MODE": "$2"}}]
JSON
}
# pw DEPLOYMENT CATALOGUE [ARGS]: status in $rc, report in out.
pw() {
	d=$1 c=$2
	shift 2
	: >trace
	SBXCAT_DEPLOYMENT_ID=$d SBXCAT_ENGINE_TRACE=$T/trace "$S" -C "$c.json" prewarm "$@" >out 2>err
	rc=$?
}
result() { awk -v a="$A" '$1 == a { print $2 }' out; }
tag() { "$S" -C "$1.json" tag "$A"; }

for bad in "" "Prod" "-x" ".x" "a b" "a/b" "$(printf 'x%.0s' $(seq 64))" "$(printf 'a\033[2J')"; do
	cat_of dev one
	[ -z "$bad" ] && continue	# empty means the default
	SBXCAT_DEPLOYMENT_ID=$bad DOCKER_HOST=unix://$T/no.sock "$S" -C dev.json prewarm >out 2>err
	rc=$?
	[ "$rc" = 3 ] && grep -q "^sbxcat: SBXCAT_DEPLOYMENT_ID '.*': expected 1 to 63 of a-z" err &&
		! grep -q "$(printf '\033')" err
	ok $? "SBXCAT_DEPLOYMENT_ID '$(printf '%s' "$bad" | cut -c1-12 | tr -c 'a-zA-Z0-9 ./-' '?')' is refused with status 3 before the engine is asked"
done

testbed_docker || skip_all "no Docker engine could be reached or started (reason above)"
testbed_base_image || skip_all "no base image sbxcat-test/busybox:1 (reason above)"
present() { tb_docker image inspect "$1" >/dev/null 2>&1; }

cat_of dev one
cat_of prod one
H1=$(tag dev)
is "$(tag prod)" "$H1" "the same recipe in two deployments: the same content tag"
pw "$DEV" dev
is "$rc:$(result)" "0:built" "dev builds the shared alias"
is "$(tb_docker image inspect -f '{{index .Config.Labels "io.sbxcat.deployment"}}' "$H1")" "$DEV" \
	"the image is labelled with the deployment that built it"
present "$H1.$DEV"; ok $? "dev claims its content tag"
pw "$PROD" prod
is "$rc:$(result)" "0:cached" "prod finds the same image cached"
is "$(grep -c '^POST /v[0-9.]*/build' trace)" 0 "prod sends no build"
present "$H1.$PROD"; ok $? "prod claims the content tag it uses"

# dev moves on: the old recipe is prod's too, so only dev's claim goes.
cat_of dev two
H2=$(tag dev)
pw "$DEV" dev
is "$rc:$(result)" "0:built" "dev builds its changed recipe"
present "$H1" && present "$H1.$PROD"
ok $? "the content tag prod still uses is kept, with prod's claim"
present "$H1.$DEV"; ok $((!$?)) "dev's claim on it is given up"
grep -q "^    kept superseded $H1: used by deployment '$PROD'\$" out
ok $? "dev's report says the old image is kept for prod"
pw "$PROD" prod
is "$rc:$(result)" "0:cached" "prod still finds its image cached"

# prod moves on too: now nobody claims the old recipe, and it goes.
cat_of prod three
H3=$(tag prod)
pw "$PROD" prod
is "$rc:$(result)" "0:built" "prod builds its changed recipe"
present "$H1"; ok $((!$?)) "the recipe neither deployment uses any more is removed"
grep -q "^    removed superseded $H1\$" out; ok $? "prod's report says so"
present "$H2" && present "$H2.$DEV"; ok $? "dev's current image is untouched by prod's sweep"
pw "$DEV" dev
is "$rc:$(result)" "0:cached" "dev finds its image cached after prod's run"
present "$H3" && present "$H3.$PROD"; ok $? "prod's current image is untouched by dev's sweep"

# The default deployment: no SBXCAT_DEPLOYMENT_ID.
cat_of def one
SBXCAT_ENGINE_TRACE=$T/trace "$S" -C def.json prewarm >out 2>err
is "$?:$(result)" "0:built" "the default deployment builds"
present "$H1.default"; ok $? "its claim tag ends in .default"
done_testing
