// SPDX-License-Identifier: MIT
/*
 * Per-tenant resource limits through cgroups: v2 where the unified
 * hierarchy has the controllers, v1 memory/pids/cpu hierarchies where not.
 * Each tenant gets ringfence/<name> in every hierarchy it uses; the worker
 * joins before it execs (child_join, async-signal-safe) and the group is
 * removed once the worker is reaped.
 *
 * On v2 the groups go below the broker's own cgroup when that cgroup is
 * the broker's alone (a systemd service with Delegate=yes, the root of a
 * container's cgroup namespace with the broker as its only process): v2
 * lets a cgroup other than the host's root that hands controllers to its
 * children hold no process, so the broker first moves itself into a leaf,
 * <own>/broker. (The host's root always holds other processes.)
 * Where the broker shares its cgroup (started from a login shell), they go
 * below the hierarchy's root, which may hold processes.
 *
 * Every tenant gets a cpu group (weight 100 unless the policy says), and in
 * it the worker runs SCHED_IDLE (policy sched_idle). The kernel queues a
 * FUSE request on the queue of the client's CPU and the queue thread
 * answers on that CPU, so when the answer wakes the client, the queue
 * thread is still running there; a waking task goes to an idle CPU rather
 * than a busy one, and a CPU running only SCHED_IDLE tasks counts as idle.
 * With a normal policy the client moves to the other CPU at nearly every
 * answer, and each move costs both sides a cross-CPU wake-up (tens of
 * microseconds in a VM); with SCHED_IDLE it stays (docs/performance.md has
 * the measurements). SCHED_IDLE alone would give the worker almost no CPU
 * against busy normal tasks; inside a group of its own it gets the group's
 * share, as its siblings there are its own threads. Without a cpu group
 * the worker keeps the normal policy.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"

/* Where the hierarchies live, and where to read our own cgroup; tests
 * point both at a fake tree. */
static char cg_root[256] = "/sys/fs/cgroup";
static char self_file[256] = "/proc/self/cgroup";
/* v2: the cgroup (relative to cg_root, "" for the root) that holds
 * ringfence/, found once per broker */
static char v2_base[256];
static bool v2_found;

/* A controller the fake v2 tree of a test refuses to enable, as a real
 * one can refuse cpu */
static char refuse[16];

void rf_cgroup_test_refuse(const char *controller)
{
	snprintf(refuse, sizeof(refuse), controller ? "+%s " : "", controller);
}

void rf_cgroup_set_root(const char *root, const char *self)
{
	snprintf(cg_root, sizeof(cg_root), "%s", root);
	snprintf(self_file, sizeof(self_file), "%s", self);
	v2_found = false;
}

static const char *cgp(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s%s", cg_root, rel);
	return buf;
}
#define CGROUP2_SUPER_MAGIC 0x63677270

static int write_file(const char *path, const char *val)
{
	/* O_CREAT only matters in a test's fake tree: cgroupfs has the
	 * files already and refuses new ones */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;
	int r = 0;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		r = -errno;
	close(fd);
	return r;
}

