#!/bin/sh
# t-build.sh - the generated Dockerfiles are real: build them with the real
# engine (FROM a base imported from busybox-static, no registry) and run the
# images to read back the env vars, the account and a setup command's marker.
set -u
. "$srcdir/tests/tap.sh"
. "$srcdir/tests/testbed.sh"
S=${SBXCAT:?SBXCAT must name the built binary}

testbed_docker || skip_all "no Docker engine could be reached or started (reason above)"
testbed_base_image || skip_all "no base image sbxcat-test/busybox:1 (reason above)"

T=$(mktemp -d)
built=""
cleanup() {
	[ -n "$built" ] && tb_docker rmi -f $built >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 1

cat >cat.json <<'JSON'
[
  {
    "alias": "bb-one",
    "description": "busybox with a marker and awkward env values",
    "base_image": "sbxcat-test/busybox:1",
    "setup_commands": [
      "echo built-by-setup > /marker",
      "mkdir -p /opt/data && printf '%s\\n' 'two words' > /opt/data/x"
    ],
    "env_vars": {
      "PLAIN": "value",
      "QUOTES": "say \"hi\" and 'bye'",
      "DOLLAR": "$HOME and ${PATH}",
      "BACKSLASH_END": "ends with \\",
      "SPACES": "  a  b  ",
      "UNICODE": "caf\u00e9 \u2713 \u2028 end",
      "EMPTY": ""
    },
    "mem_limit": "64m"
  },
  {
    "alias": "bb-two",
    "description": "a second runtime",
    "base_image": "sbxcat-test/busybox:1",
    "setup_commands": ["echo second > /marker"]
  }
]
JSON
"$S" -C cat.json check >/dev/null; ok $? "the test catalogue is valid"
"$S" -C cat.json generate -o gen >/dev/null; ok $? "generate writes the Dockerfiles"

build() { # build ALIAS [sbxcat options]: build under the content tag
	b_alias=$1; shift
	b_tag=$("$S" -C cat.json "$@" tag "$b_alias")
	"$S" -C cat.json "$@" dockerfile "$b_alias" >"Dockerfile.$b_alias" &&
	tb_docker build -q -t "$b_tag" -f "Dockerfile.$b_alias" . >build.log 2>&1
	b_rc=$?
	built="$built $b_tag"
	[ $b_rc -eq 0 ] || sed 's/^/# build: /' build.log
	return $b_rc
}
run() { # run TAG CMD...: as the image's own user, with no network
	r_tag=$1; shift
	tb_docker run --rm --network none "$r_tag" "$@" 2>&1
}

build bb-one; ok $? "docker build of the generated Dockerfile succeeds"
one=$("$S" -C cat.json tag bb-one)
is "$(run "$one" cat /marker)" "built-by-setup" "the setup command ran at build time"
is "$(run "$one" cat /opt/data/x)" "two words" "setup commands run in order, one RUN each"
is "$(run "$one" id -u)" "10001" "the image runs as the sandbox uid"
is "$(run "$one" sh -c 'echo $HOME')" "/home/sandbox" "the account has its home"
is "$(run "$one" sh -c 'touch ~/w && echo writable')" "writable" "the home is writable by the sandbox user"
is "$(run "$one" pwd)" "/home/sandbox" "WORKDIR is the home"
is "$(run "$one" grep -c '^sandbox:x:10001:' /etc/passwd)" "1" "a bare base gets its account from /etc/passwd"
for v in PLAIN QUOTES DOLLAR BACKSLASH_END SPACES UNICODE EMPTY; do
	want=$(jq -r ".[0].env_vars.$v" cat.json)
	# busybox-static has no printenv applet: let its shell expand the name.
	is "$(run "$one" sh -c "printf '%s' \"\$$v\"")" "$want" "env var $v reaches the container exactly"
done
is "$(tb_docker image inspect -f '{{index .Config.Labels "io.sbxcat.runtime"}}' "$one")" "bb-one" "the image is labelled with its alias"
recipe=$(grep -v '^LABEL ' "Dockerfile.bb-one" | sha256sum | cut -d' ' -f1)
is "$(tb_docker image inspect -f '{{index .Config.Labels "io.sbxcat.recipe"}}' "$one")" "$recipe" "the image carries its recipe hash"
cmp -s gen/bb-one/Dockerfile Dockerfile.bb-one; ok $? "generate and dockerfile give the same file"

build bb-two; ok $? "the second runtime builds"
is "$(run "$("$S" -C cat.json tag bb-two)" cat /marker)" "second" "each runtime gets its own setup"

build bb-two --sandbox-uid 0; ok $? "a runtime without the sandbox account builds"
is "$(run "$("$S" -C cat.json --sandbox-uid 0 tag bb-two)" id -u)" "0" "without the account the image runs as root"

# A changed env var is a new tag, and the install layers come from cache.
sed 's/"value"/"changed"/' cat.json >cat2.json && mv cat2.json cat.json
build bb-one; ok $? "a changed env var builds"
is "$(run "$("$S" -C cat.json tag bb-one)" sh -c 'printf %s "$PLAIN"')" "changed" "the new tag has the new value"
[ "$("$S" -C cat.json tag bb-one)" != "$one" ]; ok $? "a changed env var names a new tag"
done_testing
