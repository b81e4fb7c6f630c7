/*
 * sig.c - signals recorded in one atomic flag, re-raised at exit (sig.h).
 */
#include "config.h"

#include <signal.h>
#include <string.h>

#include "basic/sig.h"

static atomic_int caught;

static void on_signal(int sig)
{
	int none = 0;

	/* The first signal wins: a SIGTERM after Ctrl-C is still SIGINT. */
	atomic_compare_exchange_strong(&caught, &none, sig);
}

void sig_init(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old;

		/* A signal ignored on entry stays ignored: nohup's SIGHUP, or
		 * SIGINT for a background job of a script, must not stop us. */
		if (sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
}

int sig_caught(void)
{
	return atomic_load(&caught);
}

const atomic_int *sig_flag(void)
{
	return &caught;
}

int sig_exit_status(void)
{
	int sig = atomic_load(&caught);

	return sig ? 128 + sig : 0;
}

void sig_forget(void)
{
	atomic_store(&caught, 0);
}

void sig_reraise(void)
{
	int sig = atomic_load(&caught);
	struct sigaction sa;
	sigset_t set;

	if (!sig)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}
