/*
 * t-container.c - the engine's container and exec calls against the real
 * test-bed engine (DOCKER_HOST; tests/t-container.sh finds or starts it):
 * a hardened container created and read back field by field, its life
 * (start twice, stop, kill, pause/unpause, remove twice), the archive
 * stat, execs over the hijacked connection (stdout and stderr apart, 4 MiB
 * of stdin through sha256sum and wc -c, EOF by half-close, exit codes,
 * what a command that cannot start looks like), listing by label, and ids
 * that try to reach another endpoint.
 *
 * Then engine_exec_attach against small fake engines (a unix and a TCP
 * listener of the test's own) for what dockerd will not do on demand:
 * replies cut into single bytes, headers over the bound, a server that
 * never answers, one that hangs up, one that is not HTTP, error replies
 * with Content-Length or chunked bodies and hostile bytes in them; and
 * unpause against one whose state lags its reply, as dockerd 20.10's does.
 *
 * Every container is named t-container-PID-*, labelled
 * t-container.pid=PID (PID: $T_CONTAINER_PID, else our own), and removed
 * at the end.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "engine/engine-http.h"
#include "basic/clock.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "tap.h"
#include "basic/util.h"
#include "basic/xjson.h"

static struct engine E;
static char tmpdir[64];
static char pidstr[16];
static const char *image = "sbxcat-test/busybox:1";

/* j at a dotted path ("HostConfig.Memory"), or NULL. */
static json_t *jget(json_t *j, const char *path)
{
	char *p = xstrdup(path), *save = NULL;
	for (char *k = strtok_r(p, ".", &save); k && j;
	     k = strtok_r(NULL, ".", &save))
		j = json_object_get(j, k);
	free(p);
	return j;
}

static const char *jstr(json_t *j, const char *path)
{
	return json_string_value(jget(j, path));
}

static long long jint(json_t *j, const char *path)
{
	json_t *v = jget(j, path);
	return json_is_integer(v) ? json_integer_value(v) : -12345;
}

static char *name_of(const char *which)
{
	return xasprintf("t-container-%s-%s", pidstr, which);
}

static json_t *labels_for(const char *which)
{
	return xjson_pack("{s:s, s:s}", "t-container.pid", pidstr,
			  "t-container.which", which);
}

/* The hardened body the session code will build. */
static json_t *hardened_body(const char *which)
{
	return xjson_pack(
	    "{s:s, s:[s,s], s:s, s:o, s:s, s:{"
	    "s:b, s:[s], s:[s], s:i, s:I, s:I, s:I, s:{s:s}, s:s, "
	    "s:[{s:s, s:s, s:s}]}}",
	    "Image", image, "Cmd", "/bin/sleep", "100000", "User",
	    "10001:10001", "Labels", labels_for(which), "WorkingDir", tmpdir,
	    "HostConfig", "Init", 1, "CapDrop", "ALL", "SecurityOpt",
	    "no-new-privileges", "PidsLimit", 512, "NanoCpus",
	    (json_int_t)2000000000, "Memory", (json_int_t)256 << 20,
	    "MemorySwap", (json_int_t)256 << 20, "Tmpfs", "/tmp", "size=64m",
	    "NetworkMode", "none", "Mounts", "Type", "bind", "Source", tmpdir,
	    "Target", tmpdir);
}

static bool is_http(struct sbx_error *err, int http)
{
	return err && err->http == http;
}

static void diag_err(struct sbx_error *err)
{
	if (err)
		diag("error: status %d, http %d: %s", tap_status(err), err->http,
		     err->msg);
}

static void test_create_inspect(char **cid)
{
	struct sbx_error *err = NULL;
	json_t *body = hardened_body("a"), *j = NULL, *m;
	char *name = name_of("a"), *id2 = NULL;
	char *want_name = xasprintf("/%s", name);

	ok(engine_container_create(&E, name, body, cid, &err) == 0 && *cid &&
	       strlen(*cid) == 64,
	   "create a hardened container");
	diag_err(err);
	sbx_error_free(&err);
	if (!*cid)
		bail_out("no container to test with");

	ok(engine_container_inspect(&E, *cid, &j, &err) == 0 && j,
	   "inspect it");
	is_str(jstr(j, "Name"), want_name, "inspect: Name");
	is_str(jstr(j, "Config.User"), "10001:10001", "inspect: User");
	ok(json_is_true(jget(j, "HostConfig.Init")), "inspect: Init");
	is_str(json_string_value(json_array_get(jget(j, "HostConfig.CapDrop"),
						0)),
	       "ALL", "inspect: CapDrop [ALL]");
	is_int((long long)json_array_size(jget(j, "HostConfig.CapDrop")), 1,
	       "inspect: CapDrop has one entry");
	is_str(json_string_value(
		   json_array_get(jget(j, "HostConfig.SecurityOpt"), 0)),
	       "no-new-privileges", "inspect: SecurityOpt");
	is_int(jint(j, "HostConfig.PidsLimit"), 512, "inspect: PidsLimit");
	is_int(jint(j, "HostConfig.NanoCpus"), 2000000000,
	       "inspect: NanoCpus");
	is_int(jint(j, "HostConfig.Memory"), 256 << 20, "inspect: Memory");
	is_int(jint(j, "HostConfig.MemorySwap"), 256 << 20,
	       "inspect: MemorySwap equals Memory");
	is_str(json_string_value(
		   json_object_get(jget(j, "HostConfig.Tmpfs"), "/tmp")),
	       "size=64m", "inspect: Tmpfs /tmp");
	is_str(jstr(j, "HostConfig.NetworkMode"), "none",
	       "inspect: NetworkMode");
	m = json_array_get(jget(j, "HostConfig.Mounts"), 0);
	ok(json_array_size(jget(j, "HostConfig.Mounts")) == 1 &&
	       !strcmp(jstr(m, "Type") ? jstr(m, "Type") : "", "bind"),
	   "inspect: one bind mount");
	is_str(jstr(m, "Source"), tmpdir, "inspect: mount source");
	is_str(jstr(m, "Target"), tmpdir, "inspect: mount target");
	ok(!json_is_true(jget(j, "HostConfig.Privileged")),
	   "inspect: not privileged");
	is_str(json_string_value(json_object_get(jget(j, "Config.Labels"),
						 "t-container.pid")),
	       pidstr, "inspect: label");
	is_str(jstr(j, "State.Status"), "created", "inspect: state created");
	json_decref(j);

	ok(engine_container_create(&E, name, body, &id2, &err) < 0 &&
	       !id2 && is_http(err, 409) && tap_status(err) == 1,
	   "create: a name taken is HTTP 409");
	diag_err(err);
	sbx_error_free(&err);
	ok(engine_container_create(&E, "bad name!", body, &id2, &err) < 0 &&
	       is_http(err, 400),
	   "create: a name the engine refuses is HTTP 400, not a crash");
	sbx_error_free(&err);
	json_decref(body);
	free(want_name);
	free(name);
}

