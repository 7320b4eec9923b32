// SPDX-License-Identifier: MIT
/*
 * Per-tenant cgroups, v2 and v1, against fake hierarchies in a temporary
 * directory (cgroupfs creates interface files itself; here the test lays
 * them out). The live v1 path is covered by tests/integration/t_limits.sh.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker.h"
#include "check_main.h"
#include "check_tmp.h"

static char root[96], self[160];
static struct rf_tenant t;

static void put(const char *rel, const char *text)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	ck_assert_int_eq(mkdir(path, 0755), 0);
}

static char *get(const char *rel)
{
	static char buf[128];
	char path[300];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	fd = open(path, O_RDONLY);
	ck_assert_msg(fd >= 0, "%s: %s", rel, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void case_setup(void)
{
	rf_check_tmp_make("cgroup");
}

static void setup(void)
{
	snprintf(root, sizeof(root), "%s/%d", rf_check_top, (int)getpid());
	ck_assert_int_eq(mkdir(root, 0755), 0);
	snprintf(self, sizeof(self), "%s/self.cgroup", root);
	rf_cgroup_set_root(root, self);
	put("self.cgroup", "0::/\n"); /* the broker in the root cgroup */
	memset(&t, 0, sizeof(t));
	strcpy(t.pol.name, "alpha");
	t.pol.memory_max = 64ULL << 20;
	t.pol.pids_max = 10;
	t.pol.cpu_weight = 200;
}

START_TEST(test_v2)
{
	put("cgroup.controllers", "cpuset cpu io memory pids\n");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), 0);
	ck_assert_str_eq(t.cg.mechanism, "cgroup2(memory,pids,cpu)");
	ck_assert_int_eq(t.cg.ngroups, 1);
	ck_assert_str_eq(get("ringfence/alpha/memory.max"), "67108864");
	ck_assert_str_eq(get("ringfence/alpha/pids.max"), "10");
	ck_assert_str_eq(get("ringfence/alpha/cpu.weight"), "200");
	ck_assert_ptr_nonnull(strstr(get("ringfence/cgroup.subtree_control"), "+memory"));
	ck_assert_ptr_nonnull(strstr(t.cg.procs[0], "/ringfence/alpha/cgroup.procs"));
}
END_TEST

/* A cgroup of the broker's own (systemd's Delegate=yes): the broker moves
 * into a leaf, the tenants' groups go below its cgroup. */
START_TEST(test_v2_delegated)
{
	const char *own = "system.slice/rf.service";
	char pid[32], rel[192];

	dir("system.slice");
	dir(own);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	put("system.slice/rf.service/cgroup.procs", pid);
	put("system.slice/rf.service/cgroup.controllers", "cpu io memory pids\n");
	put("self.cgroup", "0::/system.slice/rf.service\n");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), 0);
	ck_assert_str_eq(t.cg.mechanism, "cgroup2(memory,pids,cpu)");
	ck_assert_str_eq(get("system.slice/rf.service/broker/cgroup.procs"), "0");
	ck_assert_str_eq(get("system.slice/rf.service/cgroup.subtree_control"),
			 "+memory +pids +cpu ");
	ck_assert_str_eq(get("system.slice/rf.service/ringfence/alpha/memory.max"), "67108864");
	snprintf(rel, sizeof(rel), "%s/system.slice/rf.service/ringfence/alpha", root);
	ck_assert_str_eq(t.cg.dir[0], rel);
}
END_TEST

/* The broker alone at the root of a container's cgroup namespace: that
 * root is not the host's, so it too must hold no process. */
START_TEST(test_v2_namespace_root)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	put("cgroup.procs", pid);
	put("cgroup.controllers", "memory pids cpu\n");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), 0);
	ck_assert_str_eq(get("broker/cgroup.procs"), "0");
	ck_assert_str_eq(get("cgroup.subtree_control"), "+memory +pids +cpu ");
	ck_assert_str_eq(get("ringfence/alpha/cpu.weight"), "200");
}
END_TEST

/* A cgroup shared with other processes (a login session): the groups go
 * below the root, and the broker stays where it is. */
