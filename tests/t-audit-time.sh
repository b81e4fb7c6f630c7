#!/bin/sh
# t-audit-time.sh - --since/--until as people say them, and --local, through
# the command line against the private PostgreSQL (tests/pgbed.sh): rows
# planted a second either side of the boundaries each word names (today's
# and yesterday's midnight, a weekday's, 2 hours ago), in UTC and, with
# --local, in TZ's zone; the table's and stats' times in local time; every
# --since/--until example of docs/audit.md and sbxcat(1) accepted; hostile
# values refused with a short message.  The boundaries are computed by the
# database (date_trunc ... AT TIME ZONE), not by sbxcat's own code.
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/pgbed.sh
. "$srcdir/tests/pgbed.sh"
pgbed_start || skip_all "no PostgreSQL test-bed could be reached or started (reason above)"
DB=t_audit_time_$$
URL=$(pgbed_newdb "$DB") || bail_out "the test-bed runs but cannot make a database (reason above)"
T=$(mktemp -d) || bail_out "mktemp"
trap 'pgbed_dropdb "$DB" 2>/dev/null; rm -rf "$T"' EXIT
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGSERVICE PGSERVICEFILE \
	SBXCAT_AGENT_ID SBXCAT_RUN_ID SBXCAT_AUDIT TZ
SBXCAT_DATABASE_URL=$URL SBXCAT_SPOOL_DIR=$T/spool
export SBXCAT_DATABASE_URL SBXCAT_SPOOL_DIR
S=./sbxcat

sbx() {
	timeout -s KILL 60 "$S" "$@" >"$T/out" 2>"$T/err"
	rc=$?
}
q() { pgbed_psql "$DB" -c "$1"; }
# targets ARGS...: the targets audit ls --json ARGS lists, sorted, one line.
targets() {
	sbx audit ls --json --limit 1000 "$@"
	[ "$rc" = 0 ] || { printf 'exit %s: %s' "$rc" "$(cat "$T/err")"; return; }
	sed -n 's/.*"target":"\([^"]*\)".*/\1/p' "$T/out" | LC_ALL=C sort | tr '\n' ' '
}
# plant TARGET SQL-TIME: a row at that time.
plant() {
	q "INSERT INTO sandbox_operations (id, created_at, tenant, session_key,
	     runtime, op, target, ok, duration_ms, detail, hash)
	   VALUES (gen_random_uuid(), $2, 'acme', 'k', 'py', 'read', '$1', true,
	     1, '', decode(repeat('00', 32), 'hex'))" >/dev/null ||
		bail_out "planting $1"
}

sbx audit migrate
[ "$rc" = 0 ] || bail_out "audit migrate: $(cat "$T/err")"

# -- The days, in UTC (TZ set elsewhere changes nothing without --local).
# M: today's midnight in UTC, as the database says; a weekday three days
# back, and today's own weekday (a week back).
# The test takes seconds: not across a midnight of the zones it uses.
for zone in UTC America/New_York Asia/Kolkata Pacific/Chatham; do
	left=$(q "SELECT ceil(extract(epoch FROM date_trunc('day', now() AT TIME ZONE '$zone')
	            + interval '1 day' - now() AT TIME ZONE '$zone'))::int")
	if [ "$left" -lt 90 ]; then
		diag "$left s to midnight in $zone: waiting past it"
		sleep $((left + 1))
	fi
done
mid="(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"
wd3=$(q "SELECT lower(to_char($mid - interval '3 days', 'FMDay'))")
wd0=$(q "SELECT lower(to_char($mid, 'FMDay'))")
plant day/today-0 "$mid - interval '1 second'"
plant day/today-1 "$mid"
plant day/yest-0 "$mid - interval '1 day 1 second'"
plant day/yest-1 "$mid - interval '1 day'"
plant day/wd3-0 "$mid - interval '3 days 1 second'"
plant day/wd3-1 "$mid - interval '3 days'"
plant day/wd7-0 "$mid - interval '7 days 1 second'"
plant day/wd7-1 "$mid - interval '7 days'"
plant ago/2h-0 "now() - interval '2 hours 1 minute'"
plant ago/2h-1 "now() - interval '2 hours' + interval '1 minute'"
plant ago/3d-0 "now() - interval '3 days 1 minute'"
plant ago/3d-1 "now() - interval '3 days' + interval '1 minute'"
plant ago/2w-0 "now() - interval '14 days 1 minute'"
plant ago/2w-1 "now() - interval '14 days' + interval '1 minute'"

