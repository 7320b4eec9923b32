// SPDX-License-Identifier: MIT
/*
 * Tenants: start, stop, restart, unmount, and applying a new policy file
 * (reload) without touching the tenants it leaves unchanged.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "log.h"

int rf_tenant_start(struct rf_tenant *t)
{
	int r;

	rf_tenant_enter(t, RF_TENANT_STARTING);
	t->fail_reason[0] = '\0';
	t->generation = 0;
	t->crashes = 0;
	memset(t->deaths, 0, sizeof(t->deaths));
	r = rf_users_resolve(t);
	if (r < 0)
		goto fail;
	r = rf_quota_setup(t);
	if (r < 0)
		goto fail;
	/* a limit the policy asks for is enforced or the tenant does not start */
	r = rf_cgroup_setup(t);
	if (r < 0)
		goto fail;
	r = rf_mount_attach(t);
	if (r < 0)
		goto cgroup;
	r = rf_pool_create(t);
	if (r < 0)
		goto unmount;
	r = rf_worker_spawn(t);
	if (r < 0)
		goto pool;
	return 0;
pool:
	rf_pool_destroy(t);
unmount:
	rf_mount_detach(t);
cgroup:
	rf_cgroup_remove(t);
fail:
	rf_tenant_enter(t, RF_TENANT_FAILED);
	if (!t->fail_reason[0])
		snprintf(t->fail_reason, sizeof(t->fail_reason), "start-up failed: %s",
			 t->conn.why[0] && r == -EOPNOTSUPP ? t->conn.why : strerror(-r));
	return r;
}

void rf_tenant_stop(struct rf_tenant *t)
{
	/* a failed tenant (the responder's too) stays failed, with its reason */
	bool failed = rf_tenant_state_shown(t->state) == RF_TENANT_FAILED;

	rf_upgrade_abandon(t, "the tenant was stopped");
	rf_respawn_cancel(t);
	rf_worker_stop(t);
	rf_mount_detach(t);
	rf_pool_destroy(t);
	rf_cgroup_remove(t);
	rf_tenant_enter(t, failed ? RF_TENANT_FAILED : RF_TENANT_STOPPED);
}

void rf_tenant_check_alive(struct rf_broker *b)
{
	size_t i;

	/* only when every tenant has failed and none is even answering EIO:
	 * one stopped on purpose (umount) is the operator's choice and keeps
	 * the broker up */
	for (i = 0; i < b->ntenants; i++)
		if (b->tenants[i]->state != RF_TENANT_FAILED || b->tenants[i]->worker_pid > 0 ||
		    b->tenants[i]->respawn_ev)
			return;
	log_warnx("every tenant has failed; exiting");
	b->exit_status = 1;
	event_base_loopbreak(b->base);
}

struct rf_tenant *rf_tenant_find(struct rf_broker *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->ntenants; i++)
		if (!strcmp(b->tenants[i]->pol.name, name))
			return b->tenants[i];
	return NULL;
}

/* The lowest pool slot (fixed address) no live tenant uses. */
static unsigned int free_index(const struct rf_broker *b)
{
	unsigned int idx;
	size_t i;

	for (idx = 0;; idx++) {
		for (i = 0; i < b->ntenants; i++)
			if (b->tenants[i]->index == idx)
				break;
		if (i == b->ntenants)
			return idx;
	}
}

struct rf_tenant *rf_tenant_add(struct rf_broker *b, const struct rf_mount_policy *pol)
{
	struct rf_tenant **nt, *t;

	t = calloc(1, sizeof(*t));
	nt = realloc(b->tenants, (b->ntenants + 1) * sizeof(*nt));
	if (!t || !nt) {
		free(t);
		if (nt)
			b->tenants = nt;
		return NULL;
	}
	b->tenants = nt;
	t->b = b;
	t->pol = *pol;
	t->index = free_index(b);
	t->fuse_fd = t->pool_fd = t->state_fd = t->ipc_fd = t->host_ipc_fd = -1;
	b->tenants[b->ntenants++] = t;
	return t;
}

