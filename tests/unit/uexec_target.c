// SPDX-License-Identifier: MIT
/*
 * The program check_uexec starts in place (worker/uexec.c): it checks
 * what it finds and says by its exit status which check failed. Built
 * without sanitizers: a second ASan runtime cannot start in a process
 * that has one.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "uexec_target.h"

/* glibc's: 0 when it could not register this thread's rseq area (the
 * kernel still had the old image's) */
extern const unsigned int __rseq_size __attribute__((weak));

static void *thread_main(void *arg)
{
	return arg;
}

/* what the program started in place finds: 0, or which check failed */
int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_t t;
	void *back = NULL;
	char *mem;

	if (argc != 4)
		return 2;
	if (memcmp(MARK_AT, MARK, sizeof(MARK)) != 0)
		return 3;
	if (fcntl(atoi(argv[1]), F_GETFD) != -1 || errno != EBADF)
		return 4; /* close-on-exec: closed */
	if (fcntl(atoi(argv[2]), F_GETFD) < 0)
		return 5; /* the rest: kept */
	if (sigaction(SIGUSR1, NULL, &sa) < 0 || sa.sa_handler != SIG_DFL)
		return 6; /* caught: back to the default */
	if (sigaction(SIGUSR2, NULL, &sa) < 0 || sa.sa_handler != SIG_IGN)
		return 7; /* ignored: still ignored */
	if (!getenv("RF_UEXEC") || strcmp(getenv("RF_UEXEC"), argv[3]) != 0)
		return 8;
	/* a C library of its own, working: threads, their TLS, the heap */
	mem = malloc(1 << 20);
	if (!mem || pthread_create(&t, NULL, thread_main, mem) || pthread_join(t, &back) ||
	    back != mem)
		return 9;
	free(mem);
	if (&__rseq_size && !__rseq_size)
		return 10; /* rseq: the old area let go of, this one registered */
	return 0;
}
