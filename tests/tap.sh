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
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $2 # SKIP $1"; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
diag() { printf '%s\n' "$*" | sed 's/^/# /'; }
done_testing() { echo "1..$tap_n"; exit 0; }
