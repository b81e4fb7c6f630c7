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
  },
  {
    "alias": "bb-hostile",
    "description": "values that try to change what RUN and ENV do",
    "base_image": "sbxcat-test/busybox:1",
    "setup_commands": [
      "\u00a0echo 1 >>/m",
      "\u3000\u2003 echo 2 >>/m",
      "echo 3 >>/m # --network=host \\ x",
      "echo 4 >>/m; : '[\"/bin/true\"]' --mount=type=bind,source=/,target=/h",
      "echo 5 >>/m; : \\\u00a0",
      "echo 6 >>/m; : '\u2028USER root'",
      "echo 7 >>/m\u00a0",
      "echo 8 >>/m; : ${HOME:-x} $PATH \"q\" 'q' `true`",
      "echo 9 >>/m; : -- --network=host [ ]",
      "   echo 10 >>/m"
    ],
    "env_vars": {
      "FLAG": "--network=host",
      "EXEC": "[\"/bin/true\"]",
      "NBSP": "\u00a0",
      "BACKSLASH": "a \\",
      "SPACE_BRACKET": "\u3000[x]"
    }
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

# Hostile values, read by Docker's own parser: one real build (no -q, so the
# engine prints each instruction as "Step N/M : ...", M being the count its
# parser found), then the image says which setup commands ran, in order.
"$S" -C cat.json check >/dev/null; ok $? "the hostile values are accepted"
h_tag=$("$S" -C cat.json tag bb-hostile)
"$S" -C cat.json dockerfile bb-hostile >Dockerfile.hostile &&
	tb_docker build -t "$h_tag" -f Dockerfile.hostile . >hostile.log 2>&1
h_rc=$?
built="$built $h_tag"
[ $h_rc -eq 0 ] || sed 's/^/# build: /' hostile.log
ok $h_rc "the engine builds the hostile runtime"
# FROM, USER, 10 setup RUNs, the account RUN and its ENV, 5 ENVs, LABEL,
# WORKDIR, USER: had a value split a line, or become a flag (refused by
# this engine: "Unknown flag"), the count or the build would differ.
is "$(sed -n 's|^Step 1/\([0-9]*\) : .*|\1|p' hostile.log)" 22 "the engine's parser counts 22 instructions"
is "$(sed -n 's|^Step [0-9]*/[0-9]* : \([A-Za-z]*\).*|\1|p' hostile.log | tr '\n' ' ')" \
	"FROM USER RUN RUN RUN RUN RUN RUN RUN RUN RUN RUN RUN ENV ENV ENV ENV ENV ENV LABEL WORKDIR USER " \
	"the instructions are the ones sbxcat wrote, in order"
is "$(grep -c '^Step [0-9]*/[0-9]* : RUN *\(--\|\[\)' hostile.log)" 0 "no RUN step shows a flag or the exec form"
h_run=$(run "$h_tag" cat /m | tr '\n' ' ')
is "$h_run" "1 2 3 4 5 6 7 8 9 10 " "each setup command ran once, in order, through the shell"
for v in FLAG EXEC NBSP BACKSLASH SPACE_BRACKET; do
	want=$(jq -r ".[2].env_vars.$v" cat.json)
	is "$(run "$h_tag" sh -c "printf '%s' \"\$$v\"")" "$want" "hostile env var $v reaches the container exactly"
done
done_testing
