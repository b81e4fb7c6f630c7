#!/bin/sh
# t-engine.sh - the engine client's errors and deadlines, as a user meets
# them: a missing socket, a socket the user may not open, a socket nobody
# listens on, an engine too old, a server that is not an engine, the exact
# request a build sends (chunked tar, no Expect, the same bytes each time),
# and an engine that dies or freezes in the middle of a build, which must
# end in an error within the deadline and never in a hang.
#
# The dying engine is a second dockerd started here, with its own data,
# exec root, pid file and socket under a temporary directory: the shared
# test-bed engine is never stopped or killed.
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}
# Debian's own python3 first: a version manager's shim costs 0.4 s a start.
PY=$(command -v /usr/bin/python3 python3 | head -n 1)

T=$(mktemp -d /tmp/sbxcat-engine.XXXXXX)
chmod 755 "$T"
fakes=""
d2pid=""
cleanup() {
	for p in $fakes; do kill "$p" 2>/dev/null; done
	d2_stop
	# A shim whose containerd was killed outlives everything: end the
	# processes that run from this test's directory, by pid.
	for p in $(grep -ls "$T/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
		[ "$p" != $$ ] && kill "$p" 2>/dev/null
	done
	# dockerd leaves its data root bind-mounted onto itself.
	grep " $T/" /proc/mounts | awk '{print $2}' | sort -r |
		while read -r m; do umount -l "$m"; done
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 1
unset SBXCAT_DEPLOYMENT_ID SBXCAT_CATALOG SBXCAT_ENGINE_TRACE SBXCAT_ENGINE_STALL SBXCAT_ENGINE_TIMEOUT

cat >cat.json <<'JSON'
[{"alias": "eng-one", "description": "one",
  "base_image": "sbxcat-test/busybox:1", "setup_commands": ["echo one"]}]
JSON
chmod 644 cat.json

# pw HOST [prewarm args]: run prewarm against HOST; status in $rc.
pw() {
	pw_host=$1; shift
	DOCKER_HOST=$pw_host "$S" -C "$T/cat.json" prewarm "$@" >out 2>err
	rc=$?
}

# Reachability: the engine's own words, the exit status of an environment
# problem (3), and a hint.
pw "unix://$T/missing.sock"
is $rc 3 "a socket that does not exist exits 3"
is "$(head -n 1 err)" "sbxcat: cannot reach the Docker engine at unix://$T/missing.sock: No such file or directory" \
	"a socket that does not exist: the message"
is "$(sed -n 2p err | cut -c1-6)" "hint: " "a socket that does not exist: a hint follows"
# The default socket, absent: hidden, where a system engine runs, by a
# tmpfs over /var/run's directory in a mount namespace of this test's own
# (private propagation: nothing of it reaches the host's mounts).
run_dir=$(readlink -f /var/run)
if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
	sock_before=$(test -S /var/run/docker.sock && echo socket || echo none)
	(unset DOCKER_HOST
	 unshare -m --propagation private sh -c \
		'mount -t tmpfs -o size=1m sbxcat-t-engine "$1" && exec "$2" -C "$3" prewarm' \
		sh "$run_dir" "$S" "$T/cat.json" >out 2>err)
	is "$(head -n 1 err)" "sbxcat: cannot reach the Docker engine at unix:///var/run/docker.sock: No such file or directory" \
		"the default socket is named when DOCKER_HOST is unset"
	sock_after=$(test -S /var/run/docker.sock && echo socket || echo none)
	! grep -q sbxcat-t-engine /proc/self/mountinfo && [ "$sock_after" = "$sock_before" ]
	ok $? "... hidden in the test's own mount namespace only: the host's /var/run is as it was ($sock_after)"
elif [ -e /var/run/docker.sock ]; then
	skip "/var/run/docker.sock exists here and no mount namespace can hide it (not root, or no unshare)" \
		"the default socket is named when DOCKER_HOST is unset"
	skip "no mount namespace" "the host's /var/run is as it was"
else
	(unset DOCKER_HOST; "$S" -C "$T/cat.json" prewarm >out 2>err)
	is "$(head -n 1 err)" "sbxcat: cannot reach the Docker engine at unix:///var/run/docker.sock: No such file or directory" \
		"the default socket is named when DOCKER_HOST is unset"
	ok 0 "the host's /var/run is as it was (nothing was mounted)"
fi

# A socket file nobody listens on any more, open to root only.
if [ -n "$PY" ]; then
	"$PY" -c 'import os, socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o600)' "$T/closed.sock"
	pw "unix://$T/closed.sock"
	is "$(head -n 1 err)" "sbxcat: cannot reach the Docker engine at unix://$T/closed.sock: Connection refused" \
		"a socket nobody listens on: connection refused"
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
		setpriv --reuid 65534 --regid 65534 --clear-groups "$S" --version >/dev/null 2>&1; then
		DOCKER_HOST=unix://$T/closed.sock setpriv --reuid 65534 --regid 65534 --clear-groups \
			"$S" -C "$T/cat.json" prewarm >out 2>err
		is $? 3 "a socket without permission exits 3"
		is "$(head -n 1 err)" "sbxcat: cannot reach the Docker engine at unix://$T/closed.sock: Permission denied" \
			"a socket without permission: the message"
		grep -q "^hint: .*member of the socket's group" err
		ok $? "a socket without permission: the hint names the socket's group"
	else
		skip "needs root, setpriv and a binary user 65534 can run" "a socket without permission (3 tests)"
	fi
else
	skip "no python3 to make a socket" "socket without listener and without permission"
fi

pw "tcp://127.0.0.1:9"
is "$(head -n 1 err)" "sbxcat: cannot reach the Docker engine at tcp://127.0.0.1:9: Connection refused" \
	"tcp:// is honoured: connection refused on a closed loopback port"
pw "ssh://user@host"
is "$rc:$(cat err)" "3:sbxcat: DOCKER_HOST 'ssh://user@host': sbxcat reaches an engine over unix:// or tcp:// only" \
	"an unsupported DOCKER_HOST is refused clearly"
SBXCAT_ENGINE_STALL=soon pw "unix://$T/missing.sock"
is "$rc:$(cat err)" "3:sbxcat: SBXCAT_ENGINE_STALL 'soon': expected a number of seconds" \
	"a bad SBXCAT_ENGINE_STALL is refused"

# fake MODE: start tests/fake-engine.py; its socket is $T/MODE.sock.
fake() {
	mkdir -p "$T/$1"
	"$PY" "$srcdir/tests/fake-engine.py" "$T/$1.sock" "$1" "$T/$1" \
		</dev/null >"$T/$1/log" 2>&1 &
	fakes="$fakes $!"
	f_n=0
	while [ $f_n -lt 100 ]; do
		# Not /version (counted below) nor /_ping (which may hang).
		curl -s -o /dev/null --max-time 1 --unix-socket "$T/$1.sock" \
			http://localhost/ready >/dev/null 2>&1 && return 0
		sleep 0.1; f_n=$((f_n + 1))
	done
	return 1
}

if [ -n "$PY" ] && fake old && fake notdocker && fake build && fake stall && fake many; then
	pw "unix://$T/old.sock"
	is "$rc:$(cat err)" "3:sbxcat: the Docker engine at unix://$T/old.sock speaks API 1.40 (Docker 19.03.15); sbxcat needs API 1.41 or later (Docker 20.10)" \
		"an engine older than API 1.41 is refused clearly"
	is "$(grep -c '^GET /version HTTP' old/requests)" 1 "the version is asked unversioned, once"
	pw "unix://$T/notdocker.sock"
	is "$rc:$(cat err)" "3:sbxcat: the server at unix://$T/notdocker.sock does not answer GET /version like a Docker engine (no ApiVersion)" \
		"a server that is not an engine is refused"

	# What a build sends, checked on the wire.
	pw "unix://$T/build.sock"
	pw "unix://$T/build.sock"
	is "$rc" 1 "a build the engine did not tag fails"
	grep -q "the engine reported success but has no image 'sbxcat/eng-one:" out
	ok $? "the image is checked after the build, not taken on the stream's word"
	req=$(sed -n '/^POST \/v1.41\/build/,/^[A-Z]/p' build/requests)
	printf '%s\n' "$req" | grep -q '^POST /v1.41/build?t=sbxcat%2Feng-one%3A\([0-9a-f]\{12\}\)&t=sbxcat%2Feng-one%3A\1\.default&rm=1&forcerm=1&labels=%7B%22io\.sbxcat\.deployment%22%3A%22default%22%7D HTTP/1.1$'
	ok $? "POST /build names the content tag and the deployment's claim, rm and forcerm, the deployment label, under the negotiated version"
	printf '%s\n' "$req" | grep -qi '^  Transfer-Encoding: chunked$'; ok $? "the body is chunked"
	printf '%s\n' "$req" | grep -qi '^  Content-Type: application/x-tar$'; ok $? "the body is a tar"
	printf '%s\n' "$req" | grep -qi '^  Expect:'; ok $((!$?)) "no Expect header: no 100-continue wait"
	is "$(TZ=UTC tar -tvf build/build-1.tar | tr -s ' ')" \
		"-rw-r--r-- root/root $("$S" -C cat.json dockerfile eng-one | wc -c) 1970-01-01 00:00 Dockerfile" \
		"the context is the Dockerfile alone, root-owned, mode 0644, mtime 0"
	mkdir x && tar -xf build/build-1.tar -C x && "$S" -C cat.json dockerfile eng-one | cmp -s - x/Dockerfile
	ok $? "the context's Dockerfile is exactly 'sbxcat dockerfile'"
	cmp -s build/build-1.tar build/build-2.tar
	ok $? "the same catalogue sends the same bytes"

	# An engine that stops answering mid-build (its ping hangs too).
	start=$(date +%s)
	SBXCAT_ENGINE_STALL=1 DOCKER_HOST=unix://$T/stall.sock timeout 60 \
		"$S" -C cat.json prewarm >out 2>err
	rc=$?
	took=$(( $(date +%s) - start ))
	is "$rc" 3 "an engine that stops answering mid-build: exit 3"
	[ "$took" -le 10 ]; ok $? "it gives up within the deadline (${took} s for a 1 s stall), no hang"
	grep -q "stopped answering during POST /build: nothing for 1 s, and GET /_ping failed" out
	ok $? "the report says the engine stopped answering"

	# A log that falls behind: 1,000 steps arrive while stderr is a full
	# FIFO nobody reads; the queue keeps 256 events, and the log says how
	# many lines it could not show instead of dropping them silently.
	mkfifo many.fifo
	exec 4<>many.fifo
	dd if=/dev/zero bs=4096 count=16 >&4 2>/dev/null
	DOCKER_HOST=unix://$T/many.sock "$S" -C cat.json prewarm >out 2>many.fifo 4>&- &
	many=$!
	# The stream is read through, and so all 1,000 steps queued, once
	# the image is inspected after the build: wait for that request
	# (not a fixed time: a loaded CI host once needed more than 3 s).
	n=0
	while [ "$(sed -n '/^POST .*\/build/,$p' many/requests 2>/dev/null |
		grep -c '^[A-Z]')" -lt 2 ] && [ $n -lt 600 ]; do
		sleep 0.1; n=$((n + 1))
	done
	# A reader of its own (not fd 4, which also writes): it sees the end
	# of the FIFO when sbxcat and this shell have both closed it, so
	# every line sbxcat wrote is in many.err when it returns.
	cat many.fifo >many.err 4>&- &
	drain=$!
	wait $many
	exec 4>&-
	wait $drain
	grep -aEq '^prewarm: [0-9]+ progress lines not shown: standard error was not being read$' many.err
	ok $? "a log that fell behind says how many progress lines it did not show"
	grep -aq "^eng-one: step 1/1000 : RUN true$" many.err
	ok $? "and shows the lines it kept"
else
	skip "no python3 for the fake engine" "engine replies a real engine will not give (14 tests)"
fi

# A second, private dockerd, killed (-9) and frozen (SIGSTOP) mid-build;
# it also listens with TLS on a loopback port, for tcp:// with TLS. It runs
# in a network namespace of its own (tests/testbed.sh's tb_dockerd_start),
# so its loopback port is reached from inside that namespace (nsenter).
D2=$T/d2
D2SOCK=unix://$D2/docker.sock
D2TLS=""
# make_certs DIR: a CA, a server certificate for 127.0.0.1 and a client
# certificate, named as DOCKER_CERT_PATH wants them (ca, cert, key.pem).
make_certs() {
	command -v openssl >/dev/null || return 1
	( cd "$1" &&
	  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem \
		-days 2 -subj /CN=sbxcat-test-ca &&
	  openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr \
		-subj /CN=127.0.0.1 &&
	  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >srv.ext &&
	  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
		-out server-cert.pem -days 2 -extfile srv.ext &&
	  openssl req -newkey rsa:2048 -nodes -keyout key.pem -out client.csr -subj /CN=client &&
	  printf 'extendedKeyUsage=clientAuth\n' >cli.ext &&
	  openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
		-out cert.pem -days 2 -extfile cli.ext ) >/dev/null 2>&1
}
d2_pid() { tb_dockerd_pid "$D2"; }
d2_start() {
	mkdir -p "$D2/certs"
	# The namespace is the engine's alone: any port is free there.
	[ -z "$D2TLS" ] && make_certs "$D2/certs" && D2TLS=tcp://127.0.0.1:2376
	set --
	[ -n "$D2TLS" ] && set -- -H "$D2TLS" --tlsverify --tlscacert "$D2/certs/ca.pem" \
		--tlscert "$D2/certs/server-cert.pem" --tlskey "$D2/certs/server-key.pem"
	tb_dockerd_start "$D2" "$D2/data" "$@" || return 1
	d_n=0
	while [ $d_n -lt 300 ]; do
		curl -sf --max-time 2 --unix-socket "$D2/docker.sock" http://localhost/_ping \
			>/dev/null 2>&1 && return 0
		sleep 0.1; d_n=$((d_n + 1))
	done
	diag "the second engine did not start; its log ends:"
	tail -n 5 "$D2/dockerd.log" | sed 's/^/# /'
	return 1
}
# Restart a killed engine so it reaps what it left (the build container),
# then stop it properly: SIGTERM stops its containers and its containerd;
# what it left mounted is unmounted and its namespace removed.
d2_stop() {
	[ -d "$D2" ] || return 0
	d_pid=$(d2_pid) && kill -CONT "$d_pid" 2>/dev/null
	d2_pid >/dev/null || { [ -n "$d2pid" ] && d2_start >/dev/null 2>&1; }
	tb_dockerd_stop "$D2" "$D2/data"
}
# wait_step FILE SECS: until the plain log shows the build's RUN step
# (echo started; sleep SECS) begun and its container runs on the second
# engine (on the default bridge network a container takes a while to start
# on a busy machine).
wait_step() {
	w_n=0
	while [ $w_n -lt 300 ]; do
		grep -q ": step [0-9]*/[0-9]* : RUN echo started; sleep $2\$" "$1" &&
			DOCKER_HOST=$D2SOCK "$DOCKER" ps --no-trunc --format '{{.Command}}' |
			grep -q "echo started; sleep $2" && return 0
		sleep 0.1; w_n=$((w_n + 1))
	done
	return 1
}

if [ "$(id -u)" != 0 ] || ! PATH=$PATH:/usr/sbin:/sbin command -v dockerd >/dev/null; then
	skip "needs root and dockerd to start a second engine" "a second engine frozen, killed, over TLS (11 tests)"
elif ! d2_start || ! tb_client "$D2SOCK" ||
	! ( DOCKER_HOST=$D2SOCK; export DOCKER_HOST; tb_import ); then
	skip "the second engine could not be started or given the base image" "a second engine frozen, killed, over TLS (11 tests)"
else
	d2pid=$(d2_pid)
	cat >slow.json <<'JSON'
[{"alias": "eng-slow", "description": "a long quiet step",
  "base_image": "sbxcat-test/busybox:1",
  "setup_commands": ["echo started; sleep 30"]}]
JSON
	# Frozen: the socket still accepts, nothing answers.
	SBXCAT_ENGINE_STALL=2 DOCKER_HOST=$D2SOCK timeout 120 "$S" -C slow.json prewarm >out 2>err &
	pid=$!
	if wait_step err 30; then
		sleep 1
		start=$(date +%s)
		kill -STOP "$d2pid"
		wait $pid; rc=$?
		took=$(( $(date +%s) - start ))
		kill -CONT "$d2pid"
		is "$rc" 3 "an engine frozen mid-build: exit 3"
		[ "$took" -le 15 ]; ok $? "a frozen engine is given up on within the deadline (${took} s; stall 2 s), no hang"
		grep -q "at $D2SOCK stopped answering during POST /build" out
		ok $? "a frozen engine: the report names the engine and the call"
	else
		kill "$pid"; wait $pid
		ok 1 "the build on the second engine started"; sed 's/^/# /' err
	fi

	# tcp:// with TLS, verified with DOCKER_CERT_PATH's files.
	if [ -n "$D2TLS" ]; then
		cat >img.json <<'JSON'
[{"alias": "eng-img", "description": "the base", "image": "sbxcat-test/busybox:1"}]
JSON
		DOCKER_HOST=$D2TLS DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$D2/certs \
			nsenter --net="$D2/netns" "$S" -C img.json prewarm >out 2>err
		is "$?:$(awk '{print $2}' out | head -n 1)" "0:cached" "tcp:// with TLS: verified, the engine answers"
		DOCKER_HOST=$D2TLS nsenter --net="$D2/netns" "$S" -C img.json prewarm >out 2>err
		is "$?:$(cat err)" "3:sbxcat: the Docker engine at $D2TLS refused GET /version: the Docker engine answered HTTP 400: Client sent an HTTP request to an HTTPS server." \
			"tcp:// without TLS to a TLS engine: exit 3, the engine's words"
		mkdir -p noclient && cp "$D2/certs/ca.pem" noclient/
		DOCKER_HOST=$D2TLS DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$T/noclient \
			nsenter --net="$D2/netns" "$S" -C img.json prewarm >out 2>err
		rc=$?
		is "$rc" 3 "tcp:// with TLS and no client certificate: exit 3"
		grep -q "^sbxcat: the Docker engine at $D2TLS .*GET /version: .*certificate" err
		ok $? "tcp:// with TLS and no client certificate: the TLS error is named"
	else
		skip "no openssl to make certificates" "tcp:// with TLS (4 tests)"
	fi

	# Killed: the connection drops at once.
	sed 's/sleep 30/sleep 31/' slow.json >slow2.json
	DOCKER_HOST=$D2SOCK timeout 120 "$S" -C slow2.json prewarm >out 2>err &
	pid=$!
	if wait_step err 31; then
		sleep 1
		start=$(date +%s)
		kill -9 "$d2pid"
		wait $pid; rc=$?
		took=$(( $(date +%s) - start ))
		is "$rc" 3 "the engine killed mid-build: exit 3"
		[ "$took" -le 5 ]; ok $? "the engine killed mid-build: an error within ${took} s, no hang"
		grep -q "the Docker engine at $D2SOCK broke off POST /build" out
		ok $? "the engine killed mid-build: the report says the engine broke off the build"
		grep -q '| started' out
		ok $? "the report keeps the step's last output"
	else
		kill "$pid"; wait $pid
		ok 1 "the build on the second engine started"; sed 's/^/# /' err
	fi
fi
done_testing
