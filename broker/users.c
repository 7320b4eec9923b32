// SPDX-License-Identifier: MIT
/*
 * Who a tenant's worker runs as. A named user (the policy's `user`) is
 * looked up in the host's accounts; by default every tenant gets a
 * dynamic user instead, a uid and a gid of the same number from the
 * policy's user_range that no account, no subordinate id range
 * (/etc/subuid, /etc/subgid) and no other tenant has, so that no two
 * tenants, and no tenant and a client, share an identity.
 *
 * A dynamic user is stable: it starts at a hash of the tenant's name, and
 * once given it is kept in users_file ("NAME UID" lines), so that the
 * tenant's files keep their owner across restarts, reboots and changes to
 * the other tenants. It moves only if an account takes its uid meanwhile,
 * and the log says so.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"

struct entry {
	char name[RF_POLICY_NAME_MAX];
	uint32_t id;
};

struct users {
	struct entry *e;
	size_t n;
};

/* users_file as it is; a missing file is an empty one */
static int load(const char *path, struct users *u)
{
	char line[256], name[RF_POLICY_NAME_MAX];
	unsigned long id;
	FILE *f = fopen(path, "re");

	u->e = NULL;
	u->n = 0;
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		struct entry *ne;

		if (line[0] == '#' || sscanf(line, "%63s %lu", name, &id) != 2 || id > UINT32_MAX)
			continue;
		ne = realloc(u->e, (u->n + 1) * sizeof(*ne));
		if (!ne) {
			fclose(f);
			return -ENOMEM;
		}
		u->e = ne;
		snprintf(u->e[u->n].name, sizeof(u->e[u->n].name), "%s", name);
		u->e[u->n++].id = (uint32_t)id;
	}
	fclose(f);
	return 0;
}

static int save(const char *path, const struct users *u)
{
	char tmp[RF_POLICY_PATH_MAX + 8], dir[RF_POLICY_PATH_MAX], *slash;
	size_t i;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "# ringfenced: the dynamic user of each tenant (NAME UID; the gid is the "
		   "same). Files in a tenant's source belong to its uid: keep this file.\n");
	for (i = 0; i < u->n; i++)
		fprintf(f, "%s %u\n", u->e[i].name, u->e[i].id);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return -errno;
	return 0;
}

/* Whether @id lies in a range of /etc/subuid or /etc/subgid
 * ("NAME:FIRST:COUNT" lines), which user namespaces map. */
static bool subordinate(const char *file, uint32_t id)
{
	char line[512];
	bool in = false;
	FILE *f = fopen(file, "re");

	if (!f)
		return false;
	while (!in && fgets(line, sizeof(line), f)) {
		unsigned long long first, count;
		char *c = strchr(line, ':');

		if (c && sscanf(c, ":%llu:%llu", &first, &count) == 2 && id >= first &&
		    id - first < count)
			in = true;
	}
	fclose(f);
	return in;
}

/* Whether the host has an account or a group of @id, or maps it. */
static bool host_has(uint32_t id)
{
	return getpwuid((uid_t)id) || getgrgid((gid_t)id) || subordinate("/etc/subuid", id) ||
	       subordinate("/etc/subgid", id);
}

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261U; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619U;
	return h;
}

/* The id users_file records for @name, if it is still free to use
 * (in the range, not the host's), else the first free one from the hash
 * of @name, which no other tenant of @u has; 0 when none is left. */
static uint32_t pick(const struct rf_policy *p, const char *name, const struct users *u,
		     const struct entry **recorded)
{
	uint32_t lo = p->user_range[0], size = p->user_range[1] - p->user_range[0] + 1, i, id;
	const struct entry *mine = NULL;
	size_t j;

	for (j = 0; j < u->n; j++)
		if (!strcmp(u->e[j].name, name))
			mine = &u->e[j];
	*recorded = mine;
	if (mine && mine->id >= lo && mine->id - lo < size && !host_has(mine->id))
		return mine->id;
	for (i = 0; i < size; i++) {
		id = lo + (hash(name) + i) % size;
		for (j = 0; j < u->n; j++)
			if (u->e[j].id == id && &u->e[j] != mine)
				break;
		if (j == u->n && !host_has(id))
			return id;
	}
	return 0;
}

