// SPDX-License-Identifier: MIT
/*
 * What a worker may send, and when: one table, as OpenSSH's monitor keeps
 * for its unprivileged child. Pure, so the unit tests walk every case.
 */
#include <stddef.h>

#include "broker.h"
#include "msg.h"

enum {
	ONCE = 1 << 0, /* at most once per worker (SECCOMP, FAILED: it dies after) */
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
	{ RF_MSG_SECCOMP, ONCE | AFTER_HELLO },
	{ RF_MSG_FAILED, ONCE | AFTER_HELLO | BEFORE_READY },
	/* host_restart: as often as its plugin hosts die (spawn.c holds it
	 * to the tenant's state); a new host's READY, SECCOMP and FAILED
	 * count afresh after it */
	{ RF_MSG_HOST_DIED, AFTER_HELLO },
};

const char *rf_worker_msg_refusal(uint32_t type, uint32_t seen)
{
	size_t i;

	for (i = 0; i < sizeof(worker_may_send) / sizeof(worker_may_send[0]); i++) {
		unsigned int f = worker_may_send[i].flags;

		if (worker_may_send[i].type != type)
			continue;
		if ((f & AFTER_HELLO) && !(seen & RF_MSG_BIT(RF_MSG_HELLO)))
			return "message before HELLO";
		if ((f & BEFORE_READY) && (seen & RF_MSG_BIT(RF_MSG_READY)))
			return "message not allowed after READY";
		if ((f & ONCE) && (seen & RF_MSG_BIT(type)))
			return "message allowed only once";
		return NULL;
	}
	return "message type not allowed from a worker";
}
