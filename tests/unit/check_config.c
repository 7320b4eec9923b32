// SPDX-License-Identifier: MIT
/* What a reload restarts (broker/config.c, rf_config_changed). */
#include "check_main.h"
#include <string.h>

#include "broker.h"

static char err[4096];

static struct rf_policy *parse(const char *text)
{
	struct rf_policy *p = NULL;

	ck_assert_msg(rf_policy_parse("t", text, strlen(text), &p, err, sizeof(err)) == 0, "%s",
		      err);
	return p;
}

#define BASE                                                                       \
	"[global]\nplugin_dir = /opt/plugins\nseccomp_policy = /etc/sc.policy\n\n" \
	"[mount a]\nmountpoint = /mnt/a\nplugin = memfs\n"

static bool changed(const char *before, const char *after)
{
	struct rf_policy *o = parse(before), *n = parse(after);
	bool r = rf_config_changed(o, &o->mounts[0], n, &n->mounts[0]);

	rf_policy_free(o);
	rf_policy_free(n);
	return r;
}

START_TEST(test_same)
{
	ck_assert(!changed(BASE, BASE));
	/* where the section stands does not count */
	ck_assert(!changed(BASE, "# a comment\n\n" BASE));
}
END_TEST

START_TEST(test_a_key)
{
	ck_assert(changed(BASE, BASE "queue_depth = 4\n"));
	ck_assert(changed(BASE, BASE "max_write = 64K\n"));
	ck_assert(changed(BASE, BASE "read_only = yes\n"));
}
END_TEST

/* globals a mount takes as its own: its plugin's directory (for a bare
 * name) and the seccomp policy (unless it names its own) */
START_TEST(test_globals)
{
	ck_assert(changed(BASE,
			  "[global]\nplugin_dir = /opt/other\nseccomp_policy = "
			  "/etc/sc.policy\n\n[mount a]\nmountpoint = /mnt/a\nplugin = memfs\n"));
	ck_assert(changed(BASE, "[global]\nplugin_dir = /opt/plugins\nseccomp_policy = "
				"/etc/other.policy\n\n[mount a]\nmountpoint = /mnt/a\nplugin = "
				"memfs\n"));
	/* a mount with a plugin path and a seccomp policy of its own does not
	 * care about either global */
	ck_assert(!changed("[global]\nplugin_dir = /opt/plugins\n[mount a]\nmountpoint = "
			   "/mnt/a\nplugin = /x/p.so\nseccomp_policy = /etc/own.policy\n",
			   "[global]\nplugin_dir = /opt/other\nseccomp_policy = /etc/any\n[mount "
			   "a]\nmountpoint = /mnt/a\nplugin = /x/p.so\nseccomp_policy = "
			   "/etc/own.policy\n"));
	/* the control socket is the broker's, not the mount's */
	ck_assert(!changed(BASE, "[global]\ncontrol_socket = /run/x.sock\nplugin_dir = "
				 "/opt/plugins\nseccomp_policy = /etc/sc.policy\n\n[mount "
				 "a]\nmountpoint = /mnt/a\nplugin = memfs\n"));
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("what a reload restarts");

	tcase_add_test(tc, test_same);
	tcase_add_test(tc, test_a_key);
	tcase_add_test(tc, test_globals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(config_suite());
}
