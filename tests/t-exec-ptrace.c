/*
 * tests/t-exec-ptrace.c - what a sandbox may try from inside, as a static
 * binary copied into a workspace (the test image, busybox, has no strace
 * and no compiler); tests/t-exec-escape.sh builds it with `cc -static`.
 *
 *   t-exec-ptrace seize PID SECONDS   PTRACE_SEIZE PID, say "attached" (or
 *                                     "refused: ERRNO"), hold it SECONDS,
 *                                     exit (which lets it go)
 *   t-exec-ptrace ids                 "uid R E S gid R E S" of this process
 *                                     (for a set-user-ID copy of itself)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;

	if (argc == 4 && strcmp(argv[1], "seize") == 0) {
		if (ptrace(PTRACE_SEIZE, (pid_t)atoi(argv[2]), NULL, NULL) <
		    0) {
			printf("refused: %s\n", strerror(errno));
			return 1;
		}
		printf("attached\n");
		fflush(stdout);
		sleep((unsigned)atoi(argv[3]));
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "ids") == 0) {
		getresuid(&r, &e, &s);
		getresgid(&gr, &ge, &gs);
		printf("uid %u %u %u gid %u %u %u\n", r, e, s, gr, ge, gs);
		return 0;
	}
	fprintf(stderr, "usage: t-exec-ptrace seize PID SECONDS | ids\n");
	return 2;
}