START_TEST(test_v2_shared)
{
	char procs[192];

	dir("user.slice");
	snprintf(procs, sizeof(procs), "1\n%d\n", (int)getpid());
	put("user.slice/cgroup.procs", procs);
	put("user.slice/cgroup.controllers", "cpu io memory pids\n");
	put("cgroup.controllers", "cpu io memory pids\n");
	put("self.cgroup", "0::/user.slice\n");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), 0);
	ck_assert_str_eq(get("ringfence/alpha/pids.max"), "10");
	snprintf(procs, sizeof(procs), "%s/user.slice/broker", root);
	ck_assert_int_eq(access(procs, F_OK), -1);
}
END_TEST

START_TEST(test_v2_missing_controller_refuses)
{
	put("cgroup.controllers", "cpu io memory\n"); /* no pids */
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), -EOPNOTSUPP);
	ck_assert_str_eq(t.cg.mechanism, "rlimits");
}
END_TEST

START_TEST(test_v1)
{
	dir("memory");
	dir("pids");
	dir("cpu");
	put("memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("pids/tasks", "");
	put("cpu/cpu.shares", "1024\n");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 1), 0);
	ck_assert_str_eq(t.cg.mechanism, "cgroup1(memory,pids,cpu)");
	ck_assert_int_eq(t.cg.ngroups, 3);
	ck_assert_str_eq(get("memory/ringfence/alpha/memory.limit_in_bytes"), "67108864");
	ck_assert_str_eq(get("pids/ringfence/alpha/pids.max"), "10");
	ck_assert_str_eq(get("cpu/ringfence/alpha/cpu.shares"), "2048"); /* weight 200 */
}
END_TEST

START_TEST(test_v1_missing_controller_refuses)
{
	dir("memory");
	put("memory/memory.limit_in_bytes", "9223372036854771712\n");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 1), -EOPNOTSUPP);
}
END_TEST

/* A policy silent on limits: memory_max and pids_max by default, where a
 * controller is there to enforce them, and never a refusal where not. */
static void no_policy_limits(void)
{
	t.pol.memory_max = 0;
	t.pol.pids_max = 0;
	t.pol.cpu_weight = 0;
}

START_TEST(test_defaults_without_controllers)
{
	no_policy_limits();
	ck_assert_int_eq(rf_cgroup_setup(&t), 0);
	ck_assert_str_eq(t.cg.mechanism, "rlimits");
	ck_assert_int_eq(t.cg.ngroups, 0);
	ck_assert_uint_eq(rf_cgroup_nproc(&t), 66); /* RLIMIT_NPROC holds the tasks */
}
END_TEST

START_TEST(test_v2_defaults)
{
	no_policy_limits();
	put("cgroup.controllers", "cpuset cpu io memory pids\n");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), 0);
	ck_assert_str_eq(t.cg.mechanism, "cgroup2(memory,pids,cpu)");
	ck_assert_str_eq(get("ringfence/alpha/memory.max"), "1073741824");
	/* RF_DEFAULT_PIDS_SPARE beyond a thread per queue in each of the
	 * worker's two processes (no broker here: one queue) */
	ck_assert_str_eq(get("ringfence/alpha/pids.max"), "66");
	ck_assert_str_eq(get("ringfence/alpha/cpu.weight"), "100");
	ck_assert(t.cg.sched_idle); /* a cpu group of its own */
}
END_TEST

START_TEST(test_v2_defaults_partial)
{
	no_policy_limits();
	put("cgroup.controllers", "io memory\n"); /* no pids, no cpu */
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), 0);
	ck_assert_str_eq(t.cg.mechanism, "cgroup2(memory)");
	ck_assert_str_eq(get("cgroup.subtree_control"), "+memory ");
	ck_assert_uint_eq(rf_cgroup_nproc(&t), 66);
	ck_assert(!t.cg.sched_idle); /* no cpu group: the normal policy */
}
END_TEST

/* v2 can refuse the cpu controller alone (real-time tasks in groups):
 * the default share goes, the other limits stay. */
