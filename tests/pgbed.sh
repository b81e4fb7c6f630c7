# tests/pgbed.sh - a private PostgreSQL 15 for sbxcat's audit tests.
#
# Source it from a POSIX-sh test script:
#   . "$srcdir/tests/pgbed.sh"
#   pgbed_start || skip_all "no PostgreSQL"	# the reason is on stderr
#   url=$(pgbed_newdb t_audit) || skip_all "cannot create a database"
#   SBXCAT_DATABASE_URL=$url sbxcat audit migrate
#
# pgbed_start makes sure a server answers: SBXCAT_TEST_DATABASE_URL when
# set (then nothing is started), else the test-bed's own cluster, started
# here (as root) when it is not running and left running for the next tests
# (make -j runs several at once; a lock keeps them from starting two).
# pgbed_stop stops that cluster, and only that one.  pgbed_url prints the
# conninfo of the server; pgbed_newdb NAME drops and creates the database
# NAME there and prints its conninfo, so each test has a database of its
# own and tests never see each other's rows.
#
# The cluster never listens on TCP (listen_addresses=''): its only socket
# is RUN/.s.PGSQL.5432, in a directory only root and the cluster's user can
# enter; it trusts whoever reaches that socket (initdb -A trust, superuser
# sbxcat).  The system's own cluster (/var/lib/postgresql/15/main, port
# 5432 on /var/run/postgresql) is never touched.  initdb and postgres
# refuse to run as root: the cluster runs as the `postgres` user when there
# is one, else as a system user sbxcat-pg made here.  fsync stays on (the
# crash tests need what a commit promises); only the bookkeeping a
# throwaway cluster does not need is off.
#
# Run as a script: sh tests/pgbed.sh start|stop|status (see the end).
#
# SBXCAT_PGBED_RUN and SBXCAT_PGBED_DATA move the test-bed (absolute paths
# without blanks; defaults /run/sbxcat-pgbed, the socket, the log and the
# lock, and /var/lib/sbxcat-pgbed, the cluster, kept between runs).

PGB_RUN=${SBXCAT_PGBED_RUN:-/run/sbxcat-pgbed}
PGB_DATA=${SBXCAT_PGBED_DATA:-/var/lib/sbxcat-pgbed}
PGB_BIN=/usr/lib/postgresql/15/bin
PGB_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

pgb_say() { echo "pgbed: $*" >&2; }

# The caller's libpq environment must not steer the private cluster's
# connections elsewhere: PGHOSTADDR wins over host=, PGPORT renames the
# socket, a service or PGOPTIONS adds settings; and a DROP DATABASE ...
# WITH (FORCE) meant for the test-bed must never reach another server.
# With SBXCAT_TEST_DATABASE_URL the caller chose the server, and keeps
# the environment its URL may rely on (a password file, say).
if [ -z "${SBXCAT_TEST_DATABASE_URL:-}" ]; then
	unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGPASSFILE \
		PGSERVICE PGSERVICEFILE PGOPTIONS PGSSLMODE PGREQUIRESSL \
		PGTARGETSESSIONATTRS PGLOCALEDIR PGSYSCONFDIR 2>/dev/null || :
fi

# pgb_user: print the user the cluster runs as (making sbxcat-pg when
# there is no postgres user and we are root).
pgb_user() {
	if id -u postgres >/dev/null 2>&1; then echo postgres; return 0; fi
	if ! id -u sbxcat-pg >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || { pgb_say "no postgres user, and only root can make one"; return 1; }
		PATH=$PGB_PATH useradd --system --user-group --no-create-home \
			--home-dir "$PGB_DATA" --shell /usr/sbin/nologin sbxcat-pg || {
			pgb_say "cannot make the system user sbxcat-pg (useradd)"; return 1; }
	fi
	echo sbxcat-pg
}

# pgb_as USER CMD...: run CMD as USER (its groups, no others), from /.
pgb_as() {
	pgb_u=$1; shift
	( cd / && PATH=$PGB_PATH exec setpriv --reuid="$pgb_u" \
		--regid="$(id -g "$pgb_u")" --init-groups "$@" )
}

# pgb_ready: does the cluster at PGB_RUN answer?
pgb_ready() {
	"$PGB_BIN/pg_isready" -q -h "$PGB_RUN" -U sbxcat -d postgres -t 3 2>/dev/null
}

