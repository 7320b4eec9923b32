// SPDX-License-Identifier: MIT
/*
 * ringfencectl upgrade TENANT [PLUGIN]: a new worker generation, of a new
 * plugin file if named, through the hand-over a worker's death takes (the
 * restore tables, adoption, rescue), with one difference: the new
 * generation restores strictly. A node id or open file its plugin cannot
 * restore, or a load or init that fails, ends it before it serves and
 * before it changes the tables; the old plugin then starts again (the
 * rollback) and restores them, and the waiting control peer is told why.
 * Neither worker's end counts as a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"
#include "msg.h"

static void restored(const struct rf_tenant *t, uint64_t *nodes, uint64_t *files)
{
	uint32_t q;

	*nodes = *files = 0;
	for (q = 0; t->pool && q < t->geom.nqueues; q++) {
		const volatile struct rf_queue_stats *s = rf_pool_stats(t->pool, q);

		*nodes += s->restored_nodes;
		*files += s->restored_files;
	}
}

int rf_upgrade_start(struct rf_tenant *t, const char *plugin, char *why, size_t len)
{
	struct rf_mount_policy probe = t->pol;
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (rf_tenant_upgrading(t)) {
		snprintf(why, len, "%s: an upgrade is under way", t->pol.name);
		return -EBUSY;
	}
	if (t->state != RF_TENANT_RUNNING || t->worker_pid <= 0) {
		snprintf(why, len, "%s is not running (%s)", t->pol.name,
			 rf_tenant_state_name(rf_tenant_state_shown(t->state)));
		return -EAGAIN;
	}
	if (t->pol.program[0]) {
		snprintf(why, len,
			 "%s runs a program, which keeps its node ids in its own memory: a "
			 "new one cannot take its clients' files over; use restart",
			 t->pol.name);
		return -EINVAL;
	}
	if (!t->pol.restore_nodes) {
		snprintf(why, len,
			 "%s has no restore_nodes: its clients would lose their open files; "
			 "set restore_nodes in its policy, or use restart",
			 t->pol.name);
		return -EINVAL;
	}
	if (plugin) {
		if (!plugin[0] || strlen(plugin) >= sizeof(probe.plugin) ||
		    (plugin[0] != '/' && strchr(plugin, '/'))) {
			snprintf(why, len, "plugin '%.200s': a name or an absolute path", plugin);
			return -EINVAL;
		}
		snprintf(probe.plugin, sizeof(probe.plugin), "%s", plugin);
	}
	if (rf_policy_plugin_path(t->b->policy, &probe, path, sizeof(path)) < 0) {
		snprintf(why, len, "plugin '%.200s': path too long", probe.plugin);
		return -ENAMETOOLONG;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int err = fd < 0 ? errno : EINVAL;

		if (fd >= 0)
			close(fd);
		snprintf(why, len, "plugin %.300s: %s", path,
			 err == EINVAL ? "not a regular file" : strerror(err));
		return -err;
	}
	close(fd);
	snprintf(t->upg_old, sizeof(t->upg_old), "%s", t->pol.plugin);
	snprintf(t->pol.plugin, sizeof(t->pol.plugin), "%s", probe.plugin);
	t->upg_why[0] = '\0';
	restored(t, &t->upg_nodes0, &t->upg_files0);
	rf_tenant_enter(t, RF_TENANT_UPG_KILLED);
	/* with host_restart, the plugin host alone makes way: the keeper and
	 * its rings hold what comes meanwhile */
	t->upg_host = t->pol.host_restart;
	log_info("%s: upgrade: %s %d makes way for %s", t->pol.name,
		 t->upg_host ? "the plugin host of worker" : "worker", (int)t->worker_pid, path);
	if (t->upg_host && rf_msg_send(t->ipc_fd, RF_MSG_HOST_REPLACE, 0, NULL, 0, NULL, 0) == 0)
		return 0;
	t->upg_host = false;
	rf_worker_sigkill(t);
	return 0;
}

/* the next generation, at once, in the upgrade's state @s */
static int next(struct rf_tenant *t, enum rf_tenant_state s)
{
	rf_respawn_cancel(t);
	rf_tenant_enter(t, s);
	t->upg_host = false; /* a whole worker from here */
	t->generation++;
	t->fail_reason[0] = '\0';
	log_info("%s: starting worker generation %u (%s)", t->pol.name, t->generation,
		 s == RF_TENANT_UPG_TRIAL ? "the upgrade" : "rolled back");
	return rf_worker_spawn(t);
}

