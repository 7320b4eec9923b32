// SPDX-License-Identifier: MIT
/* The deployment policy parser: good files, every class of bad file. */
#include "check_main.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

static char err[8192];

static struct rf_policy *load_ok(const char *name)
{
	char path[512];
	struct rf_policy *p = NULL;
	int r;

	snprintf(path, sizeof(path), FIXTURES "/%s", name);
	r = rf_policy_load(path, &p, err, sizeof(err));
	ck_assert_msg(r == 0, "%s: %d: %s", name, r, err);
	return p;
}

START_TEST(test_good_full)
{
	struct rf_policy *p = load_ok("good_full.policy");
	const struct rf_mount_policy *m;
	char so[1024];

	ck_assert_str_eq(p->control_socket, "/run/ringfence/test.sock");
	ck_assert_str_eq(p->plugin_dir, "/usr/lib/ringfence/plugins");
	ck_assert_str_eq(p->control_group, "ringfence");
	ck_assert_str_eq(p->log_target, "stderr");
	ck_assert_uint_eq(p->nmounts, 2);
	m = &p->mounts[0];
	ck_assert_str_eq(m->name, "data");
	ck_assert_int_eq(m->line, 8);
	ck_assert_str_eq(m->mountpoint, "/srv/mnt/data");
	ck_assert_str_eq(m->source, "/srv/data");
	ck_assert_str_eq(m->options, "timeout=2,tag=#1");
	ck_assert_int_eq(m->transport, RF_TRANSPORT_URING);
	ck_assert_uint_eq(m->queue_depth, 16);
	ck_assert_uint_eq(m->max_write, 128 * 1024);
	ck_assert(m->allow_other);
	ck_assert(!m->default_permissions);
	ck_assert(m->read_only);
	ck_assert(!m->handle_killpriv);
	ck_assert_int_eq(rf_policy_plugin_path(p, m, so, sizeof(so)), 0);
	ck_assert_str_eq(so, "/usr/lib/ringfence/plugins/passthrough.so");
	ck_assert_str_eq(rf_policy_seccomp_path(p, m), "/etc/ringfence/strict.policy");
	ck_assert_uint_eq(m->max_file_size, 2ULL << 30);
	ck_assert_uint_eq(m->request_timeout, 30);
	ck_assert_uint_eq(m->heartbeat_timeout, 0);
	ck_assert_int_eq(m->ownership, RF_OWN_TENANT);
	ck_assert_int_eq(p->mounts[1].ownership, RF_OWN_XATTR);
	ck_assert_uint_eq(p->mounts[1].request_timeout, 0);
	ck_assert_uint_eq(p->mounts[1].heartbeat_timeout, RF_DEFAULT_HEARTBEAT_TIMEOUT);
	ck_assert_uint_eq(p->mounts[1].kernel_timeout, RF_KERNEL_TIMEOUT_AUTO);
	ck_assert_uint_eq(p->mounts[1].max_file_size, 0);
	ck_assert_str_eq(rf_policy_seccomp_path(p, &p->mounts[1]), p->seccomp_policy);
	m = &p->mounts[1];
	ck_assert_str_eq(m->name, "scratch");
	ck_assert_int_eq(m->transport, RF_TRANSPORT_CLASSIC);
	ck_assert_str_eq(m->source, "");
	ck_assert_uint_eq(m->max_write, 1024 * 1024);
	ck_assert_int_eq(rf_policy_plugin_path(p, m, so, sizeof(so)), 0);
	ck_assert_str_eq(so, "/opt/plugins/memfs.so");
	rf_policy_free(p);
}
END_TEST