START_TEST(test_v2_cpu_refused)
{
	no_policy_limits();
	put("cgroup.controllers", "cpu memory pids\n");
	rf_cgroup_test_refuse("cpu");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), 0);
	rf_cgroup_test_refuse(NULL);
	ck_assert_str_eq(t.cg.mechanism, "cgroup2(memory,pids)");
	ck_assert_str_eq(get("cgroup.subtree_control"), "+memory +pids ");
	ck_assert(!t.cg.sched_idle);
}
END_TEST

/* ... but not a weight the policy sets, nor sched_idle = on */
START_TEST(test_v2_cpu_refused_required)
{
	no_policy_limits();
	t.pol.sched_idle = RF_FEATURE_ON;
	put("cgroup.controllers", "cpu memory pids\n");
	rf_cgroup_test_refuse("cpu");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), -EINVAL);
	rf_cgroup_test_refuse(NULL);
	ck_assert_str_eq(t.cg.mechanism, "rlimits");
}
END_TEST

START_TEST(test_sched_idle_off)
{
	no_policy_limits();
	t.pol.sched_idle = RF_FEATURE_OFF;
	put("cgroup.controllers", "cpu memory pids\n");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 2), 0);
	ck_assert_str_eq(t.cg.mechanism, "cgroup2(memory,pids,cpu)"); /* the share stays */
	ck_assert(!t.cg.sched_idle);
}
END_TEST

/* sched_idle = on needs a cpu group: without one the tenant does not start */
START_TEST(test_sched_idle_on_without_cpu)
{
	no_policy_limits();
	t.pol.sched_idle = RF_FEATURE_ON;
	dir("memory");
	put("memory/memory.limit_in_bytes", "");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 1), -EOPNOTSUPP);
	ck_assert_int_eq(t.cg.ngroups, 0);
}
END_TEST

START_TEST(test_v1_defaults)
{
	no_policy_limits();
	dir("cpu");
	put("cpu/cpu.shares", "1024\n");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 1), 0);
	ck_assert_str_eq(t.cg.mechanism, "cgroup1(cpu)");
	ck_assert_str_eq(get("cpu/ringfence/alpha/cpu.shares"), "1024"); /* weight 100 */
	ck_assert(t.cg.sched_idle);
}
END_TEST

START_TEST(test_v1_defaults_partial)
{
	no_policy_limits();
	t.pol.pids_max = 10; /* set: required, and there */
	dir("pids");
	put("pids/tasks", "");
	ck_assert_int_eq(rf_cgroup_setup_version(&t, 1), 0);
	ck_assert_str_eq(t.cg.mechanism, "cgroup1(pids)");
	ck_assert_int_eq(t.cg.ngroups, 1);
	ck_assert_str_eq(get("pids/ringfence/alpha/pids.max"), "10");
	ck_assert_uint_eq(rf_cgroup_nproc(&t), 0); /* the cgroup holds them */
}
END_TEST

static Suite *cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc = tcase_create("fake hierarchies");

	tcase_add_unchecked_fixture(tc, case_setup, rf_check_tmp_remove);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_v2);
	tcase_add_test(tc, test_v2_delegated);
	tcase_add_test(tc, test_v2_shared);
	tcase_add_test(tc, test_v2_namespace_root);
	tcase_add_test(tc, test_v2_missing_controller_refuses);
	tcase_add_test(tc, test_v1);
	tcase_add_test(tc, test_v1_missing_controller_refuses);
	tcase_add_test(tc, test_defaults_without_controllers);
	tcase_add_test(tc, test_v2_defaults);
	tcase_add_test(tc, test_v2_defaults_partial);
	tcase_add_test(tc, test_v1_defaults_partial);
	tcase_add_test(tc, test_v2_cpu_refused);
	tcase_add_test(tc, test_v2_cpu_refused_required);
	tcase_add_test(tc, test_sched_idle_off);
	tcase_add_test(tc, test_sched_idle_on_without_cpu);
	tcase_add_test(tc, test_v1_defaults);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(cgroup_suite());
}
