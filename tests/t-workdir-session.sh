#!/bin/sh
# t-workdir-session.sh - a session's own work dir (issue 30, docs/e2b.md, "Where files are")
# on the real engine: `session open --work-dir /home/user` binds the
# workspace there, starts commands there and sets HOME to it; /workspace is
# not its mount; the default stays /workspace (no HOME set); a reopen keeps
# the work dir and one asking another is a conflict; bad work dirs are
# refused, a fuzz of them too; the warm pool by work dir: an open with
# /home/user claims the /home/user pool's container, never the default
# pool's, and the reverse.
# Go templates for docker inspect are single-quoted on purpose.
# shellcheck disable=SC2016
set -u
: "${srcdir:?srcdir must name the source tree}"
# shellcheck source=tests/tap.sh
. "$srcdir/tests/tap.sh"
# shellcheck source=tests/testbed.sh
. "$srcdir/tests/testbed.sh"
# shellcheck source=tests/sessionbed.sh
. "$srcdir/tests/sessionbed.sh"
sb_init t-wds tw

SANDBOXD_PAUSE_AFTER=0
export SANDBOXD_PAUSE_AFTER
"$S" -C "$CAT" prewarm "$RA" >/dev/null 2>&1
ok $? "the runtime's image is built"

# -- A session at /home/user.
open_s acme run wd-1 --work-dir /home/user --json
is "$rc" 0 "session open --work-dir /home/user exits 0 ($(err))"
K1=$key
is "$(jq -r .work_dir "$T/out")" /home/user "... and says its work dir"
W1=$(jq -r .workspace "$T/out")
echo "hello from the host" >"$W1/host.txt"
chown 10001:10001 "$W1/host.txt"
sbx exec "$K1" -- pwd
is "$rc:$(out)" "0:/home/user" "exec pwd starts at /home/user"
sbx exec "$K1" -- sh -c 'echo "$HOME"'
is "$(out)" /home/user "\$HOME is /home/user"
sbx exec "$K1" -- ls /home/user
is "$(out)" host.txt "ls /home/user shows the file written host-side"
sbx exec "$K1" -- sh -c 'echo made-inside >/home/user/in.txt'
is "$(cat "$W1/in.txt" 2>/dev/null)" made-inside "a file made inside /home/user is in the workspace"
is "$(insp "$K1" '{{range .Mounts}}{{if eq .Type "bind"}}{{.Destination}}{{end}}{{end}}')" \
	/home/user "the engine binds the workspace at /home/user"
is "$(insp "$K1" '{{.Config.WorkingDir}}')" /home/user "... its WorkingDir is /home/user"
is "$(insp "$K1" '{{index .Config.Labels "io.sbxcat.work-dir"}}')" /home/user "... and it is labelled with it"
sbx exec "$K1" -- sh -c 'ls /workspace 2>/dev/null | wc -l'
is "$(out | tr -d ' ')" 0 "/workspace is not its mount (nothing of the workspace there)"
sbx exec "$K1" -w /home/user -- pwd
is "$rc:$(out)" "0:/home/user" "exec -w /home/user is the workspace"
sbx exec "$K1" -w /workspace -- pwd
is "$rc" 2 "exec -w /workspace is outside its workspace (refused)"
sbx fs "$K1" read host.txt
ok $? "fs read of a workspace file works as before"
grep -q "hello from the host" "$T/out"; ok $? "... and reads the file"
is "$(jq -r .work_dir "$ROOT/$K1/session.json"):$(jq -r .version "$ROOT/$K1/session.json")" \
	"/home/user:4" "the record keeps the work dir (version 4)"

# -- The default stays /workspace, without HOME.
open_s acme run wd-default --json
is "$rc" 0 "an open without --work-dir exits 0"
K0=$key
is "$(jq -r '.work_dir // "none"' "$T/out")" none "... its document names no work dir"
sbx exec "$K0" -- pwd
is "$(out)" /workspace "... exec pwd is /workspace"
is "$(insp "$K0" '{{index .Config.Labels "io.sbxcat.work-dir"}}')" "" "... no work-dir label"
insp "$K0" '{{range .Config.Env}}{{println .}}{{end}}' | grep -q '^HOME=/workspace'
ok $((! $?)) "... and no HOME set to the work dir"
is "$(jq -r '.version' "$ROOT/$K0/session.json"):$(jq -r '.work_dir // "none"' "$ROOT/$K0/session.json")" \
	"3:none" "... its record stays version 3, without work_dir"
open_s acme run wd-explicit --work-dir /workspace --json
is "$rc:$(jq -r '.work_dir // "none"' "$T/out")" "0:none" "--work-dir /workspace (the configuration's) is the default"

# -- A reopen keeps it.
C1=$(insp "$K1" '{{.Id}}')
open_s acme run wd-1 --json
is "$rc:$(jq -r .outcome "$T/out"):$(jq -r .work_dir "$T/out")" "0:adopted:/home/user" \
	"a reopen without --work-dir adopts it at /home/user"
is "$(insp "$K1" '{{.Id}}')" "$C1" "... the same container"
open_s acme run wd-1 --work-dir /home/user
is "$rc" 0 "a reopen with the same work dir is fine"
open_s acme run wd-1 --work-dir /srv/other
is "$rc" 1 "a reopen asking another work dir is a conflict (exit 1)"
grep -q "work dir at '/home/user'" "$T/err"; ok $? "... saying where it is ($(err))"
sbx session close "$K1"
is "$rc" 0 "close (the files kept)"
open_s acme run wd-1 --json
is "$rc:$(jq -r .work_dir "$T/out")" "0:/home/user" "a reopen after close makes it again at /home/user"
sbx exec "$K1" -- cat /home/user/host.txt
is "$(out)" "hello from the host" "... with its files"

