// SPDX-License-Identifier: MIT
/*
 * worker/uexec.c: a program started in place keeps the process's
 * mappings and loses what execve takes away. The program started is
 * uexec_target (beside this binary), through the system's dynamic loader:
 * it checks what it finds and says so by its exit status, which the test
 * (an exit test) expects to be 0.
 */
#include "check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uexec.h"

#include "uexec_target.h"

static void on_usr1(int sig)
{
	(void)sig;
}

START_TEST(test_program_keeps_mappings_not_what_exec_drops)
{
	char cloexec[16], kept[16], why[200], prog[4096];
	char *argv[] = { "ld.so", prog, cloexec, kept, "here", NULL };
	char *envp[] = { "RF_UEXEC=here", NULL };
	char *m = mmap(MARK_AT, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	int a = open("/dev/null", O_RDONLY | O_CLOEXEC), b = open("/dev/null", O_RDONLY);

	ssize_t n = readlink("/proc/self/exe", prog, sizeof(prog) - 32);

	ck_assert_int_gt(n, 0);
	prog[n] = '\0';
	strcpy(strrchr(prog, '/') + 1, "uexec_target");
	ck_assert_int_eq(access(prog, X_OK), 0);
	ck_assert_ptr_eq(m, MARK_AT);
	memcpy(m, MARK, sizeof(MARK));
	ck_assert_int_ge(a, 0);
	ck_assert_int_ge(b, 0);
	snprintf(cloexec, sizeof(cloexec), "%d", a);
	snprintf(kept, sizeof(kept), "%d", b);
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, SIG_IGN);
	rf_uexec(argv, envp, why, sizeof(why));
	ck_abort_msg("rf_uexec returned: %s", why);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("uexec");
	TCase *tc = tcase_create("in place");

	tcase_add_exit_test(tc, test_program_keeps_mappings_not_what_exec_drops, 0);
	suite_add_tcase(s, tc);
	return rf_check_run(s);
}
