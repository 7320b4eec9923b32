// SPDX-License-Identifier: MIT
/* Dynamic users (broker/users.c): distinct, stable, never a host account. */
#include "check_main.h"
#include "check_tmp.h"
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker.h"

static char file[128];
static struct rf_policy pol;
static struct rf_broker b;
static struct rf_tenant ta, tb, *all[2];

static void case_setup(void)
{
	rf_check_tmp_make("users");
}

static void tenant(struct rf_tenant *t, const char *name)
{
	memset(t, 0, sizeof(*t));
	t->b = &b;
	snprintf(t->pol.name, sizeof(t->pol.name), "%s", name);
	strcpy(t->pol.user, RF_USER_DYNAMIC);
	t->state = RF_TENANT_STOPPED;
}

static void setup(void)
{
	/* a file per test, in a directory the broker makes itself */
	snprintf(file, sizeof(file), "%s/%d/users", rf_check_top, (int)getpid());
	memset(&pol, 0, sizeof(pol));
	pol.user_range[0] = 70000;
	pol.user_range[1] = 70999;
	snprintf(pol.users_file, sizeof(pol.users_file), "%s", file);
	memset(&b, 0, sizeof(b));
	b.policy = &pol;
	tenant(&ta, "alpha");
	tenant(&tb, "beta");
	all[0] = &ta;
	all[1] = &tb;
	b.tenants = all;
	b.ntenants = 2;
}

static uint32_t recorded(const char *name)
{
	char line[128], n[64];
	unsigned long id;
	uint32_t got = 0;
	FILE *f = fopen(file, "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lu", n, &id) == 2 && !strcmp(n, name))
			got = (uint32_t)id;
	fclose(f);
	return got;
}

START_TEST(test_distinct_and_recorded)
{
	ck_assert_int_eq(rf_users_resolve(&ta), 0);
	ta.state = RF_TENANT_RUNNING;
	ck_assert_int_eq(rf_users_resolve(&tb), 0);
	ck_assert_uint_ge(ta.uid, 70000);
	ck_assert_uint_le(ta.uid, 70999);
	ck_assert_uint_eq(ta.gid, ta.uid);
	ck_assert_uint_ne(ta.uid, tb.uid);
	ck_assert_uint_eq(recorded("alpha"), ta.uid);
	ck_assert_uint_eq(recorded("beta"), tb.uid);
}
END_TEST

/* the record wins over the hash: a tenant keeps its uid whatever comes and
 * goes around it */
START_TEST(test_stable)
{
	uid_t first;
	FILE *f;

	ck_assert_int_eq(rf_users_resolve(&ta), 0);
	first = ta.uid;
	ck_assert_int_eq(rf_users_resolve(&ta), 0);
	ck_assert_uint_eq(ta.uid, first);
	/* a record made elsewhere (an earlier range, a collision resolved
	 * then) is kept as long as it is in the range and free */
	f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "# kept\nalpha 70500\n");
	fclose(f);
	ck_assert_int_eq(rf_users_resolve(&ta), 0);
	ck_assert_uint_eq(ta.uid, 70500);
}
END_TEST

/* an id a host account holds is never given, and a recorded one that an
 * account has taken since is moved (the log says so) */
START_TEST(test_never_a_host_account)
{
	struct passwd *pw = getpwnam("nobody");
	FILE *f;
	int i;

	ck_assert_ptr_nonnull(pw);
	pol.user_range[0] = pw->pw_uid;
	pol.user_range[1] = pw->pw_uid + 15;
	for (i = 0; i < 12; i++) {
		char name[16];

		snprintf(name, sizeof(name), "t%d", i);
		tenant(&ta, name);
		ck_assert_int_eq(rf_users_resolve(&ta), 0);
		ck_assert_uint_ne(ta.uid, pw->pw_uid);
	}
	f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "alpha %u\n", (unsigned int)pw->pw_uid);
	fclose(f);
	tenant(&ta, "alpha");
	ck_assert_int_eq(rf_users_resolve(&ta), 0);
	ck_assert_uint_ne(ta.uid, pw->pw_uid);
	ck_assert_uint_eq(recorded("alpha"), ta.uid);
}
END_TEST

/* one uid per tenant: a named user shared only when both say so */
START_TEST(test_named_users_shared_only_when_said)
{
	strcpy(ta.pol.user, "nobody");
	strcpy(tb.pol.user, "nobody");
	ck_assert_int_eq(rf_users_resolve(&ta), 0);
	ta.state = RF_TENANT_RUNNING;
	ck_assert_int_eq(rf_users_resolve(&tb), -EEXIST);
	ck_assert_ptr_nonnull(strstr(tb.fail_reason, "is also tenant alpha's"));
	ta.pol.shared_user = tb.pol.shared_user = true;
	ck_assert_int_eq(rf_users_resolve(&tb), 0);
	ck_assert_uint_eq(tb.uid, ta.uid);
	strcpy(tb.pol.user, "root");
	ck_assert_int_eq(rf_users_resolve(&tb), -EPERM);
}
END_TEST