# pgb_locked CMD...: run CMD in a subshell holding the test-bed's lock, so
# tests started together neither run initdb twice nor start two servers.
pgb_locked() {
	# shellcheck disable=SC2015
	mkdir -p "$PGB_RUN" 2>/dev/null && [ -w "$PGB_RUN" ] || {
		pgb_say "cannot write $PGB_RUN (only root can start the test-bed cluster)"
		return 1; }
	( flock -w 120 9 || { pgb_say "timed out waiting for $PGB_RUN/lock"; exit 1; }
	  "$@" ) 9>>"$PGB_RUN/lock"
}

# The server's options, given at every start (so a kept cluster gets this
# version's settings): the socket in RUN only, no TCP, nothing written
# for replication or statistics that a test cluster does not need.
pgb_opts() {
	printf '%s' "-k $PGB_RUN -c listen_addresses='' -c unix_socket_permissions=0700" \
		" -c wal_level=minimal -c max_wal_senders=0 -c max_wal_size=1GB" \
		" -c checkpoint_timeout=30min -c track_counts=on -c log_min_messages=warning" \
		" -c max_connections=200"
}

# pgb_start (under the lock): initdb the cluster when it is not there, then
# start it unless it answers, and wait for it.
pgb_start() {
	pgb_ready && return 0	# another test started it meanwhile
	# shellcheck disable=SC2015
	[ -x "$PGB_BIN/postgres" ] && [ -x "$PGB_BIN/initdb" ] || {
		pgb_say "the PostgreSQL 15 server is missing ($PGB_BIN/postgres; apt-get install postgresql-15)"
		return 1; }
	pgb_u=$(pgb_user) || return 1
	mkdir -p "$PGB_DATA" || return 1
	chown "$pgb_u:" "$PGB_RUN" "$PGB_DATA" && chmod 700 "$PGB_RUN" "$PGB_DATA" || return 1
	if [ ! -s "$PGB_DATA/data/PG_VERSION" ]; then
		rm -rf "$PGB_DATA/data"
		pgb_loc=C
		locale -a 2>/dev/null | grep -qix 'c\.utf-\?8' && pgb_loc=C.UTF-8
		pgb_as "$pgb_u" "$PGB_BIN/initdb" -D "$PGB_DATA/data" -A trust -U sbxcat \
			-E UTF8 --locale="$pgb_loc" >"$PGB_RUN/initdb.log" 2>&1 || {
			pgb_say "initdb failed; $PGB_RUN/initdb.log ends:"
			tail -n 5 "$PGB_RUN/initdb.log" >&2; return 1; }
	fi
	# The log is the server's: it must be able to write it.
	touch "$PGB_RUN/postgres.log" && chown "$pgb_u:" "$PGB_RUN/postgres.log"
	# pg_ctl forks the server into a session of its own; it must hold none
	# of our fds (not fd 9, the lock, nor the harness's).
	pgb_as "$pgb_u" "$PGB_BIN/pg_ctl" -D "$PGB_DATA/data" -o "$(pgb_opts)" \
		-l "$PGB_RUN/postgres.log" -w -t 60 start \
		</dev/null >/dev/null 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- || {
		pgb_say "the cluster did not start; $PGB_RUN/postgres.log ends:"
		tail -n 5 "$PGB_RUN/postgres.log" >&2; return 1; }
	pgb_ready || { pgb_say "the cluster started but does not answer on $PGB_RUN"; return 1; }
}

# pgb_stop (under the lock): stop the cluster of PGB_DATA, if it runs.
pgb_stop() {
	[ -f "$PGB_DATA/data/postmaster.pid" ] || return 0
	pgb_u=$(stat -c %U "$PGB_DATA/data") || return 1
	pgb_as "$pgb_u" "$PGB_BIN/pg_ctl" -D "$PGB_DATA/data" -m fast -w -t 60 stop \
		>/dev/null 2>&1 || {
		pgb_as "$pgb_u" "$PGB_BIN/pg_ctl" -D "$PGB_DATA/data" status >/dev/null 2>&1 &&
			{ pgb_say "the cluster of $PGB_DATA did not stop"; return 1; }
		return 0; }
}

pgbed_start() {
	if [ -n "${SBXCAT_TEST_DATABASE_URL:-}" ]; then
		pgbed_psql postgres -c 'SELECT 1' >/dev/null 2>&1 && return 0
		pgb_say "SBXCAT_TEST_DATABASE_URL does not answer"
		return 1
	fi
	pgb_ready && return 0
	[ "$(id -u)" = 0 ] || {
		pgb_say "no test-bed cluster answers on $PGB_RUN and only root can start one (sh tests/pgbed.sh start)"
		return 1; }
	pgb_locked pgb_start
}

pgbed_stop() {
	[ -d "$PGB_DATA/data" ] || return 0
	pgb_locked pgb_stop
}

