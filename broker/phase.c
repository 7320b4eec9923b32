// SPDX-License-Identifier: MIT
/*
 * What a worker may send, and when, and what its plugin host may send on
 * its own channel: a table each, as OpenSSH's monitor keeps for its
 * unprivileged child. Pure, so the unit tests walk every case.
 */
#include <stddef.h>

#include "broker.h"
#include "msg.h"

enum {
	ONCE = 1 << 0, /* at most once per worker or host (SECCOMP, FAILED: it dies after) */
	AFTER_HELLO = 1 << 1, /* only once HELLO has come */
	BEFORE_READY = 1 << 2, /* only until READY has come */
};

struct rule {
	uint32_t type;
	unsigned int flags;
};

static const struct rule worker_may_send[] = {
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

/* A plugin host's channel, of each host anew: it logs, and before it
 * dies names a trapped call or a start-up failure. Nothing of the
 * keeper's (HELLO, READY, HOST_DIED) is believed from it. */
static const struct rule host_may_send[] = {
	{ RF_MSG_LOG, 0 },
	{ RF_MSG_SECCOMP, ONCE },
	{ RF_MSG_FAILED, ONCE },
};

static const char *refusal(const struct rule *rules, size_t n, uint32_t type, uint32_t seen,
			   const char *none)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned int f = rules[i].flags;

		if (rules[i].type != type)
			continue;
		if ((f & AFTER_HELLO) && !(seen & RF_MSG_BIT(RF_MSG_HELLO)))
			return "message before HELLO";
		if ((f & BEFORE_READY) && (seen & RF_MSG_BIT(RF_MSG_READY)))
			return "message not allowed after READY";
		if ((f & ONCE) && (seen & RF_MSG_BIT(type)))
			return "message allowed only once";
		return NULL;
	}
	return none;
}

const char *rf_worker_msg_refusal(uint32_t type, uint32_t seen)
{
	return refusal(worker_may_send, sizeof(worker_may_send) / sizeof(worker_may_send[0]), type,
		       seen, "message type not allowed from a worker");
}

const char *rf_host_msg_refusal(uint32_t type, uint32_t seen)
{
	return refusal(host_may_send, sizeof(host_may_send) / sizeof(host_may_send[0]), type, seen,
		       "message type not allowed from a plugin host");
}
