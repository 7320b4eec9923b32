// SPDX-License-Identifier: MIT
/* libFuzzer: the deployment policy parser, on any bytes. */
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static char err[4096];
	struct rf_policy *p = NULL;

	if (rf_policy_parse("fuzz", (const char *)data, len, &p, err, sizeof(err)) == 0)
		rf_policy_free(p);
	return 0;
}
