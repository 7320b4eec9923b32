// SPDX-License-Identifier: MIT
/*
 * The privilege drop across threads: queue threads start (and add their
 * zero-copy queues) while the worker is root, so each drops its own share,
 * the main thread drops the rest, and a check of every thread's
 * /proc/self/task/N/status proves that none kept anything; and the plugin
 * host's deny list, which keeps it from naming its keeper. The tests need
 * root and run in Check's forked child, never in the runner.
 */
#include "check_main.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"

#define NOBODY 65534

static const char good[] = "Name:\tringfence-worke\n"
			   "Uid:\t65534\t65534\t65534\t65534\n"
			   "Gid:\t65534\t65534\t65534\t65534\n"
			   "Groups:\t\n"
			   "CapInh:\t0000000000000000\n"
			   "CapPrm:\t0000000000000000\n"
			   "CapEff:\t0000000000000000\n"
			   "CapBnd:\t0000000000000000\n"
			   "CapAmb:\t0000000000000000\n"
			   "NoNewPrivs:\t1\n"
			   "Seccomp:\t2\n";

/* @good with line @key replaced by "@key:\t@val". */
static const char *with(const char *key, const char *val)
{
	static char buf[sizeof(good) + 128];
	const char *at = strstr(good, key), *end = strchr(at, '\n');

	snprintf(buf, sizeof(buf), "%.*s%s:\t%s%s", (int)(at - good), good, key, val, end);
	return buf;
}

START_TEST(test_status_fields)
{
	char why[128];

	ck_assert_int_eq(rf_sandbox_status_ok(good, NOBODY, NOBODY, true, why, sizeof(why)), 0);
	ck_assert_int_eq(rf_sandbox_status_ok(with("CapBnd", "000001ffffffffff"), NOBODY, NOBODY,
					      true, why, sizeof(why)),
			 -EPERM);
	ck_assert_str_eq(why, "CapBnd 000001ffffffffff");
	ck_assert_int_eq(rf_sandbox_status_ok(with("CapInh", "0000000000000400"), NOBODY, NOBODY,
					      true, why, sizeof(why)),
			 -EPERM);
	ck_assert_str_eq(why, "CapInh 0000000000000400");
	ck_assert_int_eq(rf_sandbox_status_ok(with("Uid", "65534\t0\t65534\t65534"), NOBODY, NOBODY,
					      true, why, sizeof(why)),
			 -EPERM);
	ck_assert_str_eq(why, "Uid 65534\t0\t65534\t65534");
	ck_assert_int_eq(rf_sandbox_status_ok(with("Groups", "0 "), NOBODY, NOBODY, true, why,
					      sizeof(why)),
			 -EPERM);
	ck_assert_int_eq(rf_sandbox_status_ok(with("NoNewPrivs", "0"), NOBODY, NOBODY, true, why,
					      sizeof(why)),
			 -EPERM);
	ck_assert_str_eq(why, "NoNewPrivs 0");
	/* seccomp is asked for only where the worker is sandboxed */
	ck_assert_int_eq(rf_sandbox_status_ok(with("Seccomp", "0"), NOBODY, NOBODY, true, why,
					      sizeof(why)),
			 -EPERM);
	ck_assert_int_eq(rf_sandbox_status_ok(with("Seccomp", "0"), NOBODY, NOBODY, false, why,
					      sizeof(why)),
			 0);
	/* another tenant's ids, or a field the kernel did not print */
	ck_assert_int_eq(rf_sandbox_status_ok(good, 1000, NOBODY, true, why, sizeof(why)), -EPERM);
	ck_assert_int_eq(rf_sandbox_status_ok("Uid:\t65534\t65534\t65534\t65534\n", NOBODY, NOBODY,
					      true, why, sizeof(why)),
			 -EPERM);
	ck_assert_str_eq(why, "no CapInh line");
}
END_TEST

static pthread_barrier_t started, dropped;

/* A queue thread's life at start-up: its own share of the drop (or not),
 * then a wait while the main thread drops the rest and checks. */
static void *queue_thread(void *arg)
{
	int own_drop = *(int *)arg;

	if (own_drop)
		ck_assert_int_eq(rf_sandbox_drop_thread(), 0);
	pthread_barrier_wait(&started);
	pthread_barrier_wait(&dropped);
	return NULL;
}

/* Two threads, the second dropping its share only if @second_drops; the
 * main thread's drop to nobody, then the check: its result. */
static int drop_with_threads(int second_drops, char *why, size_t len)
{
	int yes = 1, second = second_drops, r;
	pthread_t t[2];

	ck_assert_int_eq(pthread_barrier_init(&started, NULL, 3), 0);
	ck_assert_int_eq(pthread_barrier_init(&dropped, NULL, 3), 0);
	ck_assert_int_eq(pthread_create(&t[0], NULL, queue_thread, &yes), 0);
	ck_assert_int_eq(pthread_create(&t[1], NULL, queue_thread, &second), 0);
	pthread_barrier_wait(&started);
	ck_assert_int_eq(rf_sandbox_drop(NOBODY, NOBODY), 0);
	r = rf_sandbox_check_threads(NOBODY, NOBODY, false, why, len);
	pthread_barrier_wait(&dropped);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	return r;
}

START_TEST(test_every_thread_drops)
{
	char why[200] = "";

	ck_assert_msg(drop_with_threads(1, why, sizeof(why)) == 0, "%s", why);
}
END_TEST