static void test_start_stat(const char *cid)
{
	struct sbx_error *err = NULL;
	bool exists = true;
	unsigned long mode = 0;
	char *link = NULL;
	json_t *j = NULL;

	ok(engine_container_start(&E, cid, &err) == 0, "start");
	diag_err(err);
	sbx_error_free(&err);
	ok(engine_container_start(&E, cid, &err) == 0,
	   "start again: 304 is success");
	sbx_error_free(&err);
	engine_container_inspect(&E, cid, &j, NULL);
	is_str(jstr(j, "State.Status"), "running", "running after start");
	json_decref(j);

	ok(engine_container_stat(&E, cid, "/bin/sleep", &exists, &mode, &link,
				 &err) == 0 &&
	       exists,
	   "stat /bin/sleep: exists");
	diag_err(err);
	sbx_error_free(&err);
	/* Go's os.ModeSymlink is 1 << 27: busybox's applets are links. */
	ok(mode & (1ul << 27), "stat /bin/sleep: a symlink (mode %#lx)",
	   mode);
	is_str(link, "/bin/busybox", "stat /bin/sleep: its target");
	free(link);
	link = NULL;
	ok(engine_container_stat(&E, cid, "/bin/busybox", &exists, &mode,
				 &link, &err) == 0 &&
	       exists && !link && (mode & 0777) == 0755 &&
	       !(mode & (1ul << 27)),
	   "stat /bin/busybox: a plain file, mode 0755, no link (%#lo)",
	   mode);
	ok(engine_container_stat(&E, cid, "/nonexistent", &exists, NULL, NULL,
				 &err) == 0 &&
	       !exists,
	   "stat /nonexistent: does not exist, not an error");
	diag_err(err);
	sbx_error_free(&err);
	ok(engine_container_stat(&E, cid, "/etc/../bin/sleep", &exists, NULL,
				 NULL, &err) == 0 &&
	       exists,
	   "stat: a path with .. is the engine's to resolve");
	sbx_error_free(&err);
	exists = true;
	ok(engine_container_stat(&E, "t-container-no-such", "/bin", &exists,
				 NULL, NULL, &err) < 0 &&
	       is_http(err, 404) && !exists,
	   "stat in a missing container: an error with HTTP 404");
	sbx_error_free(&err);
}

/* Output of one exec, split by stream, and how it ended. */
struct run {
	struct strbuf out, errout, raw;
	long long exit_code, pid;
	bool bad_frame;
};

static void run_release(struct run *r)
{
	strbuf_release(&r->out);
	strbuf_release(&r->errout);
	strbuf_release(&r->raw);
}

/* Split the multiplexed stream of r->raw into r->out and r->errout. */
static void decode(struct run *r)
{
	const unsigned char *p = (const unsigned char *)r->raw.buf;
	size_t at = 0;

	while (at < r->raw.len) {
		size_t len;
		if (r->raw.len - at < 8) {
			r->bad_frame = true;
			return;
		}
		len = (size_t)p[at + 4] << 24 | (size_t)p[at + 5] << 16 |
		      (size_t)p[at + 6] << 8 | p[at + 7];
		if (r->raw.len - at - 8 < len || p[at] > 2) {
			r->bad_frame = true;
			return;
		}
		strbuf_add(p[at] == 2 ? &r->errout : &r->out,
			   r->raw.buf + at + 8, len);
		at += 8 + len;
	}
}

/*
 * Run argv in cid with in (len bytes; NULL: no stdin), writing stdin and
 * reading the output together (poll), then half-closing.
 */
static int run_exec(const char *cid, json_t *argv, const char *in,
		    size_t len, struct run *r, struct sbx_error **err)
{
	json_t *body = xjson_pack("{s:b, s:b, s:b, s:O, s:[s]}", "AttachStdin",
				  in != NULL, "AttachStdout", 1, "AttachStderr",
				  1, "Cmd", argv, "Env", "T_CONTAINER=1");
	char *xid = NULL;
	int fd = -1, rc = -1;
	size_t sent = 0;
	long long until = clock_now_ms() + 60000;
	json_t *j = NULL;

	memset(r, 0, sizeof(*r));
	if (engine_exec_create(&E, cid, body, &xid, err) < 0)
		goto out;
	if (engine_exec_attach(&E, xid, clock_now_ms() + 10000, &fd, &r->raw,
			       err) < 0)
		goto out;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (!in)
		shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		char buf[65536];
		ssize_t n;

		if (in && sent < len)
			p.events |= POLLOUT;
		if (clock_now_ms() > until) {
			sbx_error_set(err, 1, 0, "exec took over 60 s");
			goto out;
		}
		if (poll(&p, 1, 1000) <= 0)
			continue;
		if (p.revents & POLLOUT) {
			n = send(fd, in + sent, len - sent, MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
			else if (n < 0 && errno != EAGAIN) {
				sbx_error_set(err, 1, errno, "send");
				goto out;
			}
			if (sent == len)
				shutdown(fd, SHUT_WR);
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(fd, buf, sizeof(buf), 0);
			if (n == 0)
				break;
			if (n < 0 && errno != EAGAIN) {
				sbx_error_set(err, 1, errno, "recv");
				goto out;
			}
			if (n > 0)
				strbuf_add(&r->raw, buf, (size_t)n);
		}
	}
	decode(r);
	if (engine_exec_inspect(&E, xid, &j, err) < 0)
		goto out;
	r->exit_code = jint(j, "ExitCode");
	r->pid = jint(j, "Pid");
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	json_decref(j);
	json_decref(body);
	free(xid);
	return rc;
}

static const char *sb(struct strbuf *s)
{
	return s->buf ? s->buf : "";
}

static void diag_out(struct run *r)
{
	diag("exit %lld, pid %lld; stdout:\n%s\nstderr:\n%s", r->exit_code,
	     r->pid, sb(&r->out), sb(&r->errout));
}

