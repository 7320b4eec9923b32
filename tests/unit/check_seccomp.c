// SPDX-License-Identifier: MIT
/*
 * seccomp.policy: the parser on good and bad files, and compiled filters
 * loaded into the (forked) test process, which must then live or die as the
 * policy says.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check_main.h"
#include "seccomp_policy.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif
#ifndef SHIPPED_POLICY
#define SHIPPED_POLICY "seccomp.policy"
#endif

static char err[8192];

/* Under ASan, LeakSanitizer's exit-time scan forks a tracer, which the
 * filters under test forbid; these processes die at exit anyway. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return 1;
}

static struct rf_sc_policy *load_ok(const char *path)
{
	struct rf_sc_policy *p = NULL;
	int r = rf_sc_policy_load(path, &p, err, sizeof(err));

	ck_assert_msg(r == 0, "%s: %d\n%s", path, r, err);
	return p;
}

static const struct rf_sc_rule *rule(const struct rf_sc_policy *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nrules; i++)
		if (!strcmp(p->rules[i].name, name))
			return &p->rules[i];
	return NULL;
}

START_TEST(test_good_policy)
{
	struct rf_sc_policy *p = load_ok(FIXTURES "/good.seccomp");
	const struct rf_sc_rule *r;

	ck_assert_int_eq(p->default_action, RF_SC_KILL);
	ck_assert_ptr_nonnull(rule(p, "exit_group")); /* from the include */
	r = rule(p, "getppid");
	ck_assert_int_eq(r->action, RF_SC_ERRNO);
	ck_assert_int_eq(r->errno_value, EPERM);
	/* in {2 values} || (a && b): three clauses */
	r = rule(p, "fcntl");
	ck_assert_uint_eq(r->nclauses, 3);
	ck_assert_uint_eq(r->clauses[0].conds[0].value, F_GETFD);
	ck_assert_uint_eq(r->clauses[1].conds[0].value, F_GETFL);
	ck_assert_uint_eq(r->clauses[2].nconds, 2);
	ck_assert_uint_eq(r->clauses[2].conds[1].arg, 2);
	r = rule(p, "mprotect");
	ck_assert_int_eq(r->clauses[0].conds[0].op, RF_SC_MASKED_EQ);
	ck_assert_uint_eq(r->clauses[0].conds[0].mask, PROT_EXEC);
	ck_assert_uint_eq(r->clauses[0].conds[0].value, 0);
	r = rule(p, "madvise"); /* bare "& MASK": all bits set */
	ck_assert_uint_eq(r->clauses[0].conds[0].value, MADV_DONTNEED);
	ck_assert_uint_eq(rule(p, "dup3")->clauses[0].conds[0].value, O_CLOEXEC);
	ck_assert_uint_eq(rule(p, "pread64")->clauses[0].conds[1].value, 16);
	ck_assert_int_eq(rule(p, "kill")->clauses[0].conds[0].op, RF_SC_NE);
	rf_sc_policy_free(p);
}
END_TEST

START_TEST(test_shipped_policy_compiles)
{
	struct rf_sc_policy *p = load_ok(SHIPPED_POLICY);
	FILE *devnull = fopen("/dev/null", "w");
	int fd = open("/dev/null", O_WRONLY);

	ck_assert_int_eq(p->default_action, RF_SC_TRAP);
	ck_assert_int_eq(rf_sc_policy_export_bpf(p, fd), 0);
	rf_sc_policy_print(p, devnull);
	ck_assert_ptr_null(rule(p, "execve"));
	ck_assert_ptr_null(rule(p, "socket"));
	/* glibc's time calls where the vDSO cannot serve them */
	ck_assert_ptr_nonnull(rule(p, "clock_gettime"));
	ck_assert_ptr_nonnull(rule(p, "clock_getres"));
	ck_assert_ptr_nonnull(rule(p, "gettimeofday"));
	ck_assert_ptr_nonnull(rule(p, "time"));
	close(fd);
	fclose(devnull);
	rf_sc_policy_free(p);
}
END_TEST

/* A program's: seccomp.policy's, with executable mappings that are
 * never writable too (the loader maps the program's code). */
START_TEST(test_program_policy_compiles)
{
	struct rf_sc_policy *p = load_ok(PROGRAM_POLICY);
	int fd = open("/dev/null", O_WRONLY);
	const struct rf_sc_rule *r;

	ck_assert_int_eq(p->default_action, RF_SC_TRAP);
	ck_assert_int_eq(rf_sc_policy_export_bpf(p, fd), 0);
	ck_assert_ptr_null(rule(p, "execve"));
	ck_assert_ptr_nonnull(rule(p, "openat")); /* seccomp.policy's */
	r = rule(p, "mmap");
	ck_assert_int_eq(r->depth, 0);
	ck_assert_uint_eq(r->nclauses, 2);
	ck_assert_uint_eq(r->clauses[0].conds[0].mask, PROT_WRITE);
	ck_assert_uint_eq(r->clauses[1].conds[0].mask, PROT_EXEC);
	ck_assert_int_eq(rule(p, "mprotect")->depth, 0);
	close(fd);
	rf_sc_policy_free(p);
}
END_TEST

