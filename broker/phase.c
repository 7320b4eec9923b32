// SPDX-License-Identifier: MIT
/*
 * What a worker may send, and when: one table, as OpenSSH's monitor keeps
 * for its unprivileged child. Pure, so the unit tests walk every case.
 */
#include <stddef.h>

#include "broker.h"
#include "msg.h"

enum {
	ONCE = 1 << 0, /* at most once per worker */
	AFTER_HELLO = 1 << 1, /* only once HELLO has come */
	BEFORE_READY = 1 << 2, /* only until READY has come */
};

static const struct {
	uint32_t type;
	unsigned int flags;
} worker_may_send[] = {
	{ RF_MSG_HELLO, ONCE | BEFORE_READY },
	{ RF_MSG_READY, ONCE | AFTER_HELLO },
	{ RF_MSG_LOG, AFTER_HELLO },
	{ RF_MSG_SECCOMP, AFTER_HELLO },
	{ RF_MSG_FAILED, AFTER_HELLO | BEFORE_READY },
};

const char *rf_worker_msg_refusal(uint32_t type, bool hello_seen, bool ready_seen)
{
	size_t i;

	for (i = 0; i < sizeof(worker_may_send) / sizeof(worker_may_send[0]); i++) {
		unsigned int f = worker_may_send[i].flags;

		if (worker_may_send[i].type != type)
			continue;
		if ((f & AFTER_HELLO) && !hello_seen)
			return "message before HELLO";
		if ((f & BEFORE_READY) && ready_seen)
			return "message not allowed after READY";
		if ((f & ONCE) &&
		    ((type == RF_MSG_HELLO && hello_seen) || (type == RF_MSG_READY && ready_seen)))
			return "message allowed only once";
		return NULL;
	}
	return "message type not allowed from a worker";
}