static void test_exec(const char *cid)
{
	struct sbx_error *err = NULL;
	struct run r;
	json_t *argv;
	size_t big = 4u << 20;
	char *data = xmalloc(big), want[65], *line;
	unsigned x = 2463534242u;
	int rc;

	argv = xjson_pack("[s,s,s]", "sh", "-c",
			  "echo out; echo err >&2; echo out2; id -u");
	ok(run_exec(cid, argv, NULL, 0, &r, &err) == 0, "exec: sh -c");
	diag_err(err);
	sbx_error_free(&err);
	is_str(sb(&r.out), "out\nout2\n10001\n", "exec: stdout apart");
	is_str(sb(&r.errout), "err\n", "exec: stderr apart");
	ok(!r.bad_frame, "exec: the stream is whole frames");
	is_int(r.exit_code, 0, "exec: exit 0");
	run_release(&r);
	json_decref(argv);

	argv = xjson_pack("[s,s,s]", "sh", "-c", "exit 7");
	rc = run_exec(cid, argv, NULL, 0, &r, &err);
	ok(rc == 0 && r.exit_code == 7,
	   "exec: exit 7 passes through (got %lld)", r.exit_code);
	sbx_error_free(&err);
	run_release(&r);
	json_decref(argv);

	/* 4 MiB of bytes nothing compresses, through two commands. */
	for (size_t i = 0; i < big; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[i] = (char)(x >> 24);
	}
	sha256_hex(data, big, want);
	argv = xjson_pack("[s]", "sha256sum");
	ok(run_exec(cid, argv, data, big, &r, &err) == 0,
	   "exec: 4 MiB through sha256sum");
	diag_err(err);
	sbx_error_free(&err);
	line = xasprintf("%s  -\n", want);
	is_str(sb(&r.out), line, "exec: sha256sum of the 4 MiB is ours");
	free(line);
	run_release(&r);
	json_decref(argv);
	argv = xjson_pack("[s,s]", "wc", "-c");
	rc = run_exec(cid, argv, data, big, &r, &err);
	ok(rc == 0, "exec: 4 MiB through wc -c");
	sbx_error_free(&err);
	ok(strtoul(sb(&r.out), NULL, 10) == big && r.exit_code == 0,
	   "exec: wc -c counts 4194304 (got %lu)",
	   strtoul(sb(&r.out), NULL, 10));
	run_release(&r);
	json_decref(argv);

	/* EOF by half-close: cat ends, and says what it read first. */
	argv = xjson_pack("[s,s,s]", "sh", "-c", "cat; echo END $?");
	rc = run_exec(cid, argv, "hello\n", 6, &r, &err);
	if (!ok(rc == 0 && !strcmp(sb(&r.out), "hello\nEND 0\n"),
	   "exec: stdin then half-close: the command sees EOF"))
		diag_out(&r);
	sbx_error_free(&err);
	run_release(&r);
	json_decref(argv);
	/* A command that reads nothing, with stdin offered: it just ends. */
	argv = xjson_pack("[s]", "true");
	ok(run_exec(cid, argv, data, big, &r, &err) == 0 && r.exit_code == 0,
	   "exec: a command that reads no stdin still ends");
	diag_err(err);
	sbx_error_free(&err);
	run_release(&r);
	json_decref(argv);
	free(data);

	/*
	 * What dockerd 20.10 does for a command that cannot start (see the
	 * comment at the top of engine-container.c): the exec command's
	 * 126/127 depend on these staying so.
	 */
	argv = xjson_pack("[s]", "t-container-nonexistent");
	rc = run_exec(cid, argv, NULL, 0, &r, &err);
	ok(rc == 0, "exec: a command not found still attaches");
	sbx_error_free(&err);
	is_int(r.exit_code, 126, "exec not found: ExitCode 126");
	is_int(r.pid, 0, "exec not found: Pid 0 (never ran)");
	if (!ok(strstr(sb(&r.out), "OCI runtime exec failed") &&
	       strstr(sb(&r.out), "executable file not found in $PATH") &&
	       !r.errout.len,
	   "exec not found: the reason is in the stdout stream"))
		diag_out(&r);
	run_release(&r);
	json_decref(argv);
	argv = xjson_pack("[s]", "/etc/passwd");
	rc = run_exec(cid, argv, NULL, 0, &r, &err);
	if (!ok(rc == 0 && r.exit_code == 126 && r.pid == 0 && strstr(sb(&r.out), "permission denied"),
	   "exec not executable: 126, Pid 0, 'permission denied'"))
		diag_out(&r);
	sbx_error_free(&err);
	run_release(&r);
	json_decref(argv);
	argv = xjson_pack("[s,s,s]", "sh", "-c", "t-container-nonexistent");
	ok(run_exec(cid, argv, NULL, 0, &r, &err) == 0 && r.exit_code == 127 &&
	       r.pid > 0,
	   "exec: a shell's own 127 has a Pid");
	sbx_error_free(&err);
	run_release(&r);
	json_decref(argv);
}

/*
 * The typed calls (engine-spec.c): the bodies are the very bytes the
 * callers built before (golden), and an inspect, a list and an exec read
 * back into the structures say what the engine says.
 */