static const struct {
	const char *file;
	int line, col;
	const char *phrase;
} bad[] = {
	{ "unknown_syscall", 1, 1, "unknown system call 'openbar'" },
	{ "duplicate", 2, 1, "'read' already has a rule at" },
	{ "unknown_constant", 1, 16, "unknown constant 'F_NOPE'" },
	{ "bad_arg", 1, 8, "expected arg0..arg5" },
	{ "no_colon", 1, 6, "expected ':' after 'read'" },
	{ "bad_errno", 1, 14, "expected an errno name" },
	{ "default_twice", 2, 1, "@default set twice" },
	{ "default_action", 1, 10, "expected kill, trap or log, got 'allow'" },
	{ "unterminated_set", 1, 21, "expected ',' or '}' in a set" },
	{ "same_arg_twice", 1, 20, "arg1 is compared twice" },
	{ "include_missing", 1, 10, "cannot read" },
	{ "include_loop", 1, 1, "@include nested more than" },
	{ "trailing", 1, 9, "unexpected '2'" },
	{ "bad_operator", 1, 12, "expected ==, !=, <, <=, >, >=, '&' or 'in'" },
	{ "directive", 1, 1, "unknown directive '@import'" },
};

START_TEST(test_bad_policy)
{
	char path[512], want[600];
	struct rf_sc_policy *p = NULL;
	int r;

	snprintf(path, sizeof(path), FIXTURES "/bad_%s.seccomp", bad[_i].file);
	r = rf_sc_policy_load(path, &p, err, sizeof(err));
	ck_assert_msg(r == -EINVAL, "%s: got %d", path, r);
	ck_assert_ptr_null(p);
	snprintf(want, sizeof(want), "bad_%s.seccomp:%d:%d: ", bad[_i].file, bad[_i].line,
		 bad[_i].col);
	ck_assert_msg(strstr(err, want) != NULL, "no '%s' in:\n%s", want, err);
	ck_assert_msg(strstr(err, bad[_i].phrase) != NULL, "no '%s' in:\n%s", bad[_i].phrase, err);
}
END_TEST

/* A policy's own @default wins over one in a file it includes (the
 * shipped seccomp.policy's), before its @include or after; two included
 * files that both set one are an error. */
START_TEST(test_default_outer_wins)
{
	static const char *const outer[] = {
		"@include " FIXTURES "/default_kill.inc\n@default log\n",
		"@default log\n@include " FIXTURES "/default_kill.inc\n",
	};
	const char *both = "@include " FIXTURES "/default_kill.inc\n"
			   "@include " FIXTURES "/default_kill.inc\n";
	struct rf_sc_policy *p = NULL;
	size_t i;

	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(rf_sc_policy_parse("mine", outer[i], strlen(outer[i]), &p, err,
						    sizeof(err)),
				 0);
		ck_assert_int_eq(p->default_action, RF_SC_LOG);
		rf_sc_policy_free(p);
		p = NULL;
	}
	ck_assert_int_eq(rf_sc_policy_parse("mine", both, strlen(both), &p, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "default_kill.inc:2:1: @default set twice (first at " FIXTURES
				  "/default_kill.inc:2)"),
		      "%s", err);
}
END_TEST

/* A policy's own rule for a call replaces that of a file it includes (the
 * shipped seccomp.policy's), before its @include or after; the included
 * file's other rules stay, and two included files with a rule for one
 * call are an error. */
START_TEST(test_rule_outer_wins)
{
	static const char *const outer[] = {
		"@include " FIXTURES "/rules.inc\nmmap: arg2 & PROT_WRITE == 0\n",
		"mmap: arg2 & PROT_WRITE == 0\n@include " FIXTURES "/rules.inc\n",
	};
	const char *both = "@include " FIXTURES "/rules.inc\n@include " FIXTURES "/rules.inc\n";
	struct rf_sc_policy *p = NULL;
	const struct rf_sc_rule *r;
	size_t i;

	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(rf_sc_policy_parse("mine", outer[i], strlen(outer[i]), &p, err,
						    sizeof(err)),
				 0);
		r = rule(p, "mmap");
		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(r->depth, 0);
		ck_assert_str_eq(r->where, i == 0 ? "mine:2" : "mine:1");
		ck_assert_uint_eq(r->nclauses, 1);
		ck_assert_uint_eq(r->clauses[0].conds[0].mask, PROT_WRITE);
		ck_assert_ptr_nonnull(rule(p, "read"));
		ck_assert_uint_eq(p->nrules, 2);
		rf_sc_policy_free(p);
		p = NULL;
	}
	ck_assert_int_eq(rf_sc_policy_parse("mine", both, strlen(both), &p, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "'read' already has a rule at " FIXTURES "/rules.inc:2"), "%s",
		      err);
}
END_TEST