START_TEST(test_good_minimal_defaults)
{
	struct rf_policy *p = load_ok("good_minimal.policy");
	const struct rf_mount_policy *m = &p->mounts[0];

	ck_assert_str_eq(p->control_socket, RF_DEFAULT_CONTROL_SOCKET);
	ck_assert_int_eq(m->transport, RF_TRANSPORT_AUTO);
	ck_assert_uint_eq(m->queue_depth, RF_DEFAULT_QUEUE_DEPTH);
	ck_assert_uint_eq(m->max_write, RF_DEFAULT_MAX_WRITE);
	ck_assert(m->default_permissions);
	ck_assert(m->handle_killpriv);
	ck_assert(!m->allow_other);
	ck_assert_str_eq(m->user, RF_USER_DYNAMIC);
	ck_assert_str_eq(m->group, "");
	ck_assert(!m->shared_user);
	ck_assert_uint_eq(p->user_range[0], RF_DEFAULT_USER_RANGE_LO);
	ck_assert_uint_eq(p->user_range[1], RF_DEFAULT_USER_RANGE_HI);
	ck_assert_str_eq(p->users_file, RF_DEFAULT_USERS_FILE);
	rf_policy_free(p);
}
END_TEST

/* two tenants may share a named user when both say so; dynamic users are
 * never shared (each tenant gets its own) */
START_TEST(test_good_users)
{
	struct rf_policy *p = load_ok("good_users.policy");

	ck_assert_uint_eq(p->user_range[0], 2000000000);
	ck_assert_uint_eq(p->user_range[1], 2000000999);
	ck_assert_str_eq(p->users_file, "/var/lib/rf-test/users");
	ck_assert(p->mounts[0].shared_user && p->mounts[1].shared_user);
	ck_assert_str_eq(p->mounts[2].user, RF_USER_DYNAMIC);
	ck_assert_str_eq(p->mounts[3].user, RF_USER_DYNAMIC);
	rf_policy_free(p);
}
END_TEST

/* Each bad fixture and the error it must produce: FILE:LINE: and a phrase. */
static const struct {
	const char *file;
	int line;
	const char *phrase;
} bad[] = {
	{ "bad_unknown_key.policy", 4, "unknown key 'colour'" },
	{ "bad_relative_mountpoint.policy", 2, "mountpoint: expected an absolute path" },
	{ "bad_missing_plugin.policy", 1, "missing required key 'plugin' (or 'program')" },
	{ "bad_plugin_and_program.policy", 4,
	  "program: a mount runs a plugin or a program, not both ('plugin' at line 3)" },
	{ "bad_program_options.policy", 4,
	  "options: a program's arguments are 'program_args' (options are a plugin's)" },
	{ "bad_program_args_alone.policy", 4, "program_args: no 'program' to give them" },
	{ "bad_program_relative.policy", 3,
	  "program: expected an absolute path, got 'squashfuse_ll'" },
	{ "bad_size_suffix.policy", 4, "max_write: expected a size" },
	{ "bad_size_range.policy", 4, "max_write: 2M is out of range" },
	{ "bad_size_align.policy", 4, "not a multiple of 4096" },
	{ "bad_transport.policy", 4, "transport: expected auto, uring or classic" },
	{ "bad_depth.policy", 4, "queue_depth: 0 is out of range" },
	{ "bad_heartbeat.policy", 4, "heartbeat_timeout: 3601 is out of range 0..3600" },
	{ "bad_kernel_timeout.policy", 6,
	  "kernel_timeout: 25 s would abort the connection while the watchdog replaces a worker "
	  "(request_timeout + start_timeout = 25 s)" },
	{ "bad_ownership.policy", 5, "ownership: xattr needs default_permissions = yes" },
	{ "bad_ownership_value.policy", 4, "ownership: expected tenant or xattr, got 'root'" },
	{ "bad_bool.policy", 4, "allow_other: expected yes or no" },
	{ "bad_duplicate_key.policy", 4, "plugin: set twice (first at line 3)" },
	{ "bad_duplicate_mount.policy", 5, "[mount m]: name already used at line 1" },
	{ "bad_same_mountpoint.policy", 6, "is already the mountpoint of [mount a]" },
	{ "bad_same_mountpoint_spelled.policy", 6,
	  "'/mnt/m' is already the mountpoint of [mount a]" },
	{ "bad_root_mountpoint.policy", 2, "mountpoint: '/' would hide the whole system" },
	{ "bad_section.policy", 1, "unknown section '[tenant m]'" },
	{ "bad_key_outside.policy", 1, "key outside a section" },
	{ "bad_no_equals.policy", 2, "expected 'key = value'" },
	{ "bad_empty.policy", 1, "nothing to serve" },
	{ "bad_plugin_name.policy", 3, "plugin: expected a plugin name" },
	{ "bad_dotdot.policy", 2, "must not contain '..'" },
	{ "bad_source_inside.policy", 4, "must not contain one another" },
	{ "bad_name.policy", 1, "NAME must be" },
	{ "bad_global_twice.policy", 2, "[global] appears twice" },
	{ "bad_user.policy", 4, "user: expected a name" },
	{ "bad_nested.policy", 6, "are nested" },
	{ "bad_source_in_other.policy", 8, "overlaps the mountpoint of [mount a]" },
	{ "bad_log.policy", 2, "log: expected syslog or stderr" },
	{ "bad_control_group.policy", 2, "control_group: expected a name" },
	{ "bad_shared_user.policy", 9,
	  "user: 'nobody' is also the user of [mount a] (line 1): every tenant runs as a user of "
	  "its own; to share one, say shared_user = yes in both" },
	{ "bad_group_dynamic.policy", 4, "group: only with a named user" },
	{ "bad_disk_no_source.policy", 4,
	  "disk_max: limits the tenant's source, and there is none" },
	{ "bad_disk_shared.policy", 6, "shared_user: a disk limit needs a user of its own" },
	{ "bad_core_dir.policy", 4, "core_dir: only a tenant with debug = yes dumps core" },
	{ "bad_core_dir_inside.policy", 5,
	  "core_dir: '/mnt/a/cores' and mountpoint '/mnt/a' must not contain one another" },
	{ "bad_user_range.policy", 2, "user_range: 500-600 must lie within 1000-2147352575" },
	{ "bad_user_range_order.policy", 2, "user_range: 2000-1000 must lie within" },
};