static void test_typed(const char *cid)
{
	static const char *const cmd[] = {"sh", "-c",
					  "echo \"$T_TYPED\"; exit 7"};
	static const char *const env[] = {"T_TYPED=typed ok"};
	struct engine_exec_spec xs = {.cmd = cmd,
				      .ncmd = 3,
				      .env = env,
				      .nenv = 1,
				      .user = NULL,
				      .working_dir = tmpdir,
				      .attach_stdin = false};
	static const char *const one[] = {"ALL"};
	static const char *const nnp[] = {"no-new-privileges"};
	static const char *const ep[] = {"/bin/sleep"};
	static const char *const idle[] = {"2147483647"};
	static const char *const lk[] = {"a.b", "c"}, *const lv[] = {"1", "x"};
	static const char *const cenv[] = {"A=1", "HOME=/w"};
	struct engine_bind bind = {"/host/ws", "/w"};
	struct engine_container_spec cs = {.image = "img:1",
					   .user = "10001:10001",
					   .working_dir = "/w",
					   .entrypoint = ep,
					   .nentrypoint = 1,
					   .cmd = idle,
					   .ncmd = 1,
					   .env = cenv,
					   .nenv = 2,
					   .label_keys = lk,
					   .label_values = lv,
					   .nlabels = 2,
					   .mounts = &bind,
					   .nmounts = 1,
					   .tmpfs_path = "/tmp",
					   .tmpfs_opts = "size=64m",
					   .init = true,
					   .cap_drop = one,
					   .ncap_drop = 1,
					   .security_opt = nnp,
					   .nsecurity_opt = 1,
					   .pids_limit = 512,
					   .nano_cpus = 2000000000,
					   .memory = 1 << 30,
					   .memory_swap = 1 << 30,
					   .network_mode = "none",
					   .stop_signal = "SIGKILL"};
	struct engine_container_info ci;
	struct engine_container_summary *v = NULL;
	struct engine_exec_info ei = {0};
	struct sbx_error *err = NULL;
	struct run r;
	json_t *j;
	char *js, *want, *xid = NULL;
	char *lab = xasprintf("t-container.pid=%s", pidstr);
	const char *labels[] = {lab};
	size_t n = 0, found = 0;
	int fd = -1;
	long long until;

	j = engine_exec_spec_json(&xs);
	js = json_dumps(j, JSON_COMPACT);
	want = xasprintf("{\"AttachStdin\":false,\"AttachStdout\":true,"
			 "\"AttachStderr\":true,\"Tty\":false,\"Cmd\":[\"sh\","
			 "\"-c\",\"echo \\\"$T_TYPED\\\"; exit 7\"],\"User\":"
			 "\"\",\"WorkingDir\":\"%s\",\"Privileged\":false,"
			 "\"Env\":[\"T_TYPED=typed ok\"]}",
			 tmpdir);
	is_str(js, want,
	       "typed exec: the create body svc-exec.c builds, byte for byte");
	free(want);
	free(js);
	json_decref(j);
	j = engine_container_spec_json(&cs);
	js = json_dumps(j, JSON_COMPACT);
	is_str(
	    js,
	    "{\"Image\":\"img:1\",\"User\":\"10001:10001\",\"Entrypoint\":"
	    "[\"/bin/sleep\"],\"Cmd\":[\"2147483647\"],\"WorkingDir\":\"/w\","
	    "\"Env\":[\"A=1\",\"HOME=/w\"],\"Labels\":{\"a.b\":\"1\",\"c\":"
	    "\"x\"},\"Tty\":false,\"OpenStdin\":false,\"AttachStdout\":false,"
	    "\"AttachStderr\":false,\"HostConfig\":{\"Init\":true,\"CapDrop\":"
	    "[\"ALL\"],\"SecurityOpt\":[\"no-new-privileges\"],\"PidsLimit\":"
	    "512,\"NanoCpus\":2000000000,\"Memory\":1073741824,\"MemorySwap\":"
	    "1073741824,\"Tmpfs\":{\"/tmp\":\"size=64m\"},\"NetworkMode\":"
	    "\"none\",\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/host/ws\","
	    "\"Target\":\"/w\",\"ReadOnly\":false,\"BindOptions\":"
	    "{\"Propagation\":\"rprivate\"}}],\"Privileged\":false,"
	    "\"PublishAllPorts\":false,\"IpcMode\":\"private\","
	    "\"CgroupnsMode\":"
	    "\"private\",\"RestartPolicy\":{\"Name\":\"no\"},\"AutoRemove\":"
	    "false,\"Devices\":[],\"CapAdd\":[]},\"StopSignal\":\"SIGKILL\"}",
	    "typed create: the body session-engine.c built, byte for byte");
	free(js);
	json_decref(j);

	ok(engine_container_info_get(&E, cid, &ci, &err) == 0,
	   "typed inspect of the running container");
	diag_err(err);
	sbx_error_free(&err);
	is_str(ci.id, cid, "typed inspect: id");
	is_str(ci.state.status, "running", "typed inspect: state running");
	ok(ci.state.running && !ci.state.paused && !ci.state.oom_killed &&
	       ci.state.pid > 1,
	   "typed inspect: running, not paused, a host pid (%lld)",
	   ci.state.pid);
	is_str(ci.user, "10001:10001", "typed inspect: user");
	ok(ci.host.init && ci.host.ncap_drop == 1 &&
	       !strcmp(ci.host.cap_drop[0], "ALL") &&
	       ci.host.nsecurity_opt == 1 && !ci.host.privileged,
	   "typed inspect: init, CapDrop ALL, one security opt, unprivileged");
	ok(ci.host.pids_limit == 512 && ci.host.nano_cpus == 2000000000 &&
	       ci.host.memory == 256 << 20 && ci.host.memory_swap == 256 << 20,
	   "typed inspect: pids, cpus, memory and swap");
	is_str(engine_labels_get(&ci.host.tmpfs, "/tmp"), "size=64m",
	       "typed inspect: the tmpfs");
	is_str(ci.host.network_mode, "none", "typed inspect: network none");
	ok(ci.nmounts == 1 && !strcmp(ci.mounts[0].type, "bind") &&
	       !strcmp(ci.mounts[0].destination, tmpdir),
	   "typed inspect: the one bind mount at its target");
	is_str(engine_labels_get(&ci.labels, "t-container.pid"), pidstr,
	       "typed inspect: a label");
	/* No Env in the body nor the image: none; the engine names the
	 * host after the id. */
	ok(ci.nenv == 0 && ci.hostname && !strncmp(ci.hostname, cid, 12),
	   "typed inspect: no env, and the hostname");
	{
		struct engine_container_info cp;

		engine_container_info_copy(&cp, &ci);
		engine_container_info_release(&ci);
		ok(cp.id && !strcmp(cp.id, cid) && cp.state.pid > 1 &&
		       cp.nmounts == 1 &&
		       !strcmp(cp.mounts[0].destination, tmpdir) &&
		       !strcmp(engine_labels_get(&cp.labels, "t-container.pid")
				   ?: "",
			       pidstr) &&
		       cp.host.ncap_drop == 1,
		   "typed inspect: a copy outlives its source");
		engine_container_info_release(&cp);
	}

	ok(engine_container_list_info(&E, labels, 1, &v, &n, &err) == 0,
	   "typed list");
	sbx_error_free(&err);
	for (size_t i = 0; i < n; i++)
		if (v[i].id && !strcmp(v[i].id, cid) && v[i].created > 0 &&
		    v[i].name && v[i].name[0] == '/' && v[i].state &&
		    !strcmp(engine_labels_get(&v[i].labels, "t-container.pid")
				?: "",
			    pidstr))
			found++;
	is_int((long long)found, 1,
	       "typed list: the container, its name, state, time and labels");
	engine_container_summaries_free(v, n);

	memset(&r, 0, sizeof(r));
	ok(engine_exec_create_spec(&E, cid, &xs, &xid, &err) == 0 && xid &&
	       engine_exec_attach(&E, xid, clock_now_ms() + 10000, &fd, &r.raw,
				  &err) == 0,
	   "typed exec: created and attached");
	diag_err(err);
	sbx_error_free(&err);
	if (fd >= 0) {
		char buf[4096];
		ssize_t k;

		shutdown(fd, SHUT_WR);
		while ((k = read(fd, buf, sizeof(buf))) > 0)
			strbuf_add(&r.raw, buf, (size_t)k);
		close(fd);
	}
	decode(&r);
	is_str(sb(&r.out), "typed ok\n", "typed exec: its env and its output");
	until = clock_now_ms() + 5000;
	while (xid && engine_exec_info_get(&E, xid, &ei, &err) == 0 &&
	       ei.running && clock_now_ms() < until)
		usleep(10000);
	sbx_error_free(&err);
	ok(!ei.running && ei.has_exit_code && ei.exit_code == 7 && ei.pid > 0,
	   "typed exec info: ended, exit code 7, a pid (%lld)", ei.pid);
	run_release(&r);
	free(xid);
	free(lab);
}