is "$(targets --search day/ --since today)" "day/today-1 " "--since today: from today's midnight (UTC)"
is "$(targets --search day/ --since Today --until now)" "day/today-1 " "--since Today --until now"
is "$(targets --search day/ --since yesterday --until today)" "day/today-0 day/yest-1 " \
	"--since yesterday --until today: yesterday, whole"
is "$(targets --search day/ --since "$wd3" --until "2 days ago")" "day/wd3-1 " \
	"--since $wd3 (three days back) --until '2 days ago'"
is "$(targets --search day/ --since "last $wd3")" "$(targets --search day/ --since "$wd3")" \
	"--since 'last $wd3' is --since $wd3"
is "$(targets --search day/ --since "$wd0" --until "$wd3")" "day/wd3-0 day/wd7-1 " \
	"--since $wd0 (today's weekday): a week back"
is "$(targets --search day/ --until "$wd0")" "day/wd7-0 " "--until $wd0: before a week back"
is "$(targets --search day/ --since "$wd3" --until "$wd3 + 1 day")" "day/wd3-1 " \
	"--since $wd3 --until '$wd3 + 1 day': that day, whole"
is "$(targets --search day/ --since "yesterday - 2d" --until "today - 1 day")" "day/wd3-1 day/yest-0 " \
	"--since 'yesterday - 2d' --until 'today - 1 day'"
TZ=Asia/Kolkata
export TZ
is "$(targets --search day/ --since today)" "day/today-1 " "TZ alone changes nothing: --since today is UTC's"
unset TZ

is "$(targets --search ago/ --since '2h ago')" "ago/2h-1 " "--since '2h ago'"
is "$(targets --search ago/ --since '2 hours ago')" "ago/2h-1 " "--since '2 hours ago'"
is "$(targets --search ago/ --since 2h)" "ago/2h-1 " "--since 2h (as before)"
is "$(targets --search ago/ --since '3 days ago' --until '2 hours ago')" "ago/2h-0 ago/3d-1 " \
	"--since '3 days ago' --until '2 hours ago'"
is "$(targets --search ago/ --since '2w ago' --until '1 day ago')" "ago/2w-1 ago/3d-0 ago/3d-1 " \
	"--since '2w ago' (sbxcat(1)'s) --until '1 day ago'"
is "$(targets --search ago/ --since '2 weeks' --until '3 days')" "ago/2w-1 ago/3d-0 " \
	"--since '2 weeks' --until '3 days'"

# -- --local: the days in TZ's zone, and the table in local time.
for zone in America/New_York Asia/Kolkata Pacific/Chatham; do
	lmid="(date_trunc('day', now() AT TIME ZONE '$zone') AT TIME ZONE '$zone')"
	tag=$(echo "$zone" | tr '/' '_')
	plant "loc/$tag/today-0" "$lmid - interval '1 second'"
	plant "loc/$tag/today-1" "$lmid"
	plant "loc/$tag/yest-1" "$lmid - interval '1 day'"
	TZ=$zone
	export TZ
	is "$(targets --search "loc/$tag/" --since today --local)" "loc/$tag/today-1 " \
		"TZ=$zone --local --since today: the zone's midnight"
	is "$(targets --search "loc/$tag/" --local --since yesterday --until today)" \
		"loc/$tag/today-0 loc/$tag/yest-1 " "TZ=$zone --local --since yesterday --until today"
	is "$(targets --search "loc/$tag/" --local --since yesterday --until "yesterday + 1 day")" \
		"loc/$tag/today-0 loc/$tag/yest-1 " "TZ=$zone --local --since yesterday --until 'yesterday + 1 day'"
	# a time without a zone: the zone's, --local before or after it
	at=$(q "SELECT to_char($lmid AT TIME ZONE '$zone', 'YYYY-MM-DD\"T\"HH24:MI:SS')")
	is "$(targets --search "loc/$tag/" --since "$at" --local)" "loc/$tag/today-1 " \
		"TZ=$zone --since $at --local: local time"
	is "$(targets --search "loc/$tag/" --local --since "$at")" "loc/$tag/today-1 " \
		"TZ=$zone --local --since $at: the same"
	unset TZ
done

# The table: local times with their offset, the header no longer UTC's.
TZ=Asia/Kolkata
export TZ
sbx audit ls --search day/today-1 --local
want=$(q "SELECT to_char($mid AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM-DD HH24:MI:SS') || '+05:30'")
is "$rc:$(head -n 1 "$T/out" | cut -f 1):$(sed -n 2p "$T/out" | cut -f 1)" "0:TIME:$want" \
	"audit ls --local: the table's time in local time with its offset"
