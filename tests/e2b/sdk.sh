# tests/e2b/sdk.sh - the real E2B SDKs from the npm registry, at pinned
# versions, for tests/t-e2b-sdk.sh and bench/bench-e2b.sh.
#
#   . "$srcdir/tests/e2b/sdk.sh"
#   e2b_sdk_install DIR || skip_all "$E2B_SDK_WHY"
#   e2b_sdk_usable e2b-old || echo "skipped: $E2B_SDK_WHY"
#
# They are installed with `npm install --no-save` into DIR/node_modules
# (the build tree's tests/e2b: kept between runs, installed again only
# when a pin changed) and never into the source tree.  No lock file is
# committed: the pins below are exact, what they depend on is npm's
# choice at install time, as for any user of the SDK.
#
# The pins: e2b 2.51.0, the first whose create is POST /v2/sandboxes;
# e2b 2.50.0 (as e2b-old), the last whose create is POST /sandboxes
# (every release from 2.0 to 2.50.0 creates there: checked on the
# published packages' dist/index.js); e2b 2.30.5 (as e2b-seizu), the one
# Seizu's lock file has; @e2b/code-interpreter 2.8.0, Seizu's, whose
# package.json takes e2b ^2.48.0 (so it runs on the 2.51.0 above).
# shellcheck shell=sh
# E2B_SDK_WHY is the caller's to read; srcdir is the caller's:
# shellcheck disable=SC2034,SC2154
E2B_SDK_PINS="e2b@2.51.0 e2b-old@npm:e2b@2.50.0 e2b-seizu@npm:e2b@2.30.5 @e2b/code-interpreter@2.8.0"

# e2b_sdk_have DIR: every pin is in DIR/node_modules at its version.
e2b_sdk_have() {
	for es_pin in $E2B_SDK_PINS; do
		es_name=${es_pin%@*}
		es_name=${es_name%%@npm:*}
		es_want=${es_pin##*@}
		es_got=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$1/node_modules/$es_name/package.json" 2>/dev/null)
		[ "$es_got" = "$es_want" ] || return 1
	done
}

# e2b_sdk_install DIR: the pins in DIR/node_modules, installed if missing;
# 1 with $E2B_SDK_WHY set when it cannot be done: no node or npm, or the
# registry cannot be reached (the caller skips), and 2 when the registry
# answered and the install still failed (the caller fails).
e2b_sdk_install() {
	E2B_SDK_WHY=""
	command -v node >/dev/null || { E2B_SDK_WHY="node is missing (scripts/deps.sh test installs Debian's nodejs)"; return 1; }
	command -v npm >/dev/null || { E2B_SDK_WHY="npm is missing (scripts/deps.sh test installs Debian's npm)"; return 1; }
	mkdir -p "$1" || return 2
	# One install at a time in DIR (a test and the bench, or two builds).
	(
		flock -w 600 9 || { echo "e2b_sdk_install: timed out waiting for $1/.lock" >&2; exit 2; }
		e2b_sdk_have "$1" && exit 0
		if ! timeout 60 npm ping >"$1/npm-ping.log" 2>&1; then
			exit 1
		fi
		# shellcheck disable=SC2086
		(cd "$1" && timeout 600 npm install --no-save --no-audit --no-fund --no-package-lock \
			--loglevel=error $E2B_SDK_PINS) >"$1/npm-install.log" 2>&1 || exit 2
		e2b_sdk_have "$1" || exit 2
	) 9>>"$1/.lock"
	es_rc=$?
	case $es_rc in
	1) E2B_SDK_WHY="the npm registry cannot be reached ($(tail -n 1 "$1/npm-ping.log"))" ;;
	2) E2B_SDK_WHY="npm install of the pinned SDKs failed: $(tail -n 3 "$1/npm-install.log" 2>/dev/null | tr '\n' ' ')" ;;
	esac
	return $es_rc
}

# e2b_sdk_usable DIR NAME: this node is in NAME's engines.node range (its
# package.json); 1 with $E2B_SDK_WHY saying which node and which range.
e2b_sdk_usable() {
	E2B_SDK_WHY=$(node "$srcdir/tests/e2b/engines.mjs" "$1/node_modules/$2/package.json") && return 0
	return 1
}