/* A FIFO where a policy or an include is expected: an error at once, never
 * an open that waits for a writer (a reload in the broker's loop would). */
START_TEST(test_fifo)
{
	char dir[] = "/tmp/rf-seccomp-test.XXXXXX", fifo[64], text[128];
	struct rf_sc_policy *p = NULL;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(rf_sc_policy_load(fifo, &p, err, sizeof(err)), -ENOTSUP);
	ck_assert_msg(strstr(err, "fifo: cannot read: not a regular file"), "%s", err);
	snprintf(text, sizeof(text), "@include %s\n", fifo);
	ck_assert_int_eq(rf_sc_policy_parse("t", text, strlen(text), &p, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "t:1:10: cannot read '") && strstr(err, "not a regular file"),
		      "%s", err);
	unlink(fifo);
	rmdir(dir);
}
END_TEST

/* 40 includes a file, 5 deep: 10^8 parses once; now 64 files at most */
START_TEST(test_include_fanout)
{
	char dir[] = "/tmp/rf-seccomp-test.XXXXXX", path[64];
	struct rf_sc_policy *p = NULL;
	int level, i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (level = 0; level <= 5; level++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/l%d", dir, level);
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		for (i = 0; level < 5 && i < 40; i++)
			fprintf(f, "@include l%d\n", level + 1);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/l0", dir);
	ck_assert_int_eq(rf_sc_policy_load(path, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(err, "one policy may read at most 64 files and 1048576 bytes"), "%s",
		      err);
	for (level = 0; level <= 5; level++) {
		snprintf(path, sizeof(path), "%s/l%d", dir, level);
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

static void load_text(const char *text)
{
	char full[4096];
	struct rf_sc_policy *p = NULL;
	int r;

	snprintf(full, sizeof(full), "@include %s/seccomp_base.inc\n%s", FIXTURES, text);
	r = rf_sc_policy_parse("mem", full, strlen(full), &p, err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
	ck_assert_int_eq(rf_sc_policy_load_filter(p), 0);
	rf_sc_policy_free(p);
}

START_TEST(test_filter_errno_and_conditions)
{
	load_text("@default kill\ngetppid: return EPERM\nfcntl: arg1 == F_GETFD\n");
	errno = 0;
	ck_assert_int_eq(syscall(SYS_getppid), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_ge(fcntl(0, F_GETFD), 0);
}
END_TEST

START_TEST(test_filter_kills_unlisted)
{
	load_text("@default kill\n");
	syscall(SYS_getppid); /* not listed: SIGSYS */
}
END_TEST

START_TEST(test_filter_kills_failed_condition)
{
	load_text("@default kill\nfcntl: arg1 == F_GETFD\n");
	fcntl(0, F_GETFL);
}
END_TEST

START_TEST(test_filter_kills_other_abis)
{
	long r;

	load_text("@default log\n");
	/* an x32 getpid: bad architecture, whatever the default */
	r = syscall(0x40000000L | SYS_getpid);
	(void)r;
}
END_TEST

START_TEST(test_constants)
{
	uint64_t v;

	ck_assert_int_eq(rf_sc_constant("O_CLOEXEC", &v), 0);
	ck_assert_uint_eq(v, O_CLOEXEC);
	ck_assert_int_eq(rf_sc_constant("FUTEX_WAIT", &v), 0);
	ck_assert_int_eq(rf_sc_constant("NOPE", &v), -ENOENT);
}
END_TEST

static Suite *seccomp_suite(void)
{
	Suite *s = suite_create("seccomp");
	TCase *tp = tcase_create("parse");
	TCase *tf = tcase_create("filter");

	tcase_add_test(tp, test_good_policy);
	tcase_add_test(tp, test_shipped_policy_compiles);
	tcase_add_test(tp, test_program_policy_compiles);
	tcase_add_loop_test(tp, test_bad_policy, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tp, test_constants);
	tcase_add_test(tp, test_fifo);
	tcase_add_test(tp, test_default_outer_wins);
	tcase_add_test(tp, test_rule_outer_wins);
	tcase_add_test(tp, test_include_fanout);
	suite_add_tcase(s, tp);
	tcase_add_test(tf, test_filter_errno_and_conditions);
	tcase_add_test_raise_signal(tf, test_filter_kills_unlisted, SIGSYS);
	tcase_add_test_raise_signal(tf, test_filter_kills_failed_condition, SIGSYS);
	tcase_add_test_raise_signal(tf, test_filter_kills_other_abis, SIGSYS);
	suite_add_tcase(s, tf);
	return s;
}

int main(void)
{
	return rf_check_run(seccomp_suite());
}