static void test_exec_errors(const char *cid)
{
	struct sbx_error *err = NULL;
	json_t *body = xjson_pack("{s:[s]}", "Cmd", "true"), *j = NULL;
	char *xid = NULL;
	struct strbuf pre = STRBUF_INIT;
	int fd = -1;

	ok(engine_exec_create(&E, "t-container-no-such", body, &xid, &err) <
		   0 &&
	       is_http(err, 404),
	   "exec create in a missing container: HTTP 404");
	sbx_error_free(&err);
	ok(engine_exec_inspect(&E, "0123456789abcdef", &j, &err) < 0 &&
	       is_http(err, 404) && !j,
	   "exec inspect of a missing exec: HTTP 404");
	sbx_error_free(&err);
	ok(engine_exec_attach(&E, "0123456789abcdef", 0, &fd, &pre, &err) <
		   0 &&
	       is_http(err, 404) && fd < 0 && tap_status(err) == 1 &&
	       strstr(err->msg, "No such exec instance"),
	   "exec attach of a missing exec: HTTP 404 and the engine's words");
	diag_err(err);
	sbx_error_free(&err);
	/*
	 * An exec started once cannot start again, but dockerd 20.10 says so
	 * after the upgrade, in the stream: "Error: Exec command ID has
	 * already run" as a stdout frame.
	 */
	engine_exec_create(&E, cid, body, &xid, NULL);
	for (int round = 0; round < 2; round++) {
		strbuf_release(&pre);
		if (!xid ||
		    engine_exec_attach(&E, xid, 0, &fd, &pre, &err) < 0)
			break;
		{
			char buf[256];
			ssize_t n;
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				strbuf_add(&pre, buf, (size_t)n);
			close(fd);
			fd = -1;
		}
	}
	/* "has already run", or "is already running" while the engine has
	 * not yet recorded the end of the first. */
	ok(xid && !err && pre.len > 8 && pre.buf[0] == 1 &&
	       (strstr(pre.buf + 8, "has already run") ||
		strstr(pre.buf + 8, "is already running")),
	   "exec attach of an exec that ran: 101, and the refusal in "
	   "the stream");
	diag_err(err);
	sbx_error_free(&err);
	free(xid);
	strbuf_release(&pre);
	json_decref(body);
}

/* Ids that try to leave /containers/ID/...: never another endpoint. */
static void test_hostile_ids(void)
{
	static const char *const ids[] = {
	    "../../version", "..", ".", "x/../../version", "x?all=1",
	    "x#y", "%2e%2e", "x\r\nHost: evil", "",
	};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct sbx_error *err = NULL;
		json_t *j = NULL;
		int rc = engine_container_inspect(&E, ids[i], &j, &err);
		ok(rc < 0 && !j && err && err->http >= 300,
		   "inspect of id %zu is an engine refusal, not another "
		   "endpoint (HTTP %d)",
		   i, err ? err->http : 0);
		json_decref(j);
		sbx_error_free(&err);
	}
}

static void test_list(const char *cid_a)
{
	struct sbx_error *err = NULL;
	json_t *body = hardened_body("b"), *j = NULL, *c;
	char *name = name_of("b"), *cid_b = NULL, *l1, *l2;
	const char *both[2];
	bool seen_a = false, seen_b = false, other = false;
	size_t i;

	engine_container_create(&E, name, body, &cid_b, &err);
	diag_err(err);
	sbx_error_free(&err);
	l1 = xasprintf("t-container.pid=%s", pidstr);
	l2 = xstrdup("t-container.which=a");
	both[0] = l1;
	both[1] = l2;
	ok(engine_container_list(&E, both, 1, &j, &err) == 0 &&
	       json_is_array(j),
	   "list by our pid label");
	json_array_foreach(j, i, c)
	{
		const char *id = jstr(c, "Id");
		if (id && !strcmp(id, cid_a))
			seen_a = true;
		else if (id && cid_b && !strcmp(id, cid_b))
			seen_b = true;
		else
			other = true;
	}
	ok(seen_a && seen_b && !other,
	   "list: both of ours, running and created, and nothing else");
	json_decref(j);
	j = NULL;
	ok(engine_container_list(&E, both, 2, &j, &err) == 0 &&
	       json_array_size(j) == 1 &&
	       !strcmp(jstr(json_array_get(j, 0), "Id"), cid_a),
	   "list with two labels: they AND (only a)");
	json_decref(j);
	j = NULL;
	{
		const char *none = "t-container.pid=none-such";
		ok(engine_container_list(&E, &none, 1, &j, &err) == 0 &&
		       json_is_array(j) && json_array_size(j) == 0,
		   "list with a label nobody has: empty array");
	}
	json_decref(j);
	free(l1);
	free(l2);
	free(cid_b);
	free(name);
	json_decref(body);
}

static void test_life(const char *cid)
{
	struct sbx_error *err = NULL;
	json_t *j = NULL;
	bool gone = true;
	long long t0;
	char *path;

	ok(engine_container_remove(&E, cid, false, &gone, &err) < 0 &&
	       is_http(err, 409),
	   "remove without force of a running one: HTTP 409, an error");
	sbx_error_free(&err);

	path = xasprintf("/containers/%s/pause", cid);
	ok(call_simple(&E, "POST", path, NULL, NULL, &err) == 0, "pause");
	free(path);
	sbx_error_free(&err);
	engine_container_inspect(&E, cid, &j, NULL);
	ok(json_is_true(jget(j, "State.Paused")), "paused");
	json_decref(j);
	ok(engine_container_unpause(&E, cid, &err) == 0, "unpause");
	sbx_error_free(&err);
	engine_container_inspect(&E, cid, &j, NULL);
	if (!ok(!json_is_true(jget(j, "State.Paused")) &&
		    json_is_true(jget(j, "State.Running")),
		"unpaused and running")) {
		char *d = json_dumps(jget(j, "State"), JSON_COMPACT);
		diag("State: %s", d);
		free(d);
	}
	json_decref(j);
	ok(engine_container_unpause(&E, cid, &err) == 0,
	   "unpause of one not paused: success");
	diag_err(err);
	sbx_error_free(&err);

	t0 = clock_now_ms();
	ok(engine_container_stop(&E, cid, 5, &err) == 0, "stop");
	diag_err(err);
	sbx_error_free(&err);
	diag("stop took %lld ms", clock_now_ms() - t0);
	engine_container_inspect(&E, cid, &j, NULL);
	is_str(jstr(j, "State.Status"), "exited", "stopped: exited");
	json_decref(j);
	ok(engine_container_stop(&E, cid, 5, &err) == 0,
	   "stop again: success (304)");
	sbx_error_free(&err);
	ok(engine_container_kill(&E, cid, "KILL", &err) < 0 &&
	       is_http(err, 409),
	   "kill of a stopped one: HTTP 409 for the caller to judge");
	sbx_error_free(&err);

	engine_container_start(&E, cid, NULL);
	ok(engine_container_kill(&E, cid, "KILL", &err) == 0, "kill KILL");
	diag_err(err);
	sbx_error_free(&err);
	for (int i = 0; i < 50; i++) {
		engine_container_inspect(&E, cid, &j, NULL);
		if (!json_is_true(jget(j, "State.Running")))
			break;
		json_decref(j);
		j = NULL;
		usleep(100000);
	}
	ok(!json_is_true(jget(j, "State.Running")) &&
	       jint(j, "State.ExitCode") == 137,
	   "killed: not running, exit 137");
	json_decref(j);
	j = NULL;
	ok(engine_container_kill(&E, cid, "NOSUCHSIG", &err) < 0 &&
	       err->http >= 400,
	   "kill with a bad signal: an engine refusal");
	sbx_error_free(&err);

	engine_container_start(&E, cid, NULL);
	ok(engine_container_remove(&E, cid, true, &gone, &err) == 0 && !gone,
	   "remove force of a running one: removed, not 'gone'");
	diag_err(err);
	sbx_error_free(&err);
	ok(engine_container_remove(&E, cid, true, &gone, &err) == 0 && gone,
	   "remove again: success, 'gone'");
	sbx_error_free(&err);
	ok(engine_container_remove(&E, cid, false, NULL, &err) == 0,
	   "remove again, gone NULL: success");
	sbx_error_free(&err);
	ok(engine_container_inspect(&E, cid, &j, &err) < 0 && !j &&
	       is_http(err, 404) && tap_status(err) == 1,
	   "inspect of a removed one: HTTP 404");
	sbx_error_free(&err);
	ok(engine_container_start(&E, cid, &err) < 0 && is_http(err, 404),
	   "start of a removed one: HTTP 404");
	sbx_error_free(&err);
	ok(engine_container_stop(&E, cid, 1, &err) < 0 && is_http(err, 404),
	   "stop of a removed one: HTTP 404");
	sbx_error_free(&err);
	ok(engine_container_unpause(&E, cid, &err) < 0 && is_http(err, 404),
	   "unpause of a removed one: HTTP 404");
	sbx_error_free(&err);
}

