/*
 * tests/t-seccomp-dump.c - the seccomp filters of a process, as hex, and
 * whether two processes' filters decide every system call alike
 * (tests/t-exec-confine.sh: the engine's exec and the fast path must give
 * a command the same filter).
 *
 *   t-seccomp-dump PID
 *   t-seccomp-dump --same DUMP1 DUMP2
 *
 * Run as root on the host.  PID is seized (PTRACE_SEIZE stops it not and
 * sends it no signal), interrupted so that the requests below may be made,
 * its filters read with PTRACE_SECCOMP_GET_FILTER from index 0 until the
 * kernel says there is none (ENOENT), and let go.  One line a filter, the
 * most recently installed first (the kernel's order):
 *
 *   filter N: LEN insns HEX...
 *
 * and a last line "filters: N" (0 for a process with none).
 *
 * --same runs the filters of two such dumps on the same inputs and
 * compares what the kernel would decide (the action of the highest
 * precedence over all filters, with its data): every system call number
 * below 1,024 and the x32 ones, on x86-64, i386 and one other
 * architecture, with every argument at 0 and then each argument's either
 * half set in turn to every constant the filters compare an argument with
 * or mask it by (and one above those they compare by order).  Bytes alone
 * cannot be compared: runc asks libseccomp for a new program at each exec, and
 * two execs of one container get programs of one length whose instructions are
 * laid out differently.  Prints "same over N inputs", or the first input
 * decided differently and both decisions.
 *
 * Exit 0 when every filter was read (the dumps decide alike), 1 when a step
 * failed or they differ (said on stderr), 2 on a usage error.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>

/* A filter the kernel takes is at most BPF_MAXINSNS (4,096) long. */
#define MAX_INSNS 4096
#define MAX_FILTERS 16
#define MAX_CONSTS 1024

static int dump(pid_t pid)
{
	static struct sock_filter f[MAX_INSNS];
	long n, i;
	int k;

	for (k = 0;; k++) {
		n = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *)(long)k,
			   NULL);
		if (n < 0 && errno == ENOENT)
			break;
		/* EINVAL at the first: the process is not in filter mode. */
		if (n < 0 && errno == EINVAL && k == 0)
			break;
		if (n < 0 || n > MAX_INSNS) {
			fprintf(stderr, "t-seccomp-dump: filter %d of %d: %s\n",
				k, (int)pid,
				n < 0 ? strerror(errno) : "too long");
			return -1;
		}
		if (ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *)(long)k,
			   f) != n) {
			fprintf(stderr, "t-seccomp-dump: filter %d of %d: %s\n",
				k, (int)pid, strerror(errno));
			return -1;
		}
		printf("filter %d: %ld insns ", k, n);
		for (i = 0; i < n; i++)
			printf("%04x%02x%02x%08x", f[i].code, f[i].jt, f[i].jf,
			       f[i].k);
		printf("\n");
	}
	printf("filters: %d\n", k);
	return 0;
}

static int dump_pid(const char *arg)
{
	pid_t pid;
	char *end;
	int st, ret;

	pid = (pid_t)strtol(arg, &end, 10);
	if (pid <= 0 || *end) {
		fprintf(stderr, "usage: t-seccomp-dump PID\n");
		return 2;
	}
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0) {
		fprintf(stderr, "t-seccomp-dump: seize %d: %s\n", (int)pid,
			strerror(errno));
		return 1;
	}
	/* Every request but SEIZE, INTERRUPT and KILL wants the tracee stopped.
	 */
	if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) < 0 ||
	    waitpid(pid, &st, __WALL) != pid) {
		fprintf(stderr, "t-seccomp-dump: interrupt %d: %s\n", (int)pid,
			strerror(errno));
		return 1;
	}
	if (!WIFSTOPPED(st)) {
		fprintf(stderr, "t-seccomp-dump: %d ended\n", (int)pid);
		return 1;
	}
	ret = dump(pid);
	if (fflush(stdout) != 0)
		ret = -1;
	/* A stop for a signal passes the signal on; the interrupt's passes
	 * none. */
	if (ptrace(PTRACE_DETACH, pid, NULL,
		   (void *)(long)(st >> 16 == 0 ? WSTOPSIG(st) : 0)) < 0) {
		fprintf(stderr, "t-seccomp-dump: detach %d: %s\n", (int)pid,
			strerror(errno));
		ret = -1;
	}
	return ret < 0 ? 1 : 0;
}

struct prog {
	struct sock_filter *insn;
	int len;
};

struct chain {
	struct prog f[MAX_FILTERS];
	int n;
};