static int dynamic(struct rf_tenant *t)
{
	const struct rf_policy *p = t->b->policy;
	const struct entry *recorded;
	struct entry *mine;
	struct users u;
	uint32_t id;
	int r;

	r = load(p->users_file, &u);
	if (r < 0) {
		log_warnx("%s: read %s: %s", t->pol.name, p->users_file, strerror(-r));
		return r;
	}
	id = pick(p, t->pol.name, &u, &recorded);
	mine = recorded ? &u.e[recorded - u.e] : NULL;
	if (mine && mine->id == id) {
		t->uid = id;
		t->gid = id;
		free(u.e);
		return 0;
	}
	if (!id) {
		log_warnx("%s: no free id left in user_range %u-%u", t->pol.name, p->user_range[0],
			  p->user_range[1]);
		free(u.e);
		return -ENOSPC;
	}
	if (mine) {
		log_warnx("%s: its dynamic user %u now belongs to an account of the host (or a "
			  "subordinate id range); the tenant moves to %u, and its files keep "
			  "uid %u",
			  t->pol.name, mine->id, id, mine->id);
		mine->id = id;
	} else {
		struct entry *ne = realloc(u.e, (u.n + 1) * sizeof(*ne));

		if (!ne) {
			free(u.e);
			return -ENOMEM;
		}
		u.e = ne;
		snprintf(u.e[u.n].name, sizeof(u.e[u.n].name), "%s", t->pol.name);
		u.e[u.n++].id = id;
		log_info("%s: dynamic user %u (recorded in %s)", t->pol.name, id, p->users_file);
	}
	r = save(p->users_file, &u);
	free(u.e);
	if (r < 0) {
		log_warnx("%s: write %s: %s", t->pol.name, p->users_file, strerror(-r));
		return r;
	}
	t->uid = id;
	t->gid = id;
	return 0;
}

/* An account's uid and gid: the same lookup --check makes (rf_users_peek) */
static int named(struct rf_tenant *t)
{
	char msg[RF_POLICY_NAME_MAX + 64];
	int r = rf_users_peek(t->b->policy, &t->pol, &t->uid, &t->gid, msg, sizeof(msg));

	if (r < 0)
		log_warnx("%s: %s (policy line %d)", t->pol.name, msg, t->pol.line);
	return r;
}

/* A dynamic user's source that would be handed to it (empty, and not its
 * own already), opened without following a symlink: the descriptor, else
 * -1. */
static int to_hand_over(const char *source, uid_t uid)
{
	int fd = open(source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), dfd, n = 0;
	struct stat st;
	DIR *d;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_uid == uid || (dfd = dup(fd)) < 0 ||
	    !(d = fdopendir(dfd))) {
		close(fd);
		return -1;
	}
	while (n <= 2 && readdir(d))
		n++;
	closedir(d);
	if (n > 2) {
		close(fd);
		return -1;
	}
	return fd;
}

/* An empty source of a tenant with its own dynamic user becomes its. */
static void give_source(struct rf_tenant *t)
{
	int fd = t->pol.source[0] ? to_hand_over(t->pol.source, t->uid) : -1;

	if (fd >= 0 && fchown(fd, t->uid, t->gid) == 0)
		log_info("%s: source %s is empty; it now belongs to the tenant's user %u",
			 t->pol.name, t->pol.source, (unsigned int)t->uid);
	if (fd >= 0)
		close(fd);
}

/* What access(2) says of directory @fd for @uid:@gid without supplementary
 * groups, as the worker will be: 0 or an errno. Asked in a child, which
 * takes that identity whole. The worker opens its source as root, so the
 * directories above it do not count: the child asks of @fd alone. */
static int access_as(int fd, int mode, uid_t uid, gid_t gid)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return errno;
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(uid, uid, uid) < 0)
			_exit(EPERM);
		_exit(faccessat(fd, "", mode, AT_EACCESS | AT_EMPTY_PATH) < 0 ? errno : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
}