/* Remove every container of ours that is left. */
static void cleanup(void)
{
	char *l = xasprintf("t-container.pid=%s", pidstr);
	const char *labels[1] = {l};
	json_t *j = NULL, *c;
	size_t i;

	if (engine_container_list(&E, labels, 1, &j, NULL) == 0)
		json_array_foreach(j, i, c)
		    engine_container_remove(&E, jstr(c, "Id"), true, NULL,
					    NULL);
	json_decref(j);
	free(l);
}

/*
 * Fake engines for engine_exec_attach: a listener that takes one
 * connection, reads the request, then plays a script.
 */
struct fake {
	int lfd;
	const char *reply; /* sent after the request */
	size_t reply_len;
	size_t piece;	 /* bytes per write (0: all at once) */
	int hold_ms;	 /* before closing */
	bool no_answer;	 /* read the request, then say nothing */
	bool endless;	 /* headers that never end */
	long long took_ms; /* engine_exec_attach's own time */
	size_t npre;	   /* what it returned in pre */
	struct strbuf request;
	pthread_t th;
};

static void *fake_main(void *ud)
{
	struct fake *f = ud;
	int c = accept(f->lfd, NULL, NULL);
	char buf[4096];
	ssize_t n;

	if (c < 0)
		return NULL;
	while (!strstr(sb(&f->request), "\r\n\r\n{\"Detach\":false,"
					 "\"Tty\":false}") &&
	       (n = read(c, buf, sizeof(buf))) > 0)
		strbuf_add(&f->request, buf, (size_t)n);
	if (f->endless) {
		static const char pad[] = "X-Pad: aaaaaaaaaaaaaaaaaaaaaaaa\r\n";
		if (write(c, "HTTP/1.1 101 UPGRADED\r\n", 23) < 0)
			goto out;
		for (int i = 0; i < 4096; i++)
			if (send(c, pad, sizeof(pad) - 1, MSG_NOSIGNAL) < 0)
				goto out;
	} else if (!f->no_answer) {
		size_t step = f->piece ? f->piece : f->reply_len;
		for (size_t at = 0; at < f->reply_len; at += step) {
			size_t k = f->reply_len - at < step ? f->reply_len - at
							    : step;
			if (send(c, f->reply + at, k, MSG_NOSIGNAL) < 0)
				goto out;
			if (f->piece)
				usleep(200);
		}
	}
	usleep((useconds_t)f->hold_ms * 1000);
out:
	close(c);
	return NULL;
}

static char fake_sock[96];
static int tcp_port;

static int fake_listen(bool tcp)
{
	int fd;
	if (tcp) {
		struct sockaddr_in a = {0};
		socklen_t al = sizeof(a);
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockname(fd, (struct sockaddr *)&a, &al) < 0)
			bail_out("tcp listener: %s", strerror(errno));
		tcp_port = ntohs(a.sin_port);
	} else {
		struct sockaddr_un a = {0};
		a.sun_family = AF_UNIX;
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", fake_sock);
		unlink(fake_sock);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			bail_out("unix listener: %s", strerror(errno));
	}
	if (listen(fd, 4) < 0)
		bail_out("listen: %s", strerror(errno));
	return fd;
}

/* Attach through a fake playing f; *fe configured for unix or tcp. */
static int fake_attach(struct fake *f, bool tcp, long long deadline,
		       int *fd, struct strbuf *pre, struct sbx_error **err)
{
	struct engine fe;
	char *host = tcp ? NULL : xasprintf("unix://%s", fake_sock);
	int rc;

	f->lfd = fake_listen(tcp);
	if (tcp)
		host = xasprintf("tcp://127.0.0.1:%d", tcp_port);
	strbuf_init(&f->request);
	if (engine_init(&fe, NULL, host, NULL) < 0)
		bail_out("engine_init %s", host);
	snprintf(fe.api, sizeof(fe.api), "1.41");
	pthread_create(&f->th, NULL, fake_main, f);
	f->took_ms = clock_now_ms();
	rc = engine_exec_attach(&fe, "abc", deadline, fd, pre, err);
	f->took_ms = clock_now_ms() - f->took_ms;
	f->npre = pre->len;
	if (rc == 0) {
		/* The stream goes on after the headers: pre, then the rest. */
		char buf[256];
		ssize_t n;
		while ((n = read(*fd, buf, sizeof(buf))) > 0)
			strbuf_add(pre, buf, (size_t)n);
		close(*fd);
		*fd = -1;
	}
	/* Wake a fake still in accept() when the client never came. */
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->th, NULL);
	close(f->lfd);
	engine_release(&fe);
	free(host);
	return rc;
}

/*
 * A fake of dockerd 20.10 after an unpause: its reply comes before its
 * state says so (the containerd event that clears State.Paused is handled
 * later), so the first `lag` inspects still say paused.  Any number of
 * requests, one per connection.
 */
struct lagging {
	int lfd;
	int lag;      /* inspects that still say paused */
	int inspects; /* GET .../json answered */
	int unpauses; /* POST .../unpause answered */
};