/* a source the worker's identity could not write is named, with the fix;
 * a read-only tenant needs to read it only */
START_TEST(test_source_problem)
{
	struct rf_mount_policy m = { 0 };
	char msg[2048], want[RF_POLICY_PATH_MAX + 128], dir[256];

	/* the directories above it are root's, 0700: the worker opens its
	 * source as root, so they do not count */
	snprintf(dir, sizeof(dir), "%s/%d", rf_check_top, (int)getpid());
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(m.source, sizeof(m.source), "%s/src", dir);
	ck_assert_int_eq(rf_users_source_problem(&m, 70001, 70001, msg, sizeof(msg)), 1);
	ck_assert_ptr_nonnull(strstr(msg, "No such file or directory: the tenant cannot start"));
	ck_assert_int_eq(mkdir(m.source, 0755), 0);
	ck_assert_int_eq(rf_users_source_problem(&m, 70001, 70001, msg, sizeof(msg)), 1);
	snprintf(
		want, sizeof(want),
		"(owner 0:0, mode 0755): the tenant's user (uid 70001, gid 70001) cannot write it");
	ck_assert_ptr_nonnull(strstr(msg, want));
	snprintf(want, sizeof(want),
		 "hand it over (chown -R 70001:70001 %s) or set read_only = yes", m.source);
	ck_assert_ptr_nonnull(strstr(msg, want));
	m.read_only = true;
	ck_assert_int_eq(rf_users_source_problem(&m, 70001, 70001, msg, sizeof(msg)), 0);
	ck_assert_int_eq(chmod(m.source, 0700), 0);
	ck_assert_int_eq(rf_users_source_problem(&m, 70001, 70001, msg, sizeof(msg)), 1);
	ck_assert_ptr_nonnull(strstr(msg, "cannot read it: Permission denied"));
	m.read_only = false;
	ck_assert_int_eq(chown(m.source, 70001, 70001), 0);
	ck_assert_int_eq(rf_users_source_problem(&m, 70001, 70001, msg, sizeof(msg)), 0);
	/* the group's write bit counts for the gid, without supplementary groups */
	ck_assert_int_eq(chown(m.source, 0, 70002), 0);
	ck_assert_int_eq(chmod(m.source, 0770), 0);
	ck_assert_int_eq(rf_users_source_problem(&m, 70001, 70002, msg, sizeof(msg)), 0);
	ck_assert_int_eq(rf_users_source_problem(&m, 70001, 70001, msg, sizeof(msg)), 1);
	m.source[0] = '\0';
	ck_assert_int_eq(rf_users_source_problem(&m, 70001, 70001, msg, sizeof(msg)), 0);
}
END_TEST

/* --check's identity is the one the start gives, and it records nothing */
START_TEST(test_peek_takes_nothing)
{
	uid_t uid;
	gid_t gid;
	char msg[256];

	ck_assert_int_eq(rf_users_peek(&pol, &ta.pol, &uid, &gid, msg, sizeof(msg)), 0);
	ck_assert_int_eq(access(file, F_OK), -1);
	ck_assert_int_eq(rf_users_resolve(&ta), 0);
	ck_assert_uint_eq(uid, ta.uid);
	ck_assert_uint_eq(gid, ta.gid);
	ck_assert_int_eq(rf_users_peek(&pol, &ta.pol, &uid, &gid, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(uid, ta.uid);
	strcpy(ta.pol.user, "no-such-user-here");
	ck_assert_int_eq(rf_users_peek(&pol, &ta.pol, &uid, &gid, msg, sizeof(msg)), -ENOENT);
	ck_assert_str_eq(msg, "user 'no-such-user-here' does not exist");
}
END_TEST

static Suite *users_suite(void)
{
	Suite *s = suite_create("users");
	TCase *tc = tcase_create("dynamic users");

	tcase_add_unchecked_fixture(tc, case_setup, rf_check_tmp_remove);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_distinct_and_recorded);
	tcase_add_test(tc, test_stable);
	tcase_add_test(tc, test_never_a_host_account);
	tcase_add_test(tc, test_named_users_shared_only_when_said);
	tcase_add_test(tc, test_source_problem);
	tcase_add_test(tc, test_peek_takes_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(users_suite());
}