int rf_users_source_problem(const struct rf_mount_policy *m, uid_t uid, gid_t gid, char *msg,
			    size_t len)
{
	struct stat st;
	int e, fd;

	if (!m->source[0])
		return 0;
	fd = open(m->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(msg, len, "source %s: %s: the tenant cannot start", m->source,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	e = access_as(fd, m->read_only ? R_OK | X_OK : R_OK | W_OK | X_OK, uid, gid);
	close(fd);
	if (e == 0)
		return 0;
	if (e == EROFS) {
		snprintf(msg, len,
			 "source %s is on a read-only file system: every client write will fail "
			 "with EROFS; set read_only = yes",
			 m->source);
	} else if (e == EACCES && !m->read_only) {
		snprintf(msg, len,
			 "source %s (owner %u:%u, mode %04o): the tenant's user (uid %u, gid %u) "
			 "cannot write it, so every client write will fail with EACCES; hand it "
			 "over (chown -R %u:%u %s) or set read_only = yes",
			 m->source, (unsigned int)st.st_uid, (unsigned int)st.st_gid,
			 (unsigned int)(st.st_mode & 07777), (unsigned int)uid, (unsigned int)gid,
			 (unsigned int)uid, (unsigned int)gid, m->source);
	} else {
		snprintf(msg, len,
			 "source %s (owner %u:%u, mode %04o): the tenant's user (uid %u, gid %u) "
			 "cannot read it: %s",
			 m->source, (unsigned int)st.st_uid, (unsigned int)st.st_gid,
			 (unsigned int)(st.st_mode & 07777), (unsigned int)uid, (unsigned int)gid,
			 strerror(e));
	}
	return 1;
}

int rf_users_peek(const struct rf_policy *p, const struct rf_mount_policy *m, uid_t *uid,
		  gid_t *gid, char *msg, size_t len)
{
	if (!strcmp(m->user, RF_USER_DYNAMIC)) {
		const struct entry *recorded;
		struct users u;
		uint32_t id;
		int r = load(p->users_file, &u);

		if (r < 0) {
			snprintf(msg, len, "users_file %s: %s", p->users_file, strerror(-r));
			return r;
		}
		id = pick(p, m->name, &u, &recorded);
		free(u.e);
		if (!id) {
			snprintf(msg, len, "no free id left in user_range %u-%u", p->user_range[0],
				 p->user_range[1]);
			return -ENOSPC;
		}
		*uid = id;
		*gid = id;
		return 0;
	}
	{
		struct passwd *pw = getpwnam(m->user);
		struct group *gr = NULL;

		if (!pw) {
			snprintf(msg, len, "user '%s' does not exist", m->user);
			return -ENOENT;
		}
		if (m->group[0] && !(gr = getgrnam(m->group))) {
			snprintf(msg, len, "group '%s' does not exist", m->group);
			return -ENOENT;
		}
		*uid = pw->pw_uid;
		*gid = gr ? gr->gr_gid : pw->pw_gid;
	}
	return 0;
}

int rf_users_check(const struct rf_policy *p, const struct rf_mount_policy *m, char *msg,
		   size_t len)
{
	uid_t uid;
	gid_t gid;

	if (rf_users_peek(p, m, &uid, &gid, msg, len) < 0)
		return 1;
	/* an empty source becomes a dynamic user's at start */
	if (!strcmp(m->user, RF_USER_DYNAMIC) && m->source[0]) {
		int fd = to_hand_over(m->source, uid);

		if (fd >= 0) {
			close(fd);
			return 0;
		}
	}
	return rf_users_source_problem(m, uid, gid, msg, len);
}

int rf_users_resolve(struct rf_tenant *t)
{
	char msg[RF_POLICY_PATH_MAX + 256];
	bool dyn = !strcmp(t->pol.user, RF_USER_DYNAMIC);
	size_t i;
	int r;

	r = dyn ? dynamic(t) : named(t);
	if (r < 0)
		return r;
	if (t->uid == 0 || t->gid == 0) {
		log_warnx("%s: a worker never runs as root; choose another user/group",
			  t->pol.name);
		return -EPERM;
	}
	/* one identity per tenant, unless both say they share it */
	for (i = 0; i < t->b->ntenants; i++) {
		const struct rf_tenant *o = t->b->tenants[i];

		if (o == t || o->state == RF_TENANT_STOPPED || o->uid != t->uid)
			continue;
		if (!(o->pol.shared_user && t->pol.shared_user)) {
			snprintf(t->fail_reason, sizeof(t->fail_reason),
				 "uid %u is also tenant %s's: every tenant runs as a user of its "
				 "own "
				 "(shared_user = yes in both shares one)",
				 (unsigned int)t->uid, o->pol.name);
			log_warnx("%s: %s", t->pol.name, t->fail_reason);
			return -EEXIST;
		}
	}
	if (dyn)
		give_source(t);
	if (rf_users_source_problem(&t->pol, t->uid, t->gid, msg, sizeof(msg)))
		log_warnx("%s: %s", t->pol.name, msg);
	return 0;
}