sbx audit ls --search day/today-1
want=$(q "SELECT to_char($mid AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')")
is "$rc:$(head -n 1 "$T/out" | cut -f 1):$(sed -n 2p "$T/out" | cut -f 1)" "0:TIME (UTC):$want" \
	"audit ls without --local: UTC, as before"
sbx audit ls --search day/today-1 --local --json
want=$(q "SELECT to_char($mid AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")
case $(cat "$T/out") in
*"\"created_at\":\"$want\""*) ok 0 "audit ls --local --json: JSON stays UTC" ;;
*) ok 1 "audit ls --local --json: JSON stays UTC"; diag "$(cat "$T/out")" ;;
esac
sbx audit stats --local --since "2026-01-01 05:30"
is "$rc:$(head -n 1 "$T/out" | sed 's/.*since //')" "0:2026-01-01T05:30:00+05:30" \
	"audit stats --local: the window's start in local time, as given"
sbx audit stats --since "2026-01-01 05:30"
is "$rc:$(head -n 1 "$T/out" | sed 's/.*since //')" "0:2026-01-01T05:30:00.000000Z" \
	"audit stats: UTC without --local"
unset TZ

# -- Every example of the docs, accepted (a time or a command line).
for t in 2026-12-01 2026-12-01T10:00 2026-12-01T10:00:00Z \
	2026-12-01T10:00:00+02:00 2026-12-01T10:00:00.250+02:00 \
	"2026-12-01 10:00" 30s 15m 30m 2h 7d 2w "2w ago" \
	"2h ago" "1 day ago" "3 days ago" "1 hour ago" "3 weeks ago" \
	"10 min ago" now today yesterday tuesday "last tuesday" tue \
	"tuesday + 1 day" "yesterday + 12h" "2026-12-01 - 1 week" \
	"2026-03-29T02:30"; do
	sbx audit ls --since "$t" --limit 1
	is "$rc" 0 "the docs' --since '$t'"
	sbx audit ls --since "$t" --limit 1 --local
	is "$rc" 0 "the docs' --since '$t' --local"
done
# The command lines of docs/audit.md's examples (indented blocks) and of
# sbxcat(1)'s (.EX blocks, "\-" unescaped) that take a time, as written.
{
	sed -n 's/^    \(sbxcat audit [a-z]* .*--\(since\|until\) .*\)/\1/p' \
		"$srcdir/docs/audit.md"
	sed -n 's/\\-/-/g; s/^\(sbxcat audit [a-z]* .*--\(since\|until\) .*\)/\1/p' \
		"$srcdir/docs/sbxcat.1"
} | sort -u >"$T/lines"
[ "$(wc -l <"$T/lines")" -ge 4 ] || bail_out "the docs' examples with --since are not found"
while IFS= read -r line; do
	line=${line%%>*}
	line=${line%%|*}
	eval "set -- ${line#sbxcat }"
	sbx "$@"
	is "$rc" 0 "the docs' example: $line"
done <"$T/lines"

# -- Refused, the value named, short, exit status 2.
sbx audit ls --since '2 months ago'
is "$rc" 2 "--since '2 months ago': usage error"
case $(cat "$T/err") in
*"'2 months ago': months and years have no fixed length"*) ok 0 "... says why" ;;
*) ok 1 "... says why"; diag "$(cat "$T/err")" ;;
esac
sbx audit ls --since 'next tuesday'
is "$rc" 2 "--since 'next tuesday': usage error"
# (an argument is at most 128 KiB on Linux: the 10 MB ones are t-auditq's)
big=$(head -c 120000 /dev/zero | tr '\0' 9)
sbx audit ls --since "${big}d"
is "$rc" 2 "--since of 120,000 digits: usage error"
[ "$(wc -c <"$T/err")" -lt 2000 ] && grep -q "too far back" "$T/err"
ok $? "... a short message (too far back), not the value whole"
sbx audit ls --since "$(printf '\377\376 days ago')"
is "$rc" 2 "--since not UTF-8: usage error"
grep -q "'\\\\xff\\\\xfe days ago'" "$T/err"
ok $? "... the value named, escaped"
sbx audit ls --since today --until yesterday
is "$rc" 2 "--since today --until yesterday: --until must come after --since"
sbx audit verify --local
is "$rc" 2 "audit verify --local: refused (it takes no time)"

done_testing