static void *lagging_main(void *ud)
{
	struct lagging *l = ud;
	int c;

	while ((c = accept(l->lfd, NULL, NULL)) >= 0) {
		struct strbuf req = STRBUF_INIT;
		char buf[1024], *body;
		ssize_t n;

		while (!strstr(sb(&req), "\r\n\r\n") &&
		       (n = read(c, buf, sizeof(buf))) > 0)
			strbuf_add(&req, buf, (size_t)n);
		if (strncmp(sb(&req), "POST ", 5) == 0 &&
		    strstr(sb(&req), "/unpause ")) {
			l->unpauses++;
			body = xstrdup("");
		} else {
			bool paused = l->inspects++ < l->lag;
			body = xasprintf("{\"Id\":\"abc\",\"State\":{"
					 "\"Status\":\"%s\",\"Running\":true,"
					 "\"Paused\":%s}}",
					 paused ? "paused" : "running",
					 paused ? "true" : "false");
		}
		dprintf(c,
			"HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
			"Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
			*body ? "200 OK" : "204 No Content", strlen(body),
			body);
		free(body);
		strbuf_release(&req);
		close(c);
	}
	return NULL;
}

/* engine_container_unpause against a lagging fake; its time in *took. */
static int lagging_unpause(struct lagging *l, long long *took,
			   struct sbx_error **err)
{
	struct engine fe;
	char *host = xasprintf("unix://%s", fake_sock);
	pthread_t th;
	int rc;

	l->lfd = fake_listen(false);
	if (engine_init(&fe, NULL, host, NULL) < 0)
		bail_out("engine_init %s", host);
	snprintf(fe.api, sizeof(fe.api), "1.41");
	pthread_create(&th, NULL, lagging_main, l);
	*took = clock_now_ms();
	rc = engine_container_unpause(&fe, "abc", err);
	*took = clock_now_ms() - *took;
	shutdown(l->lfd, SHUT_RDWR);
	pthread_join(th, NULL);
	close(l->lfd);
	engine_release(&fe);
	free(host);
	return rc;
}

static void test_unpause_lag(void)
{
	struct sbx_error *err = NULL;
	long long took;

	{
		struct lagging l = {.lag = 3};
		int rc = lagging_unpause(&l, &took, &err);

		ok(rc == 0, "unpause, the engine's state lagging: success%s%s",
		   err ? ": " : "", err ? err->msg : "");
		is_int(l.inspects, 4,
		       "... once its state said not paused (3 said paused)");
		is_int(l.unpauses, 1, "... unpaused once");
		sbx_error_free(&err);
	}
	{
		struct lagging l = {.lag = 1 << 30};
		int rc = lagging_unpause(&l, &took, &err);

		ok(rc < 0 && err && err->kind == SBX_E_TIMEOUT,
		   "unpause, the engine's state paused for good: timed out "
		   "(%s)",
		   err ? err->msg : "");
		ok(took >= 4900 && took < 8000,
		   "... after about 5 s (%lld ms), its state read %d times",
		   took, l.inspects);
		sbx_error_free(&err);
	}
}

#define UPGRADED                                                               \
	"HTTP/1.1 101 UPGRADED\r\nContent-Type: "                              \
	"application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"       \
	"Upgrade: tcp\r\n\r\n"
#define FRAME "\x01\0\0\0\0\0\0\x02hi"