static int load(const char *path, struct chain *c)
{
	char *line = NULL, *p;
	size_t cap = 0;
	FILE *fp;
	int k, len, i;
	unsigned code, jt, jf, kk;

	fp = fopen(path, "r");
	if (!fp) {
		fprintf(stderr, "t-seccomp-dump: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, fp) > 0) {
		if (sscanf(line, "filter %d: %d insns ", &k, &len) != 2)
			continue;
		p = strstr(line, "insns ");
		if (c->n == MAX_FILTERS || len <= 0 || len > MAX_INSNS || !p ||
		    strlen(p + 6) < (size_t)len * 16) {
			fprintf(
			    stderr,
			    "t-seccomp-dump: %s: a filter line is malformed\n",
			    path);
			goto fail;
		}
		p += 6;
		c->f[c->n].insn =
		    calloc((size_t)len, sizeof(struct sock_filter));
		if (!c->f[c->n].insn)
			goto fail;
		for (i = 0; i < len; i++, p += 16) {
			if (sscanf(p, "%4x%2x%2x%8x", &code, &jt, &jf, &kk) !=
			    4)
				goto fail;
			c->f[c->n].insn[i] = (struct sock_filter){
			    (uint16_t)code, (uint8_t)jt, (uint8_t)jf, kk};
		}
		c->f[c->n++].len = len;
	}
	free(line);
	fclose(fp);
	return 0;
fail:
	free(line);
	fclose(fp);
	return -1;
}

/* Classic BPF as seccomp takes it (kernel/seccomp.c seccomp_check_filter):
 * loads of the data's words, scratch memory, ALU, jumps, returns.  -1 and a
 * message for what seccomp would have refused. */
static int64_t run(const struct prog *p, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0}, w;
	int pc;

	for (pc = 0; pc < p->len; pc++) {
		const struct sock_filter *i = &p->insn[pc];
		uint32_t src = BPF_SRC(i->code) == BPF_X ? x : i->k;

		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
		case BPF_LDX:
			if (BPF_MODE(i->code) == BPF_ABS &&
			    BPF_SIZE(i->code) == BPF_W && i->k % 4 == 0 &&
			    i->k + 4 <= sizeof(*d))
				memcpy(&w, (const char *)d + i->k, 4);
			else if (BPF_MODE(i->code) == BPF_LEN)
				w = sizeof(*d);
			else if (BPF_MODE(i->code) == BPF_IMM)
				w = i->k;
			else if (BPF_MODE(i->code) == BPF_MEM &&
				 i->k < BPF_MEMWORDS)
				w = mem[i->k];
			else
				goto bad;
			if (BPF_CLASS(i->code) == BPF_LD)
				a = w;
			else
				x = w;
			break;
		case BPF_ST:
		case BPF_STX:
			if (i->k >= BPF_MEMWORDS)
				goto bad;
			mem[i->k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(i->code)) {
			case BPF_ADD:
				a += src;
				break;
			case BPF_SUB:
				a -= src;
				break;
			case BPF_MUL:
				a *= src;
				break;
			case BPF_DIV:
				if (!src)
					return 0;
				a /= src;
				break;
			case BPF_MOD:
				if (!src)
					return 0;
				a %= src;
				break;
			case BPF_AND:
				a &= src;
				break;
			case BPF_OR:
				a |= src;
				break;
			case BPF_XOR:
				a ^= src;
				break;
			case BPF_LSH:
				a = src < 32 ? a << src : 0;
				break;
			case BPF_RSH:
				a = src < 32 ? a >> src : 0;
				break;
			case BPF_NEG:
				a = -a;
				break;
			default:
				goto bad;
			}
			break;
		case BPF_JMP:
			switch (BPF_OP(i->code)) {
			case BPF_JA:
				pc += (int)i->k;
				break;
			case BPF_JEQ:
				pc += a == src ? i->jt : i->jf;
				break;
			case BPF_JGT:
				pc += a > src ? i->jt : i->jf;
				break;
			case BPF_JGE:
				pc += a >= src ? i->jt : i->jf;
				break;
			case BPF_JSET:
				pc += (a & src) ? i->jt : i->jf;
				break;
			default:
				goto bad;
			}
			break;
		case BPF_RET:
			return BPF_RVAL(i->code) == BPF_A ? a : i->k;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			goto bad;
		}
	}
	/* Off the end: seccomp_check_filter refuses such a program. */
bad:
	fprintf(stderr,
		"t-seccomp-dump: instruction %d (code %#x) is not seccomp's\n",
		pc, pc < p->len ? p->insn[pc].code : 0);
	return -1;
}

/* The kernel's choice over several filters (seccomp_run_filters): the
 * action of the highest precedence, compared as signed. */
