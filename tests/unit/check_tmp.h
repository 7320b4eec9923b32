/* SPDX-License-Identifier: MIT */
/*
 * One temporary directory for a whole test case, made and removed by the
 * parent process (an unchecked fixture), so that it goes even when a test
 * fails: a failing test's forked child exits before any checked teardown.
 * Each test works in a subdirectory of its own. One suite per program.
 */
#ifndef RINGFENCE_CHECK_TMP_H
#define RINGFENCE_CHECK_TMP_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static char rf_check_top[64];

/* /tmp/rf-@what-test.XXXXXX */
static inline void rf_check_tmp_make(const char *what)
{
	snprintf(rf_check_top, sizeof(rf_check_top), "/tmp/rf-%s-test.XXXXXX", what);
	if (!mkdtemp(rf_check_top))
		abort();
}

static inline int rf_check_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void rf_check_tmp_remove(void)
{
	if (nftw(rf_check_top, rf_check_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "cannot remove %s\n", rf_check_top);
}

#endif /* RINGFENCE_CHECK_TMP_H */