static int is_cgroup2(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* Whether @c is a word of @list (a cgroup.controllers line). */
static bool has_controller(const char *list, const char *c)
{
	size_t n = strlen(c), l;
	const char *p;

	for (p = list + strspn(list, " \n"); *p; p += l, p += strspn(p, " \n")) {
		l = strcspn(p, " \n");
		if (l == n && !strncmp(p, c, n))
			return true;
	}
	return false;
}

static int make_dir(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Whether the cgroup @dir holds no process but this one. */
static bool ours_alone(const char *dir)
{
	char path[1400], buf[4096], *p, *save = NULL;
	long self = (long)getpid();
	ssize_t n;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0 || (size_t)n >= sizeof(buf) - 1)
		return false; /* unreadable, or too many to be ours alone */
	for (p = strtok_r(buf, "\n", &save); p; p = strtok_r(NULL, "\n", &save))
		if (strtol(p, NULL, 10) != self)
			return false;
	return true;
}

/* Find v2_base (see the top of this file). */
static int find_v2_base(void)
{
	char buf[1024], dir[1300], *line, *save = NULL, *own = NULL;
	int r;

	if (v2_found)
		return 0;
	if (read_file(self_file, buf, sizeof(buf)) > 0)
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (!strncmp(line, "0::", 3))
				own = line + 3;
	v2_base[0] = '\0';
	if (own && !strcmp(own, "/"))
		own = ""; /* the root, or a container's: alone only in the second */
	if (own && strlen(own) < sizeof(v2_base) - 16) {
		snprintf(dir, sizeof(dir), "%s%s", cg_root, own);
		if (ours_alone(dir)) {
			snprintf(dir, sizeof(dir), "%s%s/broker", cg_root, own);
			r = make_dir(dir);
			if (r == 0) {
				strcat(dir, "/cgroup.procs");
				r = write_file(dir, "0");
			}
			if (r < 0) {
				log_warnx("cgroup2: cannot move the broker into %s%s/broker: %s",
					  cg_root, own, strerror(-r));
				return r;
			}
			snprintf(v2_base, sizeof(v2_base), "%s", own);
			log_info("cgroup2: tenants' groups go below %s%s/ringfence; the broker "
				 "moved into %s%s/broker",
				 cg_root, own, cg_root, own);
		} else if (*own) {
			log_info("cgroup2: the broker shares %s%s with other processes, so "
				 "tenants' groups go below %s/ringfence",
				 cg_root, own, cg_root);
		}
	}
	v2_found = true;
	return 0;
}

/*
 * A tenant's group that already holds processes was left by a broker that
 * died: whatever runs there is a worker of that broker, and it goes before
 * the tenant is mounted again. Each PID in cgroup.procs gets SIGKILL (and
 * v2's cgroup.kill, Linux 5.14+, takes the whole group at once) until the
 * group is empty or RF_CG_EVICT_MS have passed.
 */
#define RF_CG_EVICT_MS 3000

static void evict(const struct rf_tenant *t, const char *dir)
{
	char path[1400], buf[4096], *p, *save;
	bool told = false;
	int ms, live;

	for (ms = 0; ms <= RF_CG_EVICT_MS; ms += 10) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
		if (read_file(path, buf, sizeof(buf)) <= 0)
			return; /* empty, or no such file */
		live = 0;
		save = NULL;
		for (p = strtok_r(buf, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
			long pid = strtol(p, NULL, 10);

			/* never ourselves, init, or a process group; and only
			 * what exists (a test's fake tree holds any text) */
			if (pid > 1 && pid != (long)getpid() && kill((pid_t)pid, 0) == 0) {
				live++;
				kill((pid_t)pid, SIGKILL);
			}
		}
		if (!live)
			return;
		if (!told) {
			log_warnx("%s: %s still holds processes of a previous broker; killing them",
				  t->pol.name, dir);
			told = true;
			/* v2 kills the whole group at once, forks in flight too */
			snprintf(path, sizeof(path), "%s/cgroup.kill", dir);
			if (access(path, F_OK) == 0)
				write_file(path, "1");
		}
		usleep(10000);
	}
	log_warnx("%s: %s still holds processes after %d ms", t->pol.name, dir, RF_CG_EVICT_MS);
}

/* Add one hierarchy's group to the tenant's list. */
static int add_group(struct rf_tenant *t, const char *base)
{
	struct rf_cgroup *cg = &t->cg;
	int n, r;

	if (cg->ngroups >= RF_CG_MAX)
		return -ENOSPC;
	n = snprintf(cg->dir[cg->ngroups], sizeof(cg->dir[0]), "%s/ringfence", base);
	if (n < 0 || (size_t)n >= sizeof(cg->dir[0]))
		return -ENAMETOOLONG;
	r = make_dir(cg->dir[cg->ngroups]);
	if (r < 0)
		return r;
	n = snprintf(cg->dir[cg->ngroups], sizeof(cg->dir[0]), "%s/ringfence/%s", base,
		     t->pol.name);
	if (n < 0 || (size_t)n >= sizeof(cg->dir[0]))
		return -ENAMETOOLONG;
	r = make_dir(cg->dir[cg->ngroups]);
	if (r < 0)
		return r;
	evict(t, cg->dir[cg->ngroups]);
	cg->ngroups++;
	return 0;
}

static int set(struct rf_tenant *t, int group, const char *file, unsigned long long v)
{
	char path[512], val[32];

	snprintf(path, sizeof(path), "%s/%s", t->cg.dir[group], file);
	snprintf(val, sizeof(val), "%llu", v);
	return write_file(path, val);
}

uint32_t rf_cgroup_pids_max(const struct rf_tenant *t)
{
	if (t->pol.pids_max)
		return t->pol.pids_max;
	/* a thread per queue in each of the worker's two processes */
	return RF_DEFAULT_PIDS_SPARE + 2 * (t->b ? t->b->nqueues : 1);
}

uint32_t rf_cgroup_nproc(const struct rf_tenant *t)
{
	return t->cg.pids ? 0 : rf_cgroup_pids_max(t);
}

/*
 * The limits a tenant gets, one per controller. A limit the policy sets is
 * required: enforced, or the tenant does not start. A default (memory_max
 * and pids_max when the policy is silent) is applied where a controller can
 * enforce it and left to the rlimits where none can.
 */
enum {
	L_MEMORY,
	L_PIDS,
	L_CPU,
	L_N
};

struct limit {
	const char *controller;
	unsigned long long value; /* 0: none */
	bool required;
};

static void limits_of(const struct rf_tenant *t, struct limit l[L_N])
{
	const struct rf_mount_policy *p = &t->pol;

	l[L_MEMORY] = (struct limit){ "memory",
				      p->memory_max ? p->memory_max : RF_DEFAULT_MEMORY_MAX,
				      p->memory_max != 0 };
	l[L_PIDS] = (struct limit){ "pids", rf_cgroup_pids_max(t), p->pids_max != 0 };
	l[L_CPU] = (struct limit){ "cpu", p->cpu_weight ? p->cpu_weight : RF_DEFAULT_CPU_WEIGHT,
				   p->cpu_weight != 0 || p->sched_idle == RF_FEATURE_ON };
}

/* A controller is not to be had: fatal for a limit the policy set. */
static int missing(struct rf_tenant *t, struct limit *l)
{
	if (l->required) {
		log_warnx("%s: the policy sets a %s limit, but no %s cgroup controller is "
			  "available",
			  t->pol.name, l->controller, l->controller);
		return -EOPNOTSUPP;
	}
	if (l->value)
		log_info("%s: no %s cgroup controller for the default limit; %s", t->pol.name,
			 l->controller,
			 !strcmp(l->controller, "pids")	 ? "RLIMIT_NPROC of the worker holds it"
			 : !strcmp(l->controller, "cpu") ? "the worker runs at normal priority"
							 : "only RLIMIT_DATA applies");
	l->value = 0;
	return 0;
}

static void name_mechanism(struct rf_tenant *t, int version, const struct limit l[L_N])
{
	size_t n;
	int i;

	n = (size_t)snprintf(t->cg.mechanism, sizeof(t->cg.mechanism), "cgroup%d(", version);
	for (i = 0; i < L_N; i++)
		if (l[i].value)
			n += (size_t)snprintf(t->cg.mechanism + n, sizeof(t->cg.mechanism) - n,
					      "%s,", l[i].controller);
	t->cg.mechanism[n - 1] = ')';
	t->cg.pids = l[L_PIDS].value != 0;
	t->cg.sched_idle = l[L_CPU].value != 0 && t->pol.sched_idle != RF_FEATURE_OFF;
}

/* The "+memory +pids ..." line that enables @l's controllers below a v2
 * group. */
static void v2_controllers(const struct limit l[L_N], char *ctl, size_t len)
{
	size_t n = 0;
	int i;

	ctl[0] = '\0';
	for (i = 0; i < L_N; i++)
		if (l[i].value)
			n += (size_t)snprintf(ctl + n, len - n, "+%s ", l[i].controller);
}

/* Enable @ctl on the way down from @base to ringfence/'s children. */
static int v2_enable(const char *base, const char *ctl)
{
	char path[700];
	int r;

	if (refuse[0] && strstr(ctl, refuse))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", base);
	r = write_file(path, ctl);
	if (r == -EBUSY)
		log_warnx("cgroup2: %s holds processes, so it cannot hand controllers "
			  "to groups below it; run the broker in a cgroup of its own",
			  base);
	if (r == 0) {
		snprintf(path, sizeof(path), "%s/ringfence/cgroup.subtree_control", base);
		r = write_file(path, ctl);
	}
	return r;
}

static int setup_v2(struct rf_tenant *t, struct limit l[L_N])
{
	static const char *const file[L_N] = { "memory.max", "pids.max", "cpu.weight" };
	char ctl[64], avail[512], base[600], path[700];
	int r, i;

	r = find_v2_base();
	if (r < 0)
		return r;
	snprintf(base, sizeof(base), "%s%s", cg_root, v2_base);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", base);
	if (read_file(path, avail, sizeof(avail)) < 0)
		avail[0] = '\0'; /* none to be had here */
	for (i = 0; i < L_N; i++) {
		if (!l[i].value)
			continue;
		if (!has_controller(avail, l[i].controller)) {
			r = missing(t, &l[i]);
			if (r < 0)
				return r;
		}
	}
	v2_controllers(l, ctl, sizeof(ctl));
	if (!ctl[0])
		return 1; /* nothing a controller here can enforce */
	r = add_group(t, base);
	if (r < 0)
		return r;
	r = v2_enable(base, ctl);
	if (r < 0 && r != -EBUSY && l[L_CPU].value && !l[L_CPU].required) {
		/* the cpu controller can be refused where the others are
		 * not (real-time tasks in groups): not for a default */
		log_info("%s: cgroup2 refused the cpu controller (%s); the worker runs at "
			 "normal priority",
			 t->pol.name, strerror(-r));
		l[L_CPU].value = 0;
		v2_controllers(l, ctl, sizeof(ctl));
		r = v2_enable(base, ctl);
	}
	if (r < 0)
		return r;
	for (i = 0; i < L_N; i++)
		if (l[i].value && (r = set(t, 0, file[i], l[i].value)) < 0)
			return r;
	if (l[L_MEMORY].value)
		set(t, 0, "memory.swap.max", 0); /* absent without swap accounting */
	name_mechanism(t, 2, l);
	return 0;
}

static int setup_v1(struct rf_tenant *t, struct limit l[L_N])
{
	/* the file that shows the hierarchy is there, and the one to set */
	static const char *const probe[L_N] = { "/memory/memory.limit_in_bytes", "/pids/tasks",
						"/cpu/cpu.shares" };
	static const char *const file[L_N] = { "memory.limit_in_bytes", "pids.max", "cpu.shares" };
	char path[300];
	int r, i, any = 0;

	for (i = 0; i < L_N; i++) {
		unsigned long long v = l[i].value;

		if (!v)
			continue;
		if (access(cgp(path, sizeof(path), probe[i]), F_OK)) {
			r = missing(t, &l[i]);
			if (r < 0)
				return r;
			continue;
		}
		if (i == L_CPU) /* v2 weight 100 is v1 shares 1024 */
			v = v * 1024 / 100 < 2 ? 2 : v * 1024 / 100;
		snprintf(path, sizeof(path), "%s/%s", cg_root, l[i].controller);
		r = add_group(t, path);
		if (r < 0 || (r = set(t, t->cg.ngroups - 1, file[i], v)) < 0)
			return r;
		any = 1;
	}
	if (!any)
		return 1;
	name_mechanism(t, 1, l);
	return 0;
}

int rf_cgroup_setup(struct rf_tenant *t)
{
	return rf_cgroup_setup_version(t, is_cgroup2(cg_root) ? 2 : 1);
}

int rf_cgroup_setup_version(struct rf_tenant *t, int version)
{
	struct limit l[L_N];
	int r, i;

	memset(&t->cg, 0, sizeof(t->cg));
	limits_of(t, l);
	r = version == 2 ? setup_v2(t, l) : setup_v1(t, l);
	if (r < 0) {
		rf_cgroup_remove(t);
		snprintf(t->cg.mechanism, sizeof(t->cg.mechanism), "rlimits");
		for (i = 0; i < L_N && !l[i].required; i++)
			;
		log_warnx("%s: cannot apply %s through cgroups: %s", t->pol.name,
			  i < L_N ? "the policy's limits" : "the default limits", strerror(-r));
		/* the defaults fall back to the rlimits; a limit asked for does not */
		return i < L_N ? r : 0;
	}
	if (r > 0) {
		snprintf(t->cg.mechanism, sizeof(t->cg.mechanism), "rlimits");
		return 0;
	}
	/* each group's cgroup.procs, for the child to join before exec */
	for (i = 0; i < t->cg.ngroups; i++)
		snprintf(t->cg.procs[i], sizeof(t->cg.procs[i]), "%s/cgroup.procs", t->cg.dir[i]);
	log_info("%s: limits through %s", t->pol.name, t->cg.mechanism);
	return 0;
}

int rf_cgroup_child_join(const struct rf_cgroup *cg)
{
	int i;

	for (i = 0; i < cg->ngroups; i++) {
		int fd = open(cg->procs[i], O_WRONLY | O_CLOEXEC);

		if (fd < 0)
			return -1;
		/* "0": the writing process itself */
		if (write(fd, "0", 1) != 1) {
			close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

void rf_cgroup_remove(struct rf_tenant *t)
{
	int i;

	for (i = t->cg.ngroups; i-- > 0;) {
		char *slash;

		if (rmdir(t->cg.dir[i]) < 0 && errno != ENOENT)
			log_warn("%s: remove cgroup %s", t->pol.name, t->cg.dir[i]);
		/* and ringfence/ itself once no tenant is left in it */
		slash = strrchr(t->cg.dir[i], '/');
		if (slash) {
			*slash = '\0';
			rmdir(t->cg.dir[i]);
		}
	}
	t->cg.ngroups = 0;
}