/* the new plugin did not take over: the old one's turn */
static void swap_back(struct rf_tenant *t)
{
	char tried[sizeof(t->upg_old)];

	snprintf(t->upg_why, sizeof(t->upg_why), "%.500s",
		 t->fail_reason[0] ? t->fail_reason : "it ended before serving");
	log_warnx("%s: upgrade to %s failed (%s); rolling back to %s", t->pol.name, t->pol.plugin,
		  t->upg_why, t->upg_old);
	/* the two swap: upg_old names the one that failed from now on */
	snprintf(tried, sizeof(tried), "%s", t->pol.plugin);
	snprintf(t->pol.plugin, sizeof(t->pol.plugin), "%s", t->upg_old);
	snprintf(t->upg_old, sizeof(t->upg_old), "%s", tried);
}

static void rollback(struct rf_tenant *t)
{
	swap_back(t);
	if (next(t, RF_TENANT_UPG_ROLLBACK) < 0) {
		/* no worker, and none to come */
		rf_upgrade_abandon(t, "the old plugin's worker could not be started");
		t->b->events->lost(t);
	}
}

static void host_rollback(struct rf_tenant *t)
{
	swap_back(t);
	rf_tenant_enter(t, RF_TENANT_UPG_ROLLBACK);
	if (rf_host_start(t, true) < 0) {
		rf_upgrade_abandon(t, "the old plugin's host could not be started");
		rf_worker_kill(t, "no plugin host could be started");
	}
}

bool rf_upgrade_host_died(struct rf_tenant *t)
{
	if (!t->upg_host)
		return false;
	switch (t->state) {
	case RF_TENANT_UPG_KILLED:
		rf_tenant_enter(t, RF_TENANT_UPG_TRIAL);
		if (rf_host_start(t, true) < 0)
			host_rollback(t);
		return true;
	case RF_TENANT_UPG_TRIAL:
		host_rollback(t);
		return true;
	case RF_TENANT_UPG_ROLLBACK:
		rf_upgrade_abandon(t, t->fail_reason[0]
					      ? t->fail_reason
					      : "the old plugin's host ended before serving");
		return false; /* a crash like any other from here */
	default:
		return false;
	}
}

bool rf_upgrade_reaped(struct rf_tenant *t)
{
	switch (t->state) {
	case RF_TENANT_UPG_KILLED:
		if (next(t, RF_TENANT_UPG_TRIAL) < 0)
			rollback(t);
		return true;
	case RF_TENANT_UPG_TRIAL:
		rollback(t);
		return true;
	case RF_TENANT_UPG_ROLLBACK:
		rf_upgrade_abandon(t, t->fail_reason[0]
					      ? t->fail_reason
					      : "the old plugin's worker ended before serving");
		return false; /* a crash like any other from here */
	default:
		return false;
	}
}

void rf_upgrade_ready(struct rf_tenant *t)
{
	uint64_t nodes, files;
	char msg[4096];

	enum rf_tenant_state s = t->state;

	if (s != RF_TENANT_UPG_TRIAL && s != RF_TENANT_UPG_ROLLBACK)
		return;
	restored(t, &nodes, &files);
	/* counters the workers wrote: shown, not trusted */
	nodes = nodes >= t->upg_nodes0 ? nodes - t->upg_nodes0 : 0;
	files = files >= t->upg_files0 ? files - t->upg_files0 : 0;
	if (s == RF_TENANT_UPG_TRIAL)
		snprintf(msg, sizeof(msg),
			 "%s upgraded to %.1000s (generation %u): %llu node ids and %llu open "
			 "files restored\n",
			 t->pol.name, t->pol.plugin, t->generation, (unsigned long long)nodes,
			 (unsigned long long)files);
	else
		snprintf(msg, sizeof(msg),
			 "error: %s: %.1000s did not take over: %s; rolled back to %.1000s "
			 "(generation %u), %llu node ids and %llu open files restored\n",
			 t->pol.name, t->upg_old, t->upg_why, t->pol.plugin, t->generation,
			 (unsigned long long)nodes, (unsigned long long)files);
	log_info("%s: %.*s", t->pol.name, (int)strcspn(msg, "\n"), msg);
	rf_tenant_enter(t, RF_TENANT_RUNNING);
	t->b->answer(t->b, &t->upg_conn, msg);
}

void rf_upgrade_abandon(struct rf_tenant *t, const char *why)
{
	char msg[2048];

	if (!rf_tenant_upgrading(t))
		return;
	snprintf(msg, sizeof(msg), "error: %s: upgrade abandoned: %.1500s\n", t->pol.name, why);
	log_warnx("%.*s", (int)strcspn(msg, "\n"), msg);
	/* back to where its processes are: the old one serving, or a worker
	 * or plugin host starting */
	rf_tenant_enter(t, t->state == RF_TENANT_UPG_KILLED ? RF_TENANT_RUNNING
			   : t->upg_host		    ? RF_TENANT_HOST_STARTING
							    : RF_TENANT_STARTING);
	t->b->answer(t->b, &t->upg_conn, msg);
}