static int64_t decide(const struct chain *c, const struct seccomp_data *d)
{
	uint32_t ret = SECCOMP_RET_ALLOW;
	int64_t r;
	int i;

	for (i = 0; i < c->n; i++) {
		r = run(&c->f[i], d);
		if (r < 0)
			return -1;
		if ((int32_t)((uint32_t)r & SECCOMP_RET_ACTION_FULL) <
		    (int32_t)(ret & SECCOMP_RET_ACTION_FULL))
			ret = (uint32_t)r;
	}
	return ret;
}

static void consts_of(const struct chain *c, uint32_t *v, int *n)
{
	int i, j, f, add, from;

	for (f = 0; f < c->n; f++)
		for (i = 0, from = -1; i < c->f[f].len; i++) {
			const struct sock_filter *s = &c->f[f].insn[i];
			uint32_t k[2] = {s->k, s->k + 1};

			/* The numbers and architectures are all tried anyway:
			 * only what is compared with an argument's half counts
			 * (the word last loaded, as libseccomp lays its
			 * programs out). */
			if (BPF_CLASS(s->code) == BPF_LD)
				from = BPF_MODE(s->code) == BPF_ABS ? (int)s->k
								    : -1;
			if (from < 16 || BPF_SRC(s->code) != BPF_K ||
			    (BPF_CLASS(s->code) != BPF_JMP &&
			     BPF_CLASS(s->code) != BPF_ALU) ||
			    (BPF_CLASS(s->code) == BPF_JMP &&
			     BPF_OP(s->code) == BPF_JA))
				continue;
			add = BPF_CLASS(s->code) == BPF_JMP &&
				      (BPF_OP(s->code) == BPF_JGT ||
				       BPF_OP(s->code) == BPF_JGE)
				  ? 2
				  : 1;
			for (j = 0; j < add; j++) {
				int m;

				for (m = 0; m < *n && v[m] != k[j]; m++)
					;
				if (m == *n && *n < MAX_CONSTS)
					v[(*n)++] = k[j];
			}
		}
}

static void chain_release(struct chain *c)
{
	while (c->n > 0)
		free(c->f[--c->n].insn);
}

static int same_run(const struct chain *a, const struct chain *b,
		    const char *p1, const char *p2);

static int same(const char *p1, const char *p2)
{
	struct chain a = {.n = 0}, b = {.n = 0};
	int ret = 1;

	if (load(p1, &a) == 0 && load(p2, &b) == 0)
		ret = same_run(&a, &b, p1, p2);
	chain_release(&a);
	chain_release(&b);
	return ret;
}

/* One input to both chains: 0 when they decide alike. */
static int same_input(const struct chain *a, const struct chain *b,
		      const struct seccomp_data *d, int arg)
{
	int64_t ra = decide(a, d), rb = decide(b, d);

	if (ra < 0 || rb < 0)
		return -1;
	if (ra == rb)
		return 0;
	fprintf(stderr,
		"t-seccomp-dump: arch %#x nr %d args[%d] %#llx: %#llx against "
		"%#llx\n",
		d->arch, d->nr, arg,
		arg < 0 ? 0ULL : (unsigned long long)d->args[arg],
		(long long)ra, (long long)rb);
	return -1;
}

static int same_run(const struct chain *a, const struct chain *b,
		    const char *p1, const char *p2)
{
	static const uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_I386,
					  AUDIT_ARCH_AARCH64};
	static uint32_t consts[MAX_CONSTS];
	struct seccomp_data d;
	long inputs = 0;
	int nc = 0, in, nr, arg, v;

	if (a->n == 0 || b->n == 0) {
		fprintf(stderr, "t-seccomp-dump: %s has %d filters, %s %d\n",
			p1, a->n, p2, b->n);
		return a->n == b->n ? 0 : 1;
	}
	consts_of(a, consts, &nc);
	consts_of(b, consts, &nc);
	/* in: the architecture (3) times native or x32 numbering (2). */
	for (in = 0; in < 6; in++)
		for (nr = 0; nr < 1024; nr++) {
			memset(&d, 0, sizeof(d));
			d.arch = arches[in / 2];
			d.nr = nr | (in % 2 ? 0x40000000 : 0);
			inputs++;
			if (same_input(a, b, &d, -1) < 0)
				return 1;
			/* v: the constant (nc) times the half it fills (2). */
			for (arg = 0; arg < 6; arg++)
				for (v = 0; v < 2 * nc; v++) {
					d.args[arg] = (uint64_t)consts[v / 2]
						      << (v % 2 ? 32 : 0);
					inputs++;
					if (same_input(a, b, &d, arg) < 0)
						return 1;
					d.args[arg] = 0;
				}
		}
	printf("same over %ld inputs (%d constants)\n", inputs, nc);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--same") == 0)
		return same(argv[2], argv[3]);
	if (argc != 2) {
		fprintf(stderr,
			"usage: t-seccomp-dump PID | --same DUMP1 DUMP2\n");
		return 2;
	}
	return dump_pid(argv[1]);
}
