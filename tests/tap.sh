# tests/tap.sh - TAP output for the shell tests (the shell twin of tap.c).
#
#   . "$srcdir/tests/tap.sh"
#   ok  COND-EXIT-STATUS "name"    ->  ok N - name / not ok N - name
#   is  GOT WANT "name"            ->  prints both on a mismatch
#   skip "reason" "name"           ->  ok N - name # SKIP reason
#   skip_all "reason"              ->  1..0 # SKIP reason, exit 0
#   done_testing                   ->  the plan, exit 0
tap_n=0
ok() {
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; fi
	return "$1"
}
is() {
	if [ "$1" = "$2" ]; then ok 0 "$3"; return 0; fi
	ok 1 "$3"
	printf '%s\n' "$1" | sed 's/^/#   got:      |/; s/$/|/'
	printf '%s\n' "$2" | sed 's/^/#   expected: |/; s/$/|/'
	return 1
}
# like GOT ERE NAME: GOT matches the extended regular expression ERE.
like() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		ok 0 "$3"
	else
		ok 1 "$3"
		printf '%s\n' "$1" | sed 's/^/#   got: /'
	fi
}
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $2 # SKIP $1"; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
# bail_out WHY: stop the test as failed (a component that was there broke).
bail_out() { echo "Bail out! $*"; exit 1; }
diag() { printf '%s\n' "$*" | sed 's/^/# /'; }
done_testing() { echo "1..$tap_n"; exit 0; }

# spawn_status FILE COMMAND... &: run COMMAND as a child of a small perl
# parent, with SIGINT, SIGHUP and SIGTERM at their defaults (a script's
# background jobs start with SIGINT ignored, a run under nohup with SIGHUP
# ignored), and write the child's pid to FILE.pid at once and, when it
# ends, how it ended to FILE: "signal N" or "exit N".  A shell's $? cannot
# tell death by SIGTERM from exit(143); this can.
spawn_status() {
	perl -e '
		my $f = shift;
		my $p = fork // die "fork: $!";
		if (!$p) { $SIG{$_} = "DEFAULT" for qw(INT HUP TERM); exec @ARGV or die "exec: $!" }
		open(my $h, ">", "$f.pid.tmp") or die; print $h "$p\n"; close $h;
		rename("$f.pid.tmp", "$f.pid") or die;
		waitpid($p, 0);
		my $s = $?;
		open($h, ">", "$f.tmp") or die;
		print $h (($s & 127) ? "signal " . ($s & 127) : "exit " . ($s >> 8)), "\n";
		close $h; rename("$f.tmp", $f) or die;' "$@"
}
# spawn_pid FILE: the pid spawn_status wrote, waiting up to 5 s for it.
spawn_pid() {
	sp_n=0
	while [ ! -s "$1.pid" ] && [ $sp_n -lt 50 ]; do sleep 0.1; sp_n=$((sp_n + 1)); done
	cat "$1.pid"
}
