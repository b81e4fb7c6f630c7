#!/bin/sh
# t-serve-policy.sh - issue 28, items 4, 9 and 11, against a real `sbxcat
# serve` (curl on its unix socket) and the test-bed engine:
#
#   - One size parser (basic/size.h): PUT /policy's mem_limit,
#     memswap_limit, tmpfs_size (top level and per runtime) outside the
#     catalogue's grammar or minimum ("1k", "1t", "1.5g", ...) are 422
#     naming the field and why, and change nothing (the overrides file
#     untouched, GET /policy as before); a good one reaches the engine
#     (the container's Memory).  The environment and the overrides file
#     are held to the same grammar.
#   - Opens without a tenant are no tenant's: SessionInfo.tenant is null,
#     no per-tenant ceiling counts them (sandboxd's rule); the host's
#     ceiling still holds; a tenant's token still opens as its tenant, and
#     never sees them.  SBXCAT_SERVE_TENANT is an explicit opt-in.
#   - A client's disk budget with no SANDBOXD_WORKSPACE_QUOTA: at most 1g,
#     else 422, nothing made.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
command -v curl >/dev/null || skip_all "curl is missing"
sb_init servepol sp
trap 'sb_serve_stop; sb_cleanup' EXIT

TOKEN=svc-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
TA=ta-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf 'acme %s\n' "$TA" >"$T/tenants"
chmod 600 "$T/tenants"
SOCK=$T/serve.sock
POL=$T/policy.json
SANDBOXD_TOKEN=$TOKEN SANDBOXD_POLICY_OVERRIDES=$POL SANDBOXD_MAX_SESSIONS_PER_TENANT=2
export SANDBOXD_TOKEN SANDBOXD_POLICY_OVERRIDES SANDBOXD_MAX_SESSIONS_PER_TENANT
unset SANDBOXD_WORKSPACE_QUOTA SANDBOXD_WORKSPACE_INODES SBXCAT_SERVE_TENANT

# serve [ENV=VALUE...]: a service on $SOCK with the tenants file; the
# status of its start in $rc (0: it answers /healthz).
serve() {
	sb_serve_stop
	rm -f "$SOCK"
	env "$@" "$S" -C "$CAT" serve --listen "unix:$SOCK" --tenants "$T/tenants" \
		2>>"$T/log" &
	SPID=$!
	sb_serve_wait "$SOCK"
	curl -sf --unix-socket "$SOCK" http://x/healthz >/dev/null 2>&1
	rc=$?
}
# detail: the 422's first entry as "LOC|MSG", or the detail string.
detail() { jq -r 'if (.detail | type) == "array" then (.detail[0].loc | join(".")) + "|" + .detail[0].msg else .detail end' "$T/w"; }
open_w() { sb_wire POST /sessions "$1" "${2:-$TOKEN}"; }

serve
is "$rc" 0 "sbxcat serve starts" || { sed 's/^/# /' "$T/log"; bail_out "no service"; }