# pgbed_url [DBNAME]: the conninfo of the server (of its database DBNAME;
# default postgres, or the URL's own).
pgbed_url() {
	if [ -n "${SBXCAT_TEST_DATABASE_URL:-}" ]; then
		case $SBXCAT_TEST_DATABASE_URL in
		postgres://* | postgresql://*)
			# Replace the URI's path (the database), keep its query.
			if [ -n "${1:-}" ]; then
				printf '%s\n' "$SBXCAT_TEST_DATABASE_URL" |
					sed -E "s#^(postgres(ql)?://[^/?]*)(/[^?]*)?#\\1/$1#"
			else
				printf '%s\n' "$SBXCAT_TEST_DATABASE_URL"
			fi ;;
		*)	# key=value: a later keyword wins.
			printf '%s%s\n' "$SBXCAT_TEST_DATABASE_URL" "${1:+ dbname=$1}" ;;
		esac
	else
		echo "host=$PGB_RUN user=sbxcat dbname=${1:-postgres}"
	fi
}

# pgbed_psql DBNAME ARGS...: psql on the server's database DBNAME, quiet,
# stopping at the first error.
pgbed_psql() {
	pgb_db=$1; shift
	PGCONNECT_TIMEOUT=10 PGOPTIONS="-c client_min_messages=warning" "$PGB_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 \
		"$(pgbed_url "$pgb_db")" "$@"
}

# pgbed_newdb NAME: a fresh database NAME (lowercase letters, digits, _;
# dropped first when it exists) and print its conninfo.
pgbed_newdb() {
	case $1 in
	'' | *[!a-z0-9_]* | [0-9]*) pgb_say "pgbed_newdb: bad database name '$1'"; return 1 ;;
	esac
	pgbed_psql postgres -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" \
		-c "CREATE DATABASE $1" >/dev/null || {
		pgb_say "cannot create the database $1 on $(pgbed_url)"; return 1; }
	pgbed_url "$1"
}

# pgbed_dropdb NAME: drop a test's database.
pgbed_dropdb() {
	pgbed_psql postgres -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" >/dev/null
}

# pgbed_own DIR PORT: write DIR/pgc.sh, a cluster of the test's own (a
# database to stop, kill and restart without touching the shared
# test-bed): pgbed's functions on DIR/pgc-run and DIR/pgc-data, with PORT
# on its socket.  "sh DIR/pgc.sh start" starts it; "sh DIR/pgc.sh stop
# [MODE]" stops it (pg_ctl's mode, immediate unless given).  Its conninfo:
# host=DIR/pgc-run port=PORT user=sbxcat dbname=postgres.  A script, not
# functions, so the test's helpers (Python, C) can stop and start it too.
pgbed_own() {
	cat >"$1/pgc.sh" <<SH
SBXCAT_PGBED_RUN=$1/pgc-run SBXCAT_PGBED_DATA=$1/pgc-data
export SBXCAT_PGBED_RUN SBXCAT_PGBED_DATA
. "$srcdir/tests/pgbed.sh"
pgc_base=\$(pgb_opts)
pgb_opts() { printf '%s -p $2' "\$pgc_base"; }
pgb_ready() { "\$PGB_BIN/pg_isready" -q -h "\$PGB_RUN" -p $2 -U sbxcat -d postgres -t 3 2>/dev/null; }
case \$1 in
start) mkdir -p "\$PGB_RUN" && pgb_start ;;
stop) [ -f "\$PGB_DATA/data/postmaster.pid" ] || exit 0
	pgb_as "\$(stat -c %U "\$PGB_DATA/data")" "\$PGB_BIN/pg_ctl" -D "\$PGB_DATA/data" -m "\${2:-immediate}" -w stop >/dev/null 2>&1 ;;
esac
SH
}

# As a script: start the cluster and print its conninfo, stop it, or say
# whether it runs.
case ${0##*/} in
pgbed.sh)
	case ${1:-} in
	start)
		[ "$(id -u)" = 0 ] || pgb_ready ||
			{ pgb_say "only root can start the test-bed cluster"; exit 3; }
		pgbed_start || exit 1
		pgbed_url ;;
	stop) pgbed_stop ;;
	status)
		if pgb_ready; then
			echo "pgbed: running, $(pgbed_url), data $PGB_DATA/data, log $PGB_RUN/postgres.log"
		else
			echo "pgbed: not running"; exit 1
		fi ;;
	*) echo "usage: sh tests/pgbed.sh start|stop|status" >&2; exit 2 ;;
	esac ;;
esac
