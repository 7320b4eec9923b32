/* SPDX-License-Identifier: MIT */
/* The one main() every Check suite uses: CK_FORK, normal output, exit status. */
#ifndef RINGFENCE_CHECK_MAIN_H
#define RINGFENCE_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int rf_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* RINGFENCE_CHECK_MAIN_H */
