// SPDX-License-Identifier: MIT
/*
 * A tenant's states and the steps between them. Every change of
 * t->state goes through rf_tenant_enter, which checks the step against
 * this table: a step the table lacks is a bug of the broker's, logged as
 * one (and taken: the tenant's bookkeeping is no reason to stop serving).
 * check_state walks every pair.
 */
#include "broker.h"
#include "log.h"

#define B(s) (1U << RF_TENANT_##s)

static const struct {
	const char *name;
	enum rf_tenant_state shown;
	uint32_t next; /* the states it may step to */
} states[RF_TENANT_NSTATES] = {
	[RF_TENANT_STOPPED] = { "stopped", RF_TENANT_STOPPED, B(STARTING) | B(FAILED) },
	/* a start that fails, and every way a worker can end */
	[RF_TENANT_STARTING] = { "starting", RF_TENANT_STARTING,
				 B(RUNNING) | B(FAILED) | B(RESPAWN_DUE) | B(RESPONDER_STARTING) |
					 B(STOPPING) },
	[RF_TENANT_RUNNING] = { "running", RF_TENANT_RUNNING,
				B(RESPAWN_DUE) | B(RESPONDER_STARTING) | B(FAILED) | B(STOPPING) |
					B(HOST_DUE) | B(HOST_LOOP) | B(UPG_KILLED) },
	/* restart; unmount */
	[RF_TENANT_FAILED] = { "failed", RF_TENANT_FAILED, B(STARTING) | B(STOPPED) },
	[RF_TENANT_RESPONDING] = { "responding", RF_TENANT_FAILED, B(FAILED) | B(STOPPING) },
	[RF_TENANT_RESPONDER_STARTING] = { "responder starting", RF_TENANT_STARTING,
					   B(RESPONDING) | B(FAILED) | B(STOPPING) },
	/* a second report of one death plans again */
	[RF_TENANT_RESPAWN_DUE] = { "respawn due", RF_TENANT_STARTING,
				    B(STARTING) | B(RESPAWN_DUE) | B(RESPONDER_STARTING) |
					    B(FAILED) | B(STOPPING) },
	/* the worker itself may die meanwhile */
	[RF_TENANT_HOST_DUE] = { "host due", RF_TENANT_STARTING,
				 B(HOST_STARTING) | B(RESPAWN_DUE) | B(RESPONDER_STARTING) |
					 B(FAILED) | B(STOPPING) },
	[RF_TENANT_HOST_STARTING] = { "host starting", RF_TENANT_STARTING,
				      B(RUNNING) | B(HOST_DUE) | B(HOST_LOOP) | B(RESPAWN_DUE) |
					      B(RESPONDER_STARTING) | B(FAILED) | B(STOPPING) },
	[RF_TENANT_HOST_LOOP] = { "host loop", RF_TENANT_STARTING,
				  B(RESPAWN_DUE) | B(RESPONDER_STARTING) | B(FAILED) |
					  B(STOPPING) },
	/* an upgrade abandoned steps back to where its processes are: the
	 * old one serving, or a worker or plugin host starting */
	[RF_TENANT_UPG_KILLED] = { "upgrade: old ends", RF_TENANT_RUNNING,
				   B(UPG_TRIAL) | B(RUNNING) },
	[RF_TENANT_UPG_TRIAL] = { "upgrade: trial", RF_TENANT_STARTING,
				  B(RUNNING) | B(UPG_ROLLBACK) | B(STARTING) | B(HOST_STARTING) },
	[RF_TENANT_UPG_ROLLBACK] = { "upgrade: rollback", RF_TENANT_STARTING,
				     B(RUNNING) | B(STARTING) | B(HOST_STARTING) },
	[RF_TENANT_STOPPING] = { "stopping", RF_TENANT_STOPPED, B(STOPPED) | B(FAILED) },
};

static bool valid(enum rf_tenant_state s)
{
	return (unsigned int)s < RF_TENANT_NSTATES;
}

const char *rf_tenant_state_name(enum rf_tenant_state s)
{
	return valid(s) ? states[s].name : "?";
}

enum rf_tenant_state rf_tenant_state_shown(enum rf_tenant_state s)
{
	return valid(s) ? states[s].shown : RF_TENANT_FAILED;
}

bool rf_tenant_state_may(enum rf_tenant_state from, enum rf_tenant_state to)
{
	return valid(from) && valid(to) && (from == to || (states[from].next & (1U << to)));
}

void rf_tenant_enter(struct rf_tenant *t, enum rf_tenant_state s)
{
	if (t->state == s)
		return;
	if (!rf_tenant_state_may(t->state, s))
		log_warnx("%s: broker bug: the step from %s to %s is not one a tenant takes",
			  t->pol.name, rf_tenant_state_name(t->state), rf_tenant_state_name(s));
	else
		log_debug("%s: %s -> %s", t->pol.name, rf_tenant_state_name(t->state),
			  rf_tenant_state_name(s));
	t->state = s;
}

bool rf_tenant_ending(const struct rf_tenant *t)
{
	return t->state == RF_TENANT_STOPPING || t->state == RF_TENANT_STOPPED ||
	       t->state == RF_TENANT_FAILED;
}

bool rf_tenant_upgrading(const struct rf_tenant *t)
{
	return t->state == RF_TENANT_UPG_KILLED || t->state == RF_TENANT_UPG_TRIAL ||
	       t->state == RF_TENANT_UPG_ROLLBACK;
}

bool rf_tenant_responder(const struct rf_tenant *t)
{
	return t->state == RF_TENANT_RESPONDER_STARTING || t->state == RF_TENANT_RESPONDING;
}

bool rf_tenant_settled(enum rf_tenant_state s)
{
	return s == RF_TENANT_STOPPED || s == RF_TENANT_RUNNING || s == RF_TENANT_RESPONDING ||
	       s == RF_TENANT_FAILED;
}