static void test_fake(void)
{
	struct sbx_error *err = NULL;
	struct strbuf pre = STRBUF_INIT;
	int fd = -1, rc;
	static const char up[] = UPGRADED FRAME;
	static const char not_found[] =
	    "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
	    "Content-Length: 49\r\n\r\n"
	    "{\"message\":\"No such exec instance: \\u001b[31mx\"}\n";
	static const char chunked[] =
	    "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"
	    "10\r\n{\"message\":\"cont\r\n"
	    "12\r\nainer is paused\"}\n\r\n0\r\n\r\n";
	static const char plain200[] =
	    "HTTP/1.1 200 OK\r\nContent-Type: "
	    "application/vnd.docker.raw-stream\r\n\r\n" FRAME;

	snprintf(fake_sock, sizeof(fake_sock), "%s/fake.sock", tmpdir);

	{
		struct fake f = {.reply = up, .reply_len = sizeof(up) - 1,
				 .piece = 1};
		rc = fake_attach(&f, false, 0, &fd, &pre, &err);
		ok(rc == 0 &&
		       pre.len == 10 && !memcmp(pre.buf, FRAME, 10),
		   "fake: 101 sent a byte at a time; the stream after the "
		   "headers is whole");
		diag_err(err);
		sbx_error_free(&err);
		static const char line[] =
		    "POST /v1.41/exec/abc/start HTTP/1.1\r\n";
		ok(!strncmp(sb(&f.request), line, sizeof(line) - 1) &&
		       strstr(sb(&f.request), "\r\nConnection: Upgrade\r\n") &&
		       strstr(sb(&f.request), "\r\nUpgrade: tcp\r\n") &&
		       strstr(sb(&f.request), "\r\nHost: localhost\r\n") &&
		       strstr(sb(&f.request),
			      "\r\nContent-Type: application/json\r\n") &&
		       strstr(sb(&f.request), "\r\nContent-Length: 28\r\n"),
		   "fake: the request line and headers");
		strbuf_release(&f.request);
		strbuf_release(&pre);
	}
	/* Every split of the reply into two writes. */
	{
		bool all = true;
		for (size_t cut = 1; cut < sizeof(up) - 1; cut += 7) {
			struct fake f = {.reply = up, .reply_len = sizeof(up) - 1,
					 .piece = cut};
			if (fake_attach(&f, false, 0, &fd, &pre, &err) < 0 ||
			    pre.len != 10 || memcmp(pre.buf, FRAME, 10))
				all = false;
			sbx_error_free(&err);
			strbuf_release(&f.request);
			strbuf_release(&pre);
		}
		ok(all, "fake: the reply cut into pieces of every 7th size");
	}
	{
		struct fake f = {.reply = plain200,
				 .reply_len = sizeof(plain200) - 1};
		rc = fake_attach(&f, true, 0, &fd, &pre, &err);
		ok(rc == 0 && pre.len == 10 && f.npre == 10,
		   "fake over tcp://: 200 without an upgrade is accepted, "
		   "the bytes that came with the headers in pre");
		diag_err(err);
		sbx_error_free(&err);
		ok(strstr(sb(&f.request), "\r\nHost: 127.0.0.1:") != NULL,
		   "fake over tcp://: Host names the engine");
		strbuf_release(&f.request);
		strbuf_release(&pre);
	}
	{
		struct fake f = {.reply = not_found,
				 .reply_len = sizeof(not_found) - 1,
				 .hold_ms = 3000};
		rc = fake_attach(&f, false, 0, &fd, &pre, &err);
		ok(rc < 0 &&
		       is_http(err, 404) && tap_status(err) == 1 &&
		       fd < 0,
		   "fake: 404 is an error with HTTP 404");
		ok(err && strstr(err->msg, "No such exec instance: \\x1b[31mx") &&
		       !strchr(err->msg, 0x1b),
		   "fake: the engine's message, its ESC escaped (%s)",
		   err ? err->msg : "");
		ok(f.took_ms < 2500,
		   "fake: a body with Content-Length is read without waiting "
		   "for the close (%lld ms)", f.took_ms);
		sbx_error_free(&err);
		strbuf_release(&f.request);
	}
	{
		struct fake f = {.reply = chunked,
				 .reply_len = sizeof(chunked) - 1,
				 .piece = 3, .hold_ms = 3000};
		rc = fake_attach(&f, false, 0, &fd, &pre, &err);
		ok(rc < 0 && is_http(err, 409) &&
		       strstr(err->msg, ": container is paused") &&
		       f.took_ms < 2500,
		   "fake: a chunked 409 gives its message (%s)",
		   err ? err->msg : "");
		sbx_error_free(&err);
		strbuf_release(&f.request);
	}
	{
		struct fake f = {.endless = true, .hold_ms = 0};
		rc = fake_attach(&f, false, 0, &fd, &pre, &err);
		ok(rc < 0 && err &&
		       tap_status(err) == 3 &&
		       strstr(err->msg, "headers over 16384 bytes"),
		   "fake: headers over 16 KiB are refused (%s)",
		   err ? err->msg : "");
		sbx_error_free(&err);
		strbuf_release(&f.request);
	}
	{
		struct fake f = {.no_answer = true, .hold_ms = 2000};
		rc = fake_attach(&f, false, clock_now_ms() + 300, &fd,
				     &pre, &err);
		ok(rc < 0 && err && tap_status(err) == 3 &&
		       err->errnum == ETIMEDOUT,
		   "fake: no answer: the deadline ends it (%s)",
		   err ? err->msg : "");
		ok(f.took_ms >= 250 && f.took_ms < 1000,
		   "fake: ... at the deadline (%lld ms)", f.took_ms);
		sbx_error_free(&err);
		strbuf_release(&f.request);
	}
	{
		static const char cut[] = "HTTP/1.1 101 UPGRADED\r\nConn";
		struct fake f = {.reply = cut, .reply_len = sizeof(cut) - 1};
		rc = fake_attach(&f, false, 0, &fd, &pre, &err);
		ok(rc < 0 && err &&
		       tap_status(err) == 3 && strstr(err->msg, "broke"),
		   "fake: a hang-up inside the headers: status 3 (%s)",
		   err ? err->msg : "");
		sbx_error_free(&err);
		strbuf_release(&f.request);
	}
	{
		static const char ssh[] = "SSH-2.0-OpenSSH_9.2\r\n\r\n";
		struct fake f = {.reply = ssh, .reply_len = sizeof(ssh) - 1};
		rc = fake_attach(&f, false, 0, &fd, &pre, &err);
		ok(rc < 0 && err &&
		       tap_status(err) == 3 &&
		       strstr(err->msg, "not HTTP"),
		   "fake: a reply that is not HTTP (%s)", err ? err->msg : "");
		sbx_error_free(&err);
		strbuf_release(&f.request);
	}
	/* No listener at all: a missing socket and a closed port. */
	{
		struct engine fe;
		char *host = xasprintf("unix://%s/none.sock", tmpdir);
		engine_init(&fe, NULL, host, NULL);
		ok(engine_exec_attach(&fe, "abc", 0, &fd, &pre, &err) < 0 &&
		       tap_status(err) == 3 && err->errnum == ENOENT,
		   "a missing socket: status 3, ENOENT");
		sbx_error_free(&err);
		engine_release(&fe);
		free(host);
		engine_init(&fe, NULL, "tcp://127.0.0.1:1", NULL);
		ok(engine_exec_attach(&fe, "abc", 0, &fd, &pre, &err) < 0 &&
		       tap_status(err) == 3 &&
		       err->errnum == ECONNREFUSED,
		   "a closed port: status 3, ECONNREFUSED");
		sbx_error_free(&err);
		engine_release(&fe);
		{
			struct engine_config tc;

			engine_config_defaults(&tc);
			tc.tls = true; /* DOCKER_TLS=1 */
			engine_init(&fe, &tc, "tcp://127.0.0.1:1", NULL);
		}
		ok(fe.tls &&
		       engine_exec_attach(&fe, "abc", 0, &fd, &pre, &err) <
			   0 &&
		       tap_status(err) == 3 && err->errnum == 0 &&
		       strstr(err->msg, "TLS"),
		   "a TLS engine is refused with status 3, before connecting");
		sbx_error_free(&err);
		engine_release(&fe);
	}
	strbuf_release(&pre);
}

int main(void)
{
	struct sbx_error *err = NULL;
	char *cid = NULL;

	xjson_init();
	/* t-container.sh passes its own pid, to find what a crash left. */
	if (getenv("T_CONTAINER_PID") &&
	    strspn(getenv("T_CONTAINER_PID"), "0123456789") ==
		strlen(getenv("T_CONTAINER_PID")) &&
	    strlen(getenv("T_CONTAINER_PID")) < sizeof(pidstr) &&
	    *getenv("T_CONTAINER_PID"))
		snprintf(pidstr, sizeof(pidstr), "%s", getenv("T_CONTAINER_PID"));
	else
		snprintf(pidstr, sizeof(pidstr), "%ld", (long)getpid());
	/* The directory bind-mounted, and the fakes' socket. */
	if (getenv("T_CONTAINER_DIR") && *getenv("T_CONTAINER_DIR") == '/' &&
	    strlen(getenv("T_CONTAINER_DIR")) < 40)
		snprintf(tmpdir, sizeof(tmpdir), "%s",
			 getenv("T_CONTAINER_DIR"));
	else if (!mkdtemp(strcpy(tmpdir, "/tmp/t-container.XXXXXX")))
		bail_out("mkdtemp: %s", strerror(errno));
	if (chmod(tmpdir, 0755) < 0)
		bail_out("chmod %s: %s", tmpdir, strerror(errno));
	if (engine_init(&E, NULL, getenv("DOCKER_HOST"), &err) < 0 ||
	    engine_negotiate(&E, NULL, &err) < 0) {
		printf("1..0 # SKIP no Docker engine at DOCKER_HOST=%s: %s\n",
		       getenv("DOCKER_HOST") ? getenv("DOCKER_HOST") : "",
		       err ? err->msg : "?");
		sbx_error_free(&err);
		engine_release(&E);
		rmdir(tmpdir);
		return 0;
	}
	{
		bool present = false;
		if (engine_image_inspect(&E, image, &present, NULL, &err) < 0 ||
		    !present) {
			printf("1..0 # SKIP the engine has no %s\n", image);
			sbx_error_free(&err);
			engine_release(&E);
			rmdir(tmpdir);
			return 0;
		}
	}

	test_create_inspect(&cid);
	test_start_stat(cid);
	test_exec(cid);
	test_typed(cid);
	test_exec_errors(cid);
	test_hostile_ids();
	test_list(cid);
	test_life(cid);
	cleanup();
	test_fake();
	test_unpause_lag();

	free(cid);
	engine_release(&E);
	unlink(fake_sock);
	rmdir(tmpdir);
	return done_testing();
}
