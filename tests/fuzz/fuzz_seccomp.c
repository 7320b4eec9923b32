// SPDX-License-Identifier: MIT
/* libFuzzer: the seccomp.policy parser and compiler, on any bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "seccomp_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static char err[4096];
	struct rf_sc_policy *p = NULL;

	/* @include reads files: the fixtures test it, the fuzzer stays in memory */
	if (memmem(data, len, "include", 7))
		return 0;
	if (rf_sc_policy_parse("fuzz", (const char *)data, len, &p, err, sizeof(err)) == 0)
		rf_sc_policy_free(p);
	return 0;
}