/* A program's mount: its program is what the worker starts, with
 * program.policy unless it names a seccomp policy of its own. */
START_TEST(test_program_mount)
{
	const char text[] = "[mount s]\nmountpoint = /mnt/s\nprogram = /usr/bin/squashfuse_ll\n"
			    "program_args = /source/a.sqfs -o uid=0\n\n"
			    "[mount t]\nmountpoint = /mnt/t\nprogram = /usr/bin/x\n"
			    "seccomp_policy = /etc/x.policy\n";
	struct rf_policy *p = NULL;
	char path[256];

	ck_assert_int_eq(rf_policy_parse("mem", text, sizeof(text) - 1, &p, err, sizeof(err)), 0);
	ck_assert_str_eq(p->mounts[0].program, "/usr/bin/squashfuse_ll");
	ck_assert_str_eq(p->mounts[0].program_args, "/source/a.sqfs -o uid=0");
	ck_assert_str_eq(p->mounts[0].plugin, "");
	ck_assert_int_eq(rf_policy_plugin_path(p, &p->mounts[0], path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/usr/bin/squashfuse_ll");
	ck_assert_str_eq(rf_policy_seccomp_path(p, &p->mounts[0]), RF_PROGRAM_POLICY);
	ck_assert_str_eq(rf_policy_seccomp_path(p, &p->mounts[1]), "/etc/x.policy");
	ck_assert_str_eq(rf_mount_runs(&p->mounts[0]), "/usr/bin/squashfuse_ll");
	rf_policy_free(p);
}
END_TEST

START_TEST(test_bad_fixture)
{
	char path[512], want[600];
	struct rf_policy *p = NULL;
	int r;

	snprintf(path, sizeof(path), FIXTURES "/%s", bad[_i].file);
	r = rf_policy_load(path, &p, err, sizeof(err));
	ck_assert_msg(r == -EINVAL, "%s: expected -EINVAL, got %d", bad[_i].file, r);
	ck_assert_ptr_null(p);
	snprintf(want, sizeof(want), "%s:%d: ", path, bad[_i].line);
	ck_assert_msg(strstr(err, want) != NULL, "%s: no '%s' in:\n%s", bad[_i].file, want, err);
	ck_assert_msg(strstr(err, bad[_i].phrase) != NULL, "%s: no '%s' in:\n%s", bad[_i].file,
		      bad[_i].phrase, err);
}
END_TEST

START_TEST(test_all_errors_reported)
{
	const char text[] =
		"[mount a]\nmountpoint = x\nplugin = hello\nfoo = 1\nqueue_depth = -1\n";
	struct rf_policy *p = NULL;
	int r = rf_policy_parse("mem", text, sizeof(text) - 1, &p, err, sizeof(err));

	ck_assert_int_eq(r, -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:2: "));
	ck_assert_ptr_nonnull(strstr(err, "mem:4: "));
	ck_assert_ptr_nonnull(strstr(err, "mem:5: "));
}
END_TEST

START_TEST(test_nul_and_long_lines)
{
	char text[6000];
	struct rf_policy *p = NULL;
	int r;

	memcpy(text, "[mount a]\nplugin = he\0llo\n", 27);
	r = rf_policy_parse("mem", text, 27, &p, err, sizeof(err));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:2: NUL byte"));
	memset(text, 'a', sizeof(text));
	memcpy(text, "[mount a]\n", 10);
	r = rf_policy_parse("mem", text, sizeof(text), &p, err, sizeof(err));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:2: line longer than"));
}
END_TEST

/* Reload restarts a tenant when rf_mount_policy_same() says a key changed:
 * each key, changed alone, must count; the header's line must not. */
START_TEST(test_mount_policy_same)
{
	struct rf_policy *p = load_ok("good_full.policy");
	const struct rf_mount_policy *m = &p->mounts[0];
	struct rf_mount_policy b;
	int changed = 0;

	memcpy(&b, m, sizeof(b));
	ck_assert(rf_mount_policy_same(m, &b));
	b.line += 7;
	ck_assert(rf_mount_policy_same(m, &b));
#define FLIP(stmt)                                                                  \
	do {                                                                        \
		memcpy(&b, m, sizeof(b));                                           \
		stmt;                                                               \
		ck_assert_msg(!rf_mount_policy_same(m, &b), "%s unnoticed", #stmt); \
		changed++;                                                          \
	} while (0)
	FLIP(b.name[0] ^= 1);
	FLIP(b.mountpoint[1] ^= 1);
	FLIP(b.plugin[0] ^= 1);
	FLIP(strcat(b.source, "x"));
	FLIP(strcat(b.options, "x"));
	FLIP(b.user[0] ^= 1);
	FLIP(b.group[0] ^= 1);
	FLIP(strcat(b.seccomp_policy, "x"));
	FLIP(b.transport = (b.transport + 1) % 3);
	FLIP(b.queue_depth++);
	FLIP(b.max_write *= 2);
	FLIP(b.start_timeout++);
	FLIP(b.max_file_size++);
	FLIP(b.memory_max++);
	FLIP(b.pids_max++);
	FLIP(b.cpu_weight++);
	FLIP(b.sched_idle = (b.sched_idle + 1) % 3);
	FLIP(b.request_timeout++);
	FLIP(b.heartbeat_timeout++);
	FLIP(b.crash_limit++);
	FLIP(b.crash_window++);
	FLIP(b.allow_other = !b.allow_other);
	FLIP(b.default_permissions = !b.default_permissions);
	FLIP(b.read_only = !b.read_only);
	FLIP(b.handle_killpriv = !b.handle_killpriv);
	FLIP(b.shared_user = !b.shared_user);
	FLIP(b.disk_max++);
	FLIP(b.inodes_max++);
	FLIP(b.ownership = !b.ownership);
	FLIP(b.bufpool = (b.bufpool + 1) % 3);
	FLIP(b.zero_copy = (b.zero_copy + 1) % 3);
	FLIP(b.pool_size += 4096);
#undef FLIP
	ck_assert_int_eq(changed, 32);
	rf_policy_free(p);
}
END_TEST

/* Paths are kept in one spelling: what the kernel's mount table shows. */
START_TEST(test_paths_normalized)
{
	static const struct {
		const char *in, *out;
	} c[] = {
		{ "/mnt/m/", "/mnt/m" },	{ "/mnt//m", "/mnt/m" },
		{ "/mnt/./m/.", "/mnt/m" },	{ "//mnt///m//", "/mnt/m" },
		{ "/mnt/.m/x.", "/mnt/.m/x." }, { "/./mnt", "/mnt" },
	};
	char text[256];
	struct rf_policy *p = NULL;
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		snprintf(text, sizeof(text), "[mount m]\nmountpoint = %s\nplugin = hello\n",
			 c[i].in);
		ck_assert_int_eq(rf_policy_parse("mem", text, strlen(text), &p, err, sizeof(err)),
				 0);
		ck_assert_str_eq(p->mounts[0].mountpoint, c[i].out);
		rf_policy_free(p);
	}
}
END_TEST

START_TEST(test_missing_file)
{
	struct rf_policy *p = NULL;
	int r = rf_policy_load(FIXTURES "/does-not-exist.policy", &p, err, sizeof(err));

	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "does-not-exist.policy: cannot read: No such file"));
}
END_TEST

/* a FIFO as the policy: refused at once (the old open waited for a writer) */
START_TEST(test_fifo)
{
	char dir[] = "/tmp/rf-policy-test.XXXXXX", fifo[64];
	struct rf_policy *p = NULL;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(rf_policy_load(fifo, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(err, "fifo: cannot read: not a regular file"), "%s", err);
	unlink(fifo);
	rmdir(dir);
}
END_TEST

START_TEST(test_error_buffer_truncates_safely)
{
	char small[24];
	const char text[] = "junk\njunk\njunk\njunk\n";
	struct rf_policy *p = NULL;
	int r;

	memset(small, 'X', sizeof(small));
	r = rf_policy_parse("a-rather-long-file-name", text, sizeof(text) - 1, &p, small,
			    sizeof(small));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_ptr_nonnull(memchr(small, '\0', sizeof(small)));
}
END_TEST

static int parse_mount(const char *keys, struct rf_policy **p)
{
	char text[1024];
	int n = snprintf(text, sizeof(text), "[mount a]\nmountpoint = /mnt/a\nplugin = hello\n%s",
			 keys);

	*p = NULL;
	return rf_policy_parse("mem", text, (size_t)n, p, err, sizeof(err));
}

START_TEST(test_buffer_pool_keys)
{
	struct rf_policy *p;

	ck_assert_int_eq(parse_mount("", &p), 0);
	ck_assert_int_eq(p->mounts[0].bufpool, RF_FEATURE_AUTO);
	ck_assert_uint_eq(p->mounts[0].pool_size, 0);
	rf_policy_free(p);
	ck_assert_int_eq(parse_mount("bufpool = on\npool_size = 32M\n", &p), 0);
	ck_assert_int_eq(p->mounts[0].bufpool, RF_FEATURE_ON);
	ck_assert_uint_eq(p->mounts[0].pool_size, 32 << 20);
	rf_policy_free(p);
	ck_assert_int_eq(parse_mount("bufpool = off\n", &p), 0);
	ck_assert_int_eq(p->mounts[0].bufpool, RF_FEATURE_OFF);
	rf_policy_free(p);
	ck_assert_int_eq(parse_mount("bufpool = maybe\n", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:4: bufpool: expected auto, on or off, got 'maybe'"));
	ck_assert_int_eq(parse_mount("transport = classic\nbufpool = on\n", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:5: bufpool: on needs FUSE io-uring"));
	ck_assert_int_eq(parse_mount("bufpool = off\npool_size = 8M\n", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:5: pool_size: sizes the kernel's buffer pools"));
	ck_assert_int_eq(parse_mount("pool_size = 512K\n", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:4: pool_size"));
}
END_TEST

START_TEST(test_zero_copy_key)
{
	struct rf_policy *p;

	ck_assert_int_eq(parse_mount("", &p), 0);
	ck_assert_int_eq(p->mounts[0].zero_copy, RF_FEATURE_AUTO);
	rf_policy_free(p);
	ck_assert_int_eq(parse_mount("zero_copy = on\nbufpool = on\n", &p), 0);
	ck_assert_int_eq(p->mounts[0].zero_copy, RF_FEATURE_ON);
	rf_policy_free(p);
	ck_assert_int_eq(parse_mount("zero_copy = off\n", &p), 0);
	ck_assert_int_eq(p->mounts[0].zero_copy, RF_FEATURE_OFF);
	rf_policy_free(p);
	/* auto with pools off: nothing to ask for, not an error */
	ck_assert_int_eq(parse_mount("bufpool = off\n", &p), 0);
	rf_policy_free(p);
	ck_assert_int_eq(parse_mount("zero_copy = yes\n", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:4: zero_copy: expected auto, on or off, got 'yes'"));
	ck_assert_int_eq(parse_mount("transport = classic\nzero_copy = on\n", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:5: zero_copy: on needs FUSE io-uring"));
	ck_assert_int_eq(parse_mount("bufpool = off\nzero_copy = on\n", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(
		err, "mem:5: zero_copy: on needs the kernel's buffer pools, and bufpool is off"));
}
END_TEST

START_TEST(test_sched_idle_key)
{
	struct rf_policy *p;

	ck_assert_int_eq(parse_mount("", &p), 0);
	ck_assert_int_eq(p->mounts[0].sched_idle, RF_FEATURE_AUTO);
	rf_policy_free(p);
	ck_assert_int_eq(parse_mount("sched_idle = on\n", &p), 0);
	ck_assert_int_eq(p->mounts[0].sched_idle, RF_FEATURE_ON);
	rf_policy_free(p);
	ck_assert_int_eq(parse_mount("sched_idle = off\n", &p), 0);
	ck_assert_int_eq(p->mounts[0].sched_idle, RF_FEATURE_OFF);
	rf_policy_free(p);
	ck_assert_int_eq(parse_mount("sched_idle = 1\n", &p), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "mem:4: sched_idle: expected auto, on or off, got '1'"));
}
END_TEST

START_TEST(test_parse_size)
{
	uint64_t v;

	ck_assert_int_eq(rf_parse_size("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(rf_parse_size("64K", &v), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(rf_parse_size("1m", &v), 0);
	ck_assert_uint_eq(v, 1048576);
	ck_assert_int_eq(rf_parse_size("2G", &v), 0);
	ck_assert_uint_eq(v, 2ULL << 30);
	ck_assert_int_eq(rf_parse_size("", &v), -EINVAL);
	ck_assert_int_eq(rf_parse_size("-1", &v), -EINVAL);
	ck_assert_int_eq(rf_parse_size("1KB", &v), -EINVAL);
	ck_assert_int_eq(rf_parse_size("99999999999999999999", &v), -ERANGE);
	ck_assert_int_eq(rf_parse_size("99999999999999G", &v), -ERANGE);
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_good_full);
	tcase_add_test(tc, test_good_minimal_defaults);
	tcase_add_test(tc, test_good_users);
	tcase_add_test(tc, test_program_mount);
	tcase_add_loop_test(tc, test_bad_fixture, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, test_all_errors_reported);
	tcase_add_test(tc, test_nul_and_long_lines);
	tcase_add_test(tc, test_mount_policy_same);
	tcase_add_test(tc, test_paths_normalized);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_fifo);
	tcase_add_test(tc, test_error_buffer_truncates_safely);
	tcase_add_test(tc, test_parse_size);
	tcase_add_test(tc, test_buffer_pool_keys);
	tcase_add_test(tc, test_zero_copy_key);
	tcase_add_test(tc, test_sched_idle_key);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(policy_suite());
}