# -- Bad work dirs, refused before anything is made.
n0=$(ndep)
long=/$(head -c 300 /dev/zero | tr '\0' a)
for bad in relative a/b / /a/../b /a/./b /a//b /a/ /tmp /tmp/x /proc /sys/x /dev \
	"$long" "$(printf '/a\nb')" "$(printf '/a\tb')" "$(printf '/a\001b')" \
	"$(printf '/\377x')" ""; do
	open_s acme run "wd-bad-$(printf %s "$bad" | cksum | cut -d' ' -f1)" --work-dir "$bad"
	is "$rc" 2 "work dir '$(printf %s "$bad" | od -An -c | tr -s ' ' | head -c 40)' is refused (exit 2)"
done
grep -q "work_dir" "$T/err"; ok $? "... naming the field ($(err | head -c 120))"
is "$(ndep)" "$n0" "... and no container was made for any"
# A fuzz: random bytes after a slash; whatever is accepted must be a
# path that the engine binds and exec starts at.
i=0 acc=0
while [ $i -lt 30 ]; do
	i=$((i + 1))
	cand=/$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n' | cut -c1-$((i % 12 + 1)))
	case $((i % 3)) in
	1) cand="$cand/.." ;;
	2) cand="$cand/x" ;;
	esac
	"$S" -C "$CAT" session open --tenant acme --scope run --subject "wd-fz-$i" \
		--runtime "$RA" --work-dir "$cand" >"$T/out" 2>"$T/err"
	r=$?
	case $cand in
	*/..) [ $r -eq 2 ] || { diag "accepted '$cand' ($r)"; acc=$((acc + 100)); } ;;
	*) if [ $r -eq 0 ]; then
		   k=$(out)
		   [ "$(bounded exec "$k" -- pwd)" = "$cand" ] || { diag "pwd for '$cand' differs"; acc=$((acc + 100)); }
		   bounded session close --purge "$k" >/dev/null 2>&1
	   else
		   diag "refused '$cand' ($r): $(err)"; acc=$((acc + 100))
	   fi ;;
	esac
done
is "$acc" 0 "30 random work dirs: '..' refused, the others bound where pwd says"

# -- The warm pool by work dir.
SBXCAT_WARM_POOL="tw-nothere@=1" sbx reap
is "$rc" 2 "SBXCAT_WARM_POOL with an empty work dir is refused"
SBXCAT_WARM_POOL="$RA@relative=1" sbx reap
is "$rc" 2 "SBXCAT_WARM_POOL with a relative work dir is refused"
SBXCAT_WARM_POOL="$RA@/home/user=1,$RA@/home/user=2" sbx reap
is "$rc" 2 "SBXCAT_WARM_POOL naming one runtime and work dir twice is refused"
SBXCAT_WARM_POOL="$RA=1,$RA@/home/user=1"
export SBXCAT_WARM_POOL
sbx reap
is "$rc" 0 "reap fills a pool of each: $SBXCAT_WARM_POOL ($(err))"
pooled_at() {
	for c in $(tb_docker ps -q --no-trunc --filter "label=io.sbxcat.deployment=$DEP" --filter label=io.sbxcat.pool); do
		[ "$(tb_docker inspect -f '{{index .Config.Labels "io.sbxcat.work-dir"}}' "$c")" = "$1" ] &&
			[ -z "$(tb_docker inspect -f '{{index .Config.Labels "io.sbxcat.key"}}' "$c")" ] &&
			case $(tb_docker inspect -f '{{.Name}}' "$c") in */sbxcat-"$DEP"-pool_*) echo "$c" ;; esac
	done
}
PH=$(pooled_at /home/user)
PD=$(pooled_at "")
is "$(echo "$PH" | grep -c .):$(echo "$PD" | grep -c .)" "1:1" "one pooled container for /home/user, one for the default"
is "$(tb_docker inspect -f '{{range .Mounts}}{{if eq .Type "bind"}}{{.Destination}}{{end}}{{end}}' "$PH")" \
	/home/user "... the /home/user one binds its workspace there"
open_s acme run wd-pool-h --work-dir /home/user --json
is "$rc:$(jq -r .outcome "$T/out")" "0:claimed" "an open with /home/user claims a pooled container"
is "$(jq -r .container "$T/out")" "$PH" "... the /home/user pool's, not the default's"
KH=$key
sbx exec "$KH" -- sh -c 'pwd; echo "$HOME"'
is "$(out | tr '\n' ' ')" "/home/user /home/user " "... and it runs at /home/user with that HOME"
is "$(tb_docker inspect -f '{{.State.Status}}' "$PD")" running "the default pool's container is still there"
open_s acme run wd-pool-h2 --work-dir /home/user --json
is "$rc:$(jq -r .outcome "$T/out")" "0:created" "a second /home/user open, its pool empty, is made cold (not the default's)"
is "$(tb_docker inspect -f '{{.Name}}' "$PD")" "/sbxcat-$DEP-pool_$(tb_docker inspect -f '{{index .Config.Labels "io.sbxcat.pool"}}' "$PD")" \
	"... the default pool's container still unclaimed"
open_s acme run wd-pool-d --json
is "$rc:$(jq -r .outcome "$T/out"):$(jq -r .container "$T/out")" "0:claimed:$PD" \
	"an open with the default work dir claims the default pool's"
sbx exec "$key" -- pwd
is "$(out)" /workspace "... at /workspace"
sb_done
