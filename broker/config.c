// SPDX-License-Identifier: MIT
/*
 * The broker's configuration: a deployment policy and every seccomp policy
 * it names, read and checked as a whole (at start, for --check, and for a
 * reload, which takes all of it or none).
 */
#include <stdio.h>
#include <string.h>

#include "broker.h"
#include "seccomp_policy.h"

int rf_config_seccomp(const char *path, FILE *print, char *err, size_t errlen)
{
	struct rf_sc_policy *sc;
	int r;

	r = rf_sc_policy_load(path, &sc, err, errlen);
	if (r < 0)
		return r;
	if (print)
		rf_sc_policy_print(sc, print);
	rf_sc_policy_free(sc);
	return 0;
}

int rf_config_load(const char *path, struct rf_policy **out, char *err, size_t errlen)
{
	struct rf_policy *p;
	size_t i, used;
	int r;

	r = rf_policy_load(path, &p, err, errlen);
	if (r < 0)
		return r;
	for (i = 0; i < p->nmounts; i++) {
		int sr;

		used = strlen(err);
		sr = rf_config_seccomp(rf_policy_seccomp_path(p, &p->mounts[i]), NULL, err + used,
				       errlen - used);
		if (sr < 0) {
			used = strlen(err);
			snprintf(err + used, errlen - used,
				 "%s:%d: [mount %s]: its seccomp policy is not valid\n", path,
				 p->mounts[i].line, p->mounts[i].name);
			r = sr;
		}
	}
	if (r < 0) {
		rf_policy_free(p);
		return r;
	}
	*out = p;
	return 0;
}

bool rf_config_changed(const struct rf_policy *op, const struct rf_mount_policy *om,
		       const struct rf_policy *np, const struct rf_mount_policy *nm)
{
	char pa[RF_POLICY_PATH_MAX], pb[RF_POLICY_PATH_MAX];

	if (!rf_mount_policy_same(om, nm))
		return true;
	/* a global the mount takes as its own */
	if (strcmp(rf_policy_seccomp_path(op, om), rf_policy_seccomp_path(np, nm)))
		return true;
	if (rf_policy_plugin_path(op, om, pa, sizeof(pa)) ||
	    rf_policy_plugin_path(np, nm, pb, sizeof(pb)))
		return true;
	return strcmp(pa, pb) != 0;
}
