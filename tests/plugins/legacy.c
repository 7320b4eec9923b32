// SPDX-License-Identifier: MIT
/*
 * legacy: a plugin of ABI 1 as built before struct rf_plugin had flags
 * (its struct_size ends at readdirplus; the worker must read nothing past
 * it, no restore hooks), serving an empty root whose setattr
 * answers and changes nothing. It can change a file's attributes but never
 * says it clears setuid and setgid bits, so the worker must refuse it
 * under handle_killpriv and load it without.
 */
#include <stddef.h>
#include <string.h>

#include "ringfence/plugin.h"

static void legacy_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct stat st;

	(void)fh;
	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = S_IFDIR | 0755;
	st.st_nlink = 2;
	rf_reply_attr(req, &st, 1);
}

static void legacy_setattr(struct rf_req *req, uint64_t ino, const struct rf_setattr *sa)
{
	legacy_getattr(req, ino, sa->fh);
}

const struct rf_plugin ringfence_plugin = {
	.abi_version = 1,
	.struct_size = offsetof(struct rf_plugin, flags),
	.name = "legacy",
	.getattr = legacy_getattr,
	.setattr = legacy_setattr,
};
