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

static int dynamic(struct rf_tenant *t)
{
	const struct rf_policy *p = t->b->policy;
	uint32_t lo = p->user_range[0], size = p->user_range[1] - p->user_range[0] + 1, i, id;
	struct users u;
	struct entry *mine = NULL;
	size_t j;
	int r;

	r = load(p->users_file, &u);
	if (r < 0) {
		log_warnx("%s: read %s: %s", t->pol.name, p->users_file, strerror(-r));
		return r;
	}
	for (j = 0; j < u.n; j++)
		if (!strcmp(u.e[j].name, t->pol.name))
			mine = &u.e[j];
	if (mine && mine->id >= lo && mine->id - lo < size && !host_has(mine->id)) {
		t->uid = mine->id;
		t->gid = mine->id;
		free(u.e);
		return 0;
	}
	for (i = 0; i < size; i++) {
		id = lo + (hash(t->pol.name) + i) % size;
		for (j = 0; j < u.n; j++)
			if (u.e[j].id == id && &u.e[j] != mine)
				break;
		if (j == u.n && !host_has(id))
			break;
	}
	if (i == size) {
		log_warnx("%s: no free id left in user_range %u-%u", t->pol.name, lo,
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

static int named(struct rf_tenant *t)
{
	struct passwd *pw = getpwnam(t->pol.user);
	struct group *gr = NULL;

	if (!pw) {
		log_warnx("%s: user '%s' (policy line %d) does not exist", t->pol.name, t->pol.user,
			  t->pol.line);
		return -ENOENT;
	}
	if (t->pol.group[0] && !(gr = getgrnam(t->pol.group))) {
		log_warnx("%s: group '%s' does not exist", t->pol.name, t->pol.group);
		return -ENOENT;
	}
	t->uid = pw->pw_uid;
	t->gid = gr ? gr->gr_gid : pw->pw_gid;
	return 0;
}

/* A tenant of its own that is empty belongs to its dynamic user; one that
 * holds files is left as it is, and the log says whose they are. */
static void give_source(struct rf_tenant *t)
{
	struct stat st;
	int fd, n = 0;
	DIR *d;

	if (!t->pol.source[0])
		return;
	fd = open(t->pol.source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return; /* the worker says what is wrong with it */
	}
	if (st.st_uid == t->uid) {
		close(fd);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while (n <= 2 && readdir(d))
		n++;
	if (n <= 2 && fchown(dirfd(d), t->uid, t->gid) == 0)
		log_info("%s: source %s is empty; it now belongs to the tenant's user %u",
			 t->pol.name, t->pol.source, (unsigned int)t->uid);
	else
		log_warnx("%s: source %s belongs to uid %u; the tenant runs as %u and may change "
			  "only "
			  "what that uid may (chown -R %u:%u it to hand it over)",
			  t->pol.name, t->pol.source, (unsigned int)st.st_uid, (unsigned int)t->uid,
			  (unsigned int)t->uid, (unsigned int)t->gid);
	closedir(d);
}

int rf_users_resolve(struct rf_tenant *t)
{
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
	return 0;
}