void rf_tenant_remove(struct rf_tenant *t)
{
	struct rf_broker *b = t->b;
	size_t i;

	rf_tenant_stop(t);
	for (i = 0; i < b->ntenants; i++)
		if (b->tenants[i] == t) {
			memmove(&b->tenants[i], &b->tenants[i + 1],
				(b->ntenants - i - 1) * sizeof(*b->tenants));
			b->ntenants--;
			break;
		}
	free(t->kicks);
	free(t);
}

void rf_tenant_give_up(struct rf_tenant *t)
{
	log_warnx("%s: aborting the connection and detaching %s", t->pol.name, t->pol.mountpoint);
	rf_upgrade_abandon(t, "the tenant was given up");
	rf_tenant_enter(t, RF_TENANT_FAILED);
	rf_mount_abort(t);
	rf_mount_detach(t);
	rf_pool_destroy(t);
	rf_cgroup_remove(t);
	rf_tenant_check_alive(t->b);
}

int rf_tenant_restart(struct rf_tenant *t)
{
	rf_tenant_stop(t);
	t->restarts++;
	return rf_tenant_start(t);
}

int rf_tenant_reload(struct rf_broker *b, char *msg, size_t len)
{
	size_t added = 0, removed = 0, restarted = 0, same = 0, i, j;
	struct rf_policy *np, *old;
	char err[8192];
	int r;

	rf_notify("RELOADING=1");
	r = rf_config_load(b->config, &np, err, sizeof(err));
	if (r < 0) {
		snprintf(msg, len, "error: %s unchanged; the new file has errors:\n%s", b->config,
			 err);
		log_warnx("reload: %s has errors; nothing changed", b->config);
		rf_notify("READY=1");
		return r;
	}
	old = b->policy;
	/* gone first, so that a mountpoint can move to a new tenant */
	for (i = b->ntenants; i-- > 0;) {
		struct rf_tenant *t = b->tenants[i];

		for (j = 0; j < np->nmounts; j++)
			if (!strcmp(np->mounts[j].name, t->pol.name))
				break;
		if (j == np->nmounts) {
			log_info("reload: %s removed", t->pol.name);
			rf_tenant_remove(t);
			removed++;
		}
	}
	for (j = 0; j < np->nmounts; j++) {
		struct rf_tenant *t = rf_tenant_find(b, np->mounts[j].name);

		if (t && !rf_config_changed(b->policy, &t->pol, np, &np->mounts[j])) {
			t->pol.line = np->mounts[j].line;
			same++;
			continue;
		}
		if (t) {
			log_info("reload: %s changed; restarting it", t->pol.name);
			rf_tenant_stop(t);
			b->policy = np; /* the new globals apply to the restart */
			t->pol = np->mounts[j];
			rf_tenant_start(t);
			b->policy = old;
			restarted++;
			continue;
		}
		t = rf_tenant_add(b, &np->mounts[j]);
		if (!t) {
			log_warnx("reload: %s: out of memory", np->mounts[j].name);
			continue;
		}
		log_info("reload: %s added", t->pol.name);
		b->policy = np;
		rf_tenant_start(t);
		b->policy = old;
		added++;
	}
	b->policy = np;
	rf_policy_free(old);
	snprintf(msg, len, "reloaded %s: %zu added, %zu removed, %zu restarted, %zu unchanged\n",
		 b->config, added, removed, restarted, same);
	log_info("%.*s", (int)strcspn(msg, "\n"), msg);
	rf_notify("READY=1");
	return 0;
}

/* A worker's life, as the worker layer (spawn.c, recovery.c) tells it. */
static void worker_ready(struct rf_tenant *t, bool host_only)
{
	/* a new worker's queues may hold requests that came while none
	 * served; a new plugin host's keeper served on */
	if (!host_only && t->generation > 0)
		rf_recovery_kick(t);
	rf_upgrade_ready(t);
}

static void worker_died(struct rf_tenant *t, bool conn_gone)
{
	if (!rf_recovery_plan(t, conn_gone))
		rf_tenant_give_up(t);
}

const struct rf_worker_events rf_tenant_events = {
	.ready = worker_ready,
	.upgrade_host_died = rf_upgrade_host_died,
	.upgrade_reaped = rf_upgrade_reaped,
	.died = worker_died,
	.lost = rf_tenant_give_up,
};
