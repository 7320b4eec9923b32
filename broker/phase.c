// SPDX-License-Identifier: MIT
/*
 * What a worker may send, and when, and what its plugin host may send on
 * its own channel: each channel has one table of rules (spawn.c), each
 * rule a message type, the phases it may come in and its handler, as
 * OpenSSH's monitor keeps for its unprivileged child. Checking a message
 * against a table and calling its handler is here, pure but for the
 * handler, so the unit tests walk every case.
 */
#include <stddef.h>

#include "broker.h"
#include "msg.h"

static const struct rf_says *rule_of(const struct rf_says *rules, size_t n, uint32_t type)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (rules[i].type == type)
			return &rules[i];
	return NULL;
}

static const char *refusal(const struct rf_says *rule, uint32_t seen, const char *none)
{
	if (!rule)
		return none;
	if ((rule->when & RF_SAYS_AFTER_HELLO) && !(seen & RF_MSG_BIT(RF_MSG_HELLO)))
		return "message before HELLO";
	if ((rule->when & RF_SAYS_BEFORE_READY) && (seen & RF_MSG_BIT(RF_MSG_READY)))
		return "message not allowed after READY";
	if ((rule->when & RF_SAYS_ONCE) && (seen & RF_MSG_BIT(rule->type)))
		return "message allowed only once";
	return NULL;
}

const char *rf_says_refusal(const struct rf_says *rules, size_t n, uint32_t type, uint32_t seen,
			    const char *none)
{
	return refusal(rule_of(rules, n, type), seen, none);
}

const char *rf_says_handle(const struct rf_says *rules, size_t n, struct rf_tenant *t,
			   const struct rf_msg *m, uint32_t *seen, bool dead, const char *none)
{
	const struct rf_says *rule = rule_of(rules, n, m->hdr.type);
	const char *why;

	if (dead && !(rule && (rule->when & RF_SAYS_DEAD_TOO)))
		return NULL; /* nothing else of a dead process's matters */
	why = refusal(rule, *seen, none);
	if (why)
		return why;
	*seen |= RF_MSG_BIT(m->hdr.type);
	rule->handle(t, m);
	return NULL;
}