# -- Item 11: one size parser.
sb_wire PUT /policy '{"max_sessions": 50}'
is "$st" 200 "a good PUT /policy writes the overrides file"
sum0=$(sha256sum "$POL")
sb_wire GET /policy
mem0=$(jq -r .mem_limit "$T/w")
for bad in '"1k"|below Docker'"'"'s minimum of 6m' '"5m"|below Docker'"'"'s minimum of 6m' \
	'"1t"|is not a size' '"1.5g"|is not a size' '"2gb"|is not a size' '"0"|greater than zero' \
	'""|is not a size' '" 2g"|is not a size' '"99999999999999g"|is too large' \
	'1073741824|expected a size as a string'; do
	v=${bad%%|*} why=${bad#*|}
	sb_wire PUT /policy "{\"mem_limit\": $v}"
	like "$st:$(detail)" "^422:body\\.mem_limit\\|.*$why" "PUT /policy mem_limit $v: 422 naming the field, $why"
done
for bad in 'memswap_limit|"1k"|below Docker' 'memswap_limit|"1.5g"|is not a size' \
	'memswap_limit|"2g"|sbxcat fixes it' 'tmpfs_size|"1t"|is not a size' \
	'tmpfs_size|"0"|greater than zero' 'tmpfs_size|"128m"|sbxcat fixes it'; do
	fld=${bad%%|*} rest=${bad#*|} v=${rest%%|*} why=${rest#*|}
	sb_wire PUT /policy "{\"$fld\": $v}"
	like "$st:$(detail)" "^422:body\\.$fld\\|.*$why" "PUT /policy $fld $v: 422, $why"
done
for bad in "mem_limit|\"1k\"|$RSMALL.mem_limit: '1k' is below" "mem_limit|\"1.5g\"|$RSMALL.mem_limit: '1.5g' is not a size" \
	"memswap_limit|\"1t\"|$RSMALL.memswap_limit: '1t' is not a size" "cpus|2|$RSMALL.cpus: not a field"; do
	fld=${bad%%|*} rest=${bad#*|} v=${rest%%|*} why=${rest#*|}
	sb_wire PUT /policy "{\"runtimes\": {\"$RSMALL\": {\"$fld\": $v}}}"
	like "$st:$(detail)" "^422:body\\.runtimes\\|$why" "PUT /policy runtimes.$RSMALL.$fld $v: 422, $why"
done
sb_wire PUT /policy '{"max_sessions": 60, "mem_limit": "1k"}'
is "$st" 422 "a bad size beside a good field: 422"
is "$(sha256sum "$POL")" "$sum0" "no refused PUT touched the overrides file"
sb_wire GET /policy
is "$(jq -r '"\(.mem_limit) \(.max_sessions)"' "$T/w")" "$mem0 50" "... nor the policy in force"

sb_wire PUT /policy '{"mem_limit": "96m", "runtimes": {"'"$RSMALL"'": {"mem_limit": "80m"}}}'
is "$st:$(jq -r '.mem_limit' "$T/w")" "200:96m" "a good mem_limit is taken"
open_w '{"session_id": "mem-1", "runtime": "'"$RA"'"}'
key=$(sb_wire_key "$(jq -r .session.session_id "$T/w")")
is "$st:$(tb_docker inspect -f '{{.HostConfig.Memory}}' "$(tb_docker ps -q --filter "label=io.sbxcat.key=$key")")" \
	"200:100663296" "... and reaches the engine: the next open's container has 96m"
open_w '{"session_id": "mem-2", "runtime": "'"$RSMALL"'"}'
key=$(sb_wire_key "$(jq -r .session.session_id "$T/w")")
is "$st:$(tb_docker inspect -f '{{.HostConfig.Memory}}' "$(tb_docker ps -q --filter "label=io.sbxcat.key=$key")")" \
	"200:83886080" "... a runtime's mem_limit too (80m)"
for id in mem-1 mem-2; do sb_wire DELETE "/sessions/$id?purge=true"; done
sb_wire PUT /policy '{"mem_limit": "1g", "runtimes": {"'"$RSMALL"'": {"mem_limit": "64m"}}}'

# The overrides file is held to the same grammar (edited by hand).
sb_serve_stop
cp "$POL" "$T/policy.good"
jq --arg rt "$RSMALL" '.runtimes[$rt].mem_limit = "1.5g"' "$T/policy.good" >"$POL"
serve
ok $((rc == 0)) "an overrides file with a runtime's mem_limit of 1.5g: the service does not start"
grep -q "runtimes.$RSMALL.mem_limit: '1.5g' is not a size" "$T/log"
ok $? "... saying which field and why"
cp "$T/policy.good" "$POL"
# The environment too: the command line reads it as the service does.
SANDBOXD_MEM_LIMIT=1.5g sbx session open --tenant acme --scope run --subject envmem --runtime "$RA"
like "$rc:$(err)" "^2:.*SANDBOXD_MEM_LIMIT: '1.5g' is not a size" "SANDBOXD_MEM_LIMIT=1.5g: refused (exit 2), saying why"
SANDBOXD_MEM_LIMIT=1k sbx session open --tenant acme --scope run --subject envmem --runtime "$RA"
like "$rc:$(err)" "^2:.*SANDBOXD_MEM_LIMIT: '1k' is below Docker's minimum of 6m" "SANDBOXD_MEM_LIMIT=1k: refused"
SANDBOXD_WORKSPACE_QUOTA=1t sbx session open --tenant acme --scope run --subject envmem --runtime "$RA"
like "$rc:$(err)" "^2:.*SANDBOXD_WORKSPACE_QUOTA: '1t' is not a size" "SANDBOXD_WORKSPACE_QUOTA=1t: refused"

# -- Item 4: opens without a tenant.
serve
is "$rc" 0 "the service starts again"
sb_wire PUT /policy '{"max_sessions": 8}'
is "$st:$(jq -r '"\(.max_sessions) \(.max_sessions_per_tenant)"' "$T/w")" "200:8 2" "host ceiling 8, per tenant 2"
n=0
for i in 1 2 3; do
	open_w '{"session_id": "nt-'"$i"'", "runtime": "'"$RSMALL"'", "tenant": null}'
	[ "$st" = 200 ] && [ "$(jq -r '.session.tenant' "$T/w")" = null ] && n=$((n + 1))
done
is "$n" 3 "three opens without a tenant under a per-tenant ceiling of 2: all 200, tenant null"
open_w '{"session_id": "nt-4", "runtime": "'"$RSMALL"'"}'
is "$st:$(jq -r '.session.tenant' "$T/w")" "200:null" "... a fourth with no tenant field at all"
TOK4=$(jq -r .token "$T/w")
sb_wire GET /sessions/nt-4 "" "$TOK4"
is "$st:$(jq -r '.tenant' "$T/w")" "200:null" "GET /sessions/{id}: tenant null"
sb_wire GET /sessions
is "$(jq -r '[.sessions[] | select(.session_id | startswith("nt-")) | .tenant] | unique | tostring' "$T/w")" '[null]' \
	"GET /sessions: every tenant-less session's tenant is null"
open_w '{"session_id": "t4-1", "runtime": "'"$RSMALL"'", "tenant": "t4"}'
open_w '{"session_id": "t4-2", "runtime": "'"$RSMALL"'", "tenant": "t4"}'
is "$st:$(jq -r .session.tenant "$T/w")" "200:t4" "a named tenant opens"
open_w '{"session_id": "t4-3", "runtime": "'"$RSMALL"'", "tenant": "t4"}'
is "$st:$(detail)" "429:Tenant 't4' already holds 2 of 2 sessions. Release an idle session before opening another." \
	"... and its third is 429: the ceiling holds for a tenant"
open_w '{"session_id": "ac-1", "runtime": "'"$RSMALL"'", "tenant": null}' "$TA"
is "$st:$(jq -r .session.tenant "$T/w")" "200:acme" "a tenant's token with tenant null opens as its tenant"
open_w '{"session_id": "ac-2", "runtime": "'"$RSMALL"'"}' "$TA"
is "$st" 200 "... its second"
sb_wire GET /sessions/nt-1 "" "$TA"
like "$st" '^(401|404)$' "a tenant's token does not reach a tenant-less session ($st)"
sb_wire GET /sessions "" "$TA"
is "$(jq -r '[.sessions[].session_id] | sort | join(",")' "$T/w")" "ac-1,ac-2" "... nor lists one"
open_w '{"session_id": "nt-5", "runtime": "'"$RSMALL"'"}'
is "$st:$(detail)" "429:Session limit of 8 reached. Release an idle session before opening another." \
	"the host's ceiling still holds for opens without a tenant"
open_w '{"session_id": "nt-1", "runtime": "'"$RSMALL"'", "reuse": true}'
is "$st:$(jq -r .session.tenant "$T/w")" "200:null" "a reuse of a tenant-less session: tenant null"
for id in nt-1 nt-2 nt-3 nt-4 t4-1 t4-2 ac-1 ac-2; do sb_wire DELETE "/sessions/$id?purge=true"; done

# SBXCAT_SERVE_TENANT: an explicit opt-in.
serve SBXCAT_SERVE_TENANT=legacy
open_w '{"session_id": "lg-1", "runtime": "'"$RSMALL"'"}'
is "$st:$(jq -r .session.tenant "$T/w")" "200:legacy" "SBXCAT_SERVE_TENANT=legacy: an open naming none is legacy's"
open_w '{"session_id": "lg-2", "runtime": "'"$RSMALL"'"}'
open_w '{"session_id": "lg-3", "runtime": "'"$RSMALL"'"}'
is "$st" 429 "... and counts against its ceiling"
for id in lg-1 lg-2; do sb_wire DELETE "/sessions/$id?purge=true"; done
serve "SBXCAT_SERVE_TENANT=bad tenant"
ok $((rc == 0)) "SBXCAT_SERVE_TENANT outside the wire's pattern: the service does not start"
grep -q "SBXCAT_SERVE_TENANT: not a tenant" "$T/log"
ok $? "... saying why"
# The command line has no tenant-less open: its keys fold the tenant in.
sbx session open --scope run --subject notenant --runtime "$RA"
like "$rc:$(err)" "^2:.*tenant is required" "session open without --tenant: refused (exit 2)"

# -- Item 9: a client's budget with no ceiling configured.
serve
for q in '"15t"|is not a size' '"15360g"|over 1g, the most an open may ask' \
	'"1025m"|over 1g' '16492674416640|over 1g'; do
	v=${q%%|*} why=${q#*|}
	open_w '{"session_id": "dq", "runtime": "'"$RSMALL"'", "disk_quota": '"$v"'}'
	like "$st:$(detail)" "^422:.*$why" "no SANDBOXD_WORKSPACE_QUOTA: disk_quota $v is 422 ($why)"
done
is "$(find "$ROOT" -name '*.img*' | wc -l | tr -d ' ')" 0 "... and no image was made"
sb_serve_stop

sb_done