/* A thread that skipped its share keeps its bounding set (and would keep
 * an inheritable set): the check names it. */
START_TEST(test_a_thread_that_kept_privileges_is_caught)
{
	char why[200] = "";

	ck_assert_int_eq(drop_with_threads(0, why, sizeof(why)), -EPERM);
	ck_assert_msg(strstr(why, "keeps CapBnd 0"), "%s", why);
}
END_TEST

/* The plugin host's deny list, in a process of its own (the test
 * runner's, and a sanitizer's exit, need calls the list refuses): what
 * names a process other than the caller, here @k, fails with EPERM, what
 * names the caller works. The line of the first check that failed, or 0. */
#define EXPECT(c)                        \
	do {                             \
		if (!(c))                \
			return __LINE__; \
	} while (0)

static int host_checks(pid_t k)
{
	struct rlimit lim = { 0, 0 };
	cpu_set_t set;

	if (rf_sandbox_seccomp_base(-1, RF_DENY_HOST, 0) < 0)
		return __LINE__;
	errno = 0;
	EXPECT(syscall(SYS_prlimit64, k, RLIMIT_NOFILE, &lim, NULL) == -1 && errno == EPERM);
	EXPECT(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &lim) == 0);
	EXPECT(setpriority(PRIO_PROCESS, (id_t)k, 19) == -1 && errno == EPERM);
	EXPECT(setpriority(PRIO_PGRP, 0, 19) == -1);
	EXPECT(setpriority(PRIO_USER, 0, 19) == -1);
	EXPECT(setpriority(PRIO_PROCESS, 0, 1) == 0);
	EXPECT(kill(k, 0) == -1 && errno == EPERM);
	EXPECT(kill(0, 0) == -1);
	EXPECT(kill(-1, 0) == -1);
	EXPECT(kill(getpid(), 0) == 0);
	EXPECT(syscall(SYS_tgkill, getpid(), gettid(), 0) == 0);
	EXPECT(syscall(SYS_tgkill, k, k, 0) == -1);
	EXPECT(syscall(SYS_tkill, gettid(), 0) == -1);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	EXPECT(sched_setaffinity(k, sizeof(set), &set) == -1 && errno == EPERM);
	EXPECT(sched_getaffinity(0, sizeof(set), &set) == 0);
	EXPECT(sched_setaffinity(0, sizeof(set), &set) == 0);
	EXPECT(sched_setscheduler(k, SCHED_IDLE, &(struct sched_param){ 0 }) == -1 &&
	       errno == EPERM);
	return 0;
}

START_TEST(test_the_host_names_no_other_process)
{
	int p[2], r[2], line = -1, st;
	pid_t k, h;
	char c;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(pipe(r), 0);
	/* the "keeper": waits for the test's end */
	k = fork();
	ck_assert_int_ge(k, 0);
	if (k == 0) {
		close(p[1]);
		(void)!read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	h = fork();
	ck_assert_int_ge(h, 0);
	if (h == 0) {
		line = host_checks(k);
		(void)!write(r[1], &line, sizeof(line));
		_exit(0);
	}
	close(r[1]);
	ck_assert_int_eq(read(r[0], &line, sizeof(line)), sizeof(line));
	ck_assert_int_eq(waitpid(h, &st, 0), h);
	close(p[1]);
	ck_assert_int_eq(waitpid(k, &st, 0), k);
	ck_assert_msg(line == 0, "check_sandbox.c:%d failed", line);
}
END_TEST

/* A keeper's deny list (one that forks hosts) in a child of its own, then
 * the host's part of debug = yes: what the child's exit says. */
static int keeper_then_dumpable(unsigned int who)
{
	int st;
	pid_t c = fork();

	ck_assert_int_ge(c, 0);
	if (c == 0) {
		if (rf_sandbox_seccomp_base(-1, who, 0) < 0)
			_exit(2);
		_exit(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0 && prctl(PR_GET_DUMPABLE) == 1 ? 0
											     : 3);
	}
	ck_assert_int_eq(waitpid(c, &st, 0), c);
	return st;
}

/* A debug tenant's keeper lets the hosts it forks become dumpable; any
 * other keeper's list refuses it (the trap ends the process). */
START_TEST(test_only_a_debug_keeper_lets_a_host_dump)
{
	int st = keeper_then_dumpable(RF_DENY_KEEPER_FORKS | RF_DENY_DEBUG);

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "debug keeper: status 0x%x", st);
	st = keeper_then_dumpable(RF_DENY_KEEPER_FORKS);
	ck_assert_msg(!(WIFEXITED(st) && WEXITSTATUS(st) == 0),
		      "a keeper without debug let PR_SET_DUMPABLE through");
	ck_assert_msg(!WIFEXITED(st) || WEXITSTATUS(st) != 2, "the deny list did not install");
}
END_TEST

static Suite *sandbox_suite(void)
{
	Suite *s = suite_create("sandbox");
	TCase *tc = tcase_create("threads");

	tcase_add_test(tc, test_status_fields);
	tcase_add_test(tc, test_every_thread_drops);
	tcase_add_test(tc, test_a_thread_that_kept_privileges_is_caught);
	tcase_add_test(tc, test_the_host_names_no_other_process);
	tcase_add_test(tc, test_only_a_debug_keeper_lets_a_host_dump);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "check_sandbox: SKIP: the drop tests need root\n");
		return 77;
	}
	return rf_check_run(sandbox_suite());
}
