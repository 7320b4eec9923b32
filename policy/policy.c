// SPDX-License-Identifier: MIT
#include "policy.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RF_POLICY_MOUNTS_MAX 256

struct parser {
	const char *file;
	int line;
	char *err;
	size_t errlen;
	size_t errused;
	int nerr;
	int global_line;
	struct rf_policy *pol;
};

static void perr(struct parser *ps, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void perr(struct parser *ps, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	ps->nerr++;
	if (!ps->err || ps->errused + 1 >= ps->errlen)
		return;
	n = snprintf(ps->err + ps->errused, ps->errlen - ps->errused, "%s:%d: ", ps->file, line);
	if (n < 0)
		return;
	ps->errused = ps->errused + (size_t)n < ps->errlen ? ps->errused + (size_t)n
							   : ps->errlen - 1;
	va_start(ap, fmt);
	n = vsnprintf(ps->err + ps->errused, ps->errlen - ps->errused, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	ps->errused = ps->errused + (size_t)n < ps->errlen ? ps->errused + (size_t)n
							   : ps->errlen - 1;
	if (ps->errused + 1 < ps->errlen) {
		ps->err[ps->errused++] = '\n';
		ps->err[ps->errused] = '\0';
	}
}

int rf_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mult = 1ULL << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1ULL << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1ULL << 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

const char *rf_transport_name(enum rf_transport t)
{
	switch (t) {
	case RF_TRANSPORT_AUTO:
		return "auto";
	case RF_TRANSPORT_URING:
		return "uring";
	case RF_TRANSPORT_CLASSIC:
		return "classic";
	}
	return "none";
}

/* ---- typed value parsers, one per kind of key ---- */

enum key_kind {
	K_PATH,
	K_STRING,
	K_NAME,
	K_BOOL,
	K_UINT,
	K_SIZE,
	K_SIZE64,
	K_TRANSPORT,
	K_FEATURE, /* auto, on, off: enum rf_feature */
	K_PLUGIN,
	K_LOG,
	K_OWNERSHIP,
	K_RANGE, /* "LO-HI", two uint32_t */
};

struct key_def {
	const char *key;
	enum key_kind kind;
	size_t offset;
	size_t size; /* of the char array for string kinds */
	uint64_t min, max; /* for K_UINT / K_SIZE */
	uint64_t align; /* for K_SIZE: value must be a multiple */
};

#define MKEY(k, kind, field, mn, mx, al)                                         \
	{                                                                        \
		k, kind, offsetof(struct rf_mount_policy, field),                \
			sizeof(((struct rf_mount_policy *)0)->field), mn, mx, al \
	}
#define GKEY(k, kind, field)                                            \
	{                                                               \
		k, kind, offsetof(struct rf_policy, field),             \
			sizeof(((struct rf_policy *)0)->field), 0, 0, 0 \
	}

static const struct key_def mount_keys[] = {
	MKEY("mountpoint", K_PATH, mountpoint, 0, 0, 0),
	MKEY("plugin", K_PLUGIN, plugin, 0, 0, 0),
	MKEY("program", K_PATH, program, 0, 0, 0),
	MKEY("program_args", K_STRING, program_args, 0, 0, 0),
	MKEY("source", K_PATH, source, 0, 0, 0),
	MKEY("options", K_STRING, options, 0, 0, 0),
	MKEY("user", K_NAME, user, 0, 0, 0),
	MKEY("seccomp_policy", K_PATH, seccomp_policy, 0, 0, 0),
	MKEY("group", K_NAME, group, 0, 0, 0),
	MKEY("transport", K_TRANSPORT, transport, 0, 0, 0),
	MKEY("bufpool", K_FEATURE, bufpool, 0, 0, 0),
	MKEY("zero_copy", K_FEATURE, zero_copy, 0, 0, 0),
	MKEY("pool_size", K_SIZE64, pool_size, 1ULL << 20, 1ULL << 40, 4096),
	MKEY("queue_depth", K_UINT, queue_depth, 1, RF_QUEUE_DEPTH_MAX, 0),
	MKEY("max_write", K_SIZE, max_write, RF_MAX_WRITE_MIN, RF_MAX_WRITE_MAX, 4096),
	MKEY("start_timeout", K_UINT, start_timeout, 1, 3600, 0),
	MKEY("max_file_size", K_SIZE64, max_file_size, 4096, 1ULL << 62, 0),
	/* with the restore tables, within half a pool stride (ipc/pool.h) */
	MKEY("state_size", K_SIZE64, state_size, 4096, 1ULL << 34, 4096),
	MKEY("restore_nodes", K_UINT, restore_nodes, 0, 1U << 24, 0),
	MKEY("disk_max", K_SIZE64, disk_max, 1ULL << 20, 1ULL << 62, 0),
	MKEY("inodes_max", K_UINT, inodes_max, 16, 4294967295U, 0),
	MKEY("memory_max", K_SIZE64, memory_max, 16ULL << 20, 1ULL << 50, 0),
	MKEY("pids_max", K_UINT, pids_max, 4, 4194304, 0),
	MKEY("cpu_weight", K_UINT, cpu_weight, 1, 10000, 0),
	MKEY("sched_idle", K_FEATURE, sched_idle, 0, 0, 0),
	MKEY("request_timeout", K_UINT, request_timeout, 1, 65535, 0),
	MKEY("heartbeat_timeout", K_UINT, heartbeat_timeout, 0, 3600, 0),
	MKEY("kernel_timeout", K_UINT, kernel_timeout, 0, 65535, 0),
	MKEY("crash_limit", K_UINT, crash_limit, 1, RF_CRASH_LIMIT_MAX, 0),
	MKEY("crash_window", K_UINT, crash_window, 1, 86400, 0),
	MKEY("host_restart", K_BOOL, host_restart, 0, 0, 0),
	MKEY("allow_other", K_BOOL, allow_other, 0, 0, 0),
	MKEY("default_permissions", K_BOOL, default_permissions, 0, 0, 0),
	MKEY("read_only", K_BOOL, read_only, 0, 0, 0),
	MKEY("handle_killpriv", K_BOOL, handle_killpriv, 0, 0, 0),
	MKEY("shared_user", K_BOOL, shared_user, 0, 0, 0),
	MKEY("disk_shared", K_BOOL, disk_shared, 0, 0, 0),
	MKEY("debug", K_BOOL, debug, 0, 0, 0),
	MKEY("core_dir", K_PATH, core_dir, 0, 0, 0),
	MKEY("ownership", K_OWNERSHIP, ownership, 0, 0, 0),
	{ NULL, 0, 0, 0, 0, 0, 0 },
};

static const struct key_def global_keys[] = {
	GKEY("control_socket", K_PATH, control_socket),
	GKEY("plugin_dir", K_PATH, plugin_dir),
	GKEY("seccomp_policy", K_PATH, seccomp_policy),
	GKEY("control_group", K_NAME, control_group),
	GKEY("log", K_LOG, log_target),
	GKEY("user_range", K_RANGE, user_range),
	GKEY("users_file", K_PATH, users_file),
	{ NULL, 0, 0, 0, 0, 0, 0 },
};

static int valid_name(const char *s, size_t max)
{
	size_t i, n = strlen(s);

	if (n == 0 || n >= max)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
			return 0;
	return s[0] != '.' && s[0] != '-';
}

/* In place: "//" becomes "/", "/./" goes, and so does a trailing "/"
 * (except in "/" itself). ".." was refused before. */
static void normalize_path(char *p)
{
	char *o = p, *s = p;

	while (*s) {
		if (s[0] == '/' && (s[1] == '/' || (s[1] == '.' && (s[2] == '/' || !s[2])))) {
			s += s[1] == '/' ? 1 : 2;
			continue;
		}
		*o++ = *s++;
	}
	if (o > p + 1 && o[-1] == '/')
		o--;
	if (o == p)
		*o++ = '/';
	*o = '\0';
}
static int set_value(struct parser *ps, const struct key_def *k, void *base, const char *v)
{
	char *field = (char *)base + k->offset;
	uint64_t n;
	int r;

	switch (k->kind) {
	case K_PATH:
		if (v[0] != '/') {
			perr(ps, ps->line, "%s: expected an absolute path, got '%s'", k->key, v);
			return -1;
		}
		if (strstr(v, "/../") || (strlen(v) >= 3 && !strcmp(v + strlen(v) - 3, "/.."))) {
			perr(ps, ps->line, "%s: path must not contain '..': '%s'", k->key, v);
			return -1;
		}
		if (strlen(v) >= k->size) {
			perr(ps, ps->line, "%s: value longer than %zu bytes", k->key, k->size - 1);
			return -1;
		}
		/* one spelling per path, so that comparisons (conflicts between
		 * mounts, the kernel's mount table) see the same path as one */
		strcpy(field, v);
		normalize_path(field);
		return 0;
	case K_STRING:
		if (strlen(v) >= k->size) {
			perr(ps, ps->line, "%s: value longer than %zu bytes", k->key, k->size - 1);
			return -1;
		}
		strcpy(field, v);
		return 0;
	case K_NAME:
		if (!valid_name(v, k->size)) {
			perr(ps, ps->line,
			     "%s: expected a name of letters, digits, '_', '-', '.', got '%s'",
			     k->key, v);
			return -1;
		}
		strcpy(field, v);
		return 0;
	case K_PLUGIN:
		if (v[0] != '/' && !valid_name(v, RF_POLICY_NAME_MAX)) {
			perr(ps, ps->line,
			     "%s: expected a plugin name (e.g. passthrough) or an absolute path to "
			     "a .so, got '%s'",
			     k->key, v);
			return -1;
		}
		if (strlen(v) >= k->size) {
			perr(ps, ps->line, "%s: value longer than %zu bytes", k->key, k->size - 1);
			return -1;
		}
		strcpy(field, v);
		return 0;
	case K_BOOL:
		if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
			*(bool *)field = true;
		else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") ||
			 !strcmp(v, "0"))
			*(bool *)field = false;
		else {
			perr(ps, ps->line, "%s: expected yes or no, got '%s'", k->key, v);
			return -1;
		}
		return 0;
	case K_UINT:
	case K_SIZE:
	case K_SIZE64:
		if (k->kind == K_UINT) {
			char *end;

			errno = 0;
			n = strtoull(v, &end, 10);
			r = (!isdigit((unsigned char)v[0]) || *end || errno) ? -EINVAL : 0;
		} else {
			r = rf_parse_size(v, &n);
		}
		if (r) {
			perr(ps, ps->line, "%s: expected %s, got '%s'", k->key,
			     k->kind == K_UINT ? "a whole number" : "a size such as 128K or 1M", v);
			return -1;
		}
		if (n < k->min || n > k->max) {
			perr(ps, ps->line, "%s: %s is out of range %llu..%llu", k->key, v,
			     (unsigned long long)k->min, (unsigned long long)k->max);
			return -1;
		}
		if (k->align && n % k->align) {
			perr(ps, ps->line, "%s: %s is not a multiple of %llu", k->key, v,
			     (unsigned long long)k->align);
			return -1;
		}
		if (k->kind == K_SIZE64)
			*(uint64_t *)field = n;
		else
			*(uint32_t *)field = (uint32_t)n;
		return 0;
	case K_LOG:
		if (strcmp(v, "syslog") && strcmp(v, "stderr")) {
			perr(ps, ps->line, "%s: expected syslog or stderr, got '%s'", k->key, v);
			return -1;
		}
		strcpy(field, v);
		return 0;
	case K_OWNERSHIP:
		if (!strcmp(v, "tenant"))
			*(int *)field = RF_OWN_TENANT;
		else if (!strcmp(v, "xattr"))
			*(int *)field = RF_OWN_XATTR;
		else {
			perr(ps, ps->line, "%s: expected tenant or xattr, got '%s'", k->key, v);
			return -1;
		}
		return 0;
	case K_RANGE: {
		unsigned long long lo, hi;
		char *end;

		errno = 0;
		lo = strtoull(v, &end, 10);
		if (isdigit((unsigned char)v[0]) && *end == '-' && isdigit((unsigned char)end[1]))
			hi = strtoull(end + 1, &end, 10);
		else
			end = (char *)"x";
		if (*end || errno) {
			perr(ps, ps->line, "%s: expected FIRST-LAST, got '%s'", k->key, v);
			return -1;
		}
		if (lo < 1000 || hi > RF_USER_RANGE_MAX || hi < lo + 15) {
			perr(ps, ps->line,
			     "%s: %s must lie within 1000-%u and hold at least 16 ids (uids above "
			     "2^31 read as negative to many programs)",
			     k->key, v, RF_USER_RANGE_MAX);
			return -1;
		}
		((uint32_t *)field)[0] = (uint32_t)lo;
		((uint32_t *)field)[1] = (uint32_t)hi;
		return 0;
	}
	case K_FEATURE:
		if (!strcmp(v, "auto"))
			*(int *)field = RF_FEATURE_AUTO;
		else if (!strcmp(v, "on"))
			*(int *)field = RF_FEATURE_ON;
		else if (!strcmp(v, "off"))
			*(int *)field = RF_FEATURE_OFF;
		else {
			perr(ps, ps->line, "%s: expected auto, on or off, got '%s'", k->key, v);
			return -1;
		}
		return 0;
	case K_TRANSPORT:
		if (!strcmp(v, "auto"))
			*(enum rf_transport *)field = RF_TRANSPORT_AUTO;
		else if (!strcmp(v, "uring"))
			*(enum rf_transport *)field = RF_TRANSPORT_URING;
		else if (!strcmp(v, "classic"))
			*(enum rf_transport *)field = RF_TRANSPORT_CLASSIC;
		else {
			perr(ps, ps->line, "%s: expected auto, uring or classic, got '%s'", k->key,
			     v);
			return -1;
		}
		return 0;
	}
	return -1;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static void mount_defaults(struct rf_mount_policy *m)
{
	memset(m, 0, sizeof(*m));
	m->transport = RF_TRANSPORT_AUTO;
	m->queue_depth = RF_DEFAULT_QUEUE_DEPTH;
	m->max_write = RF_DEFAULT_MAX_WRITE;
	m->start_timeout = RF_DEFAULT_START_TIMEOUT;
	m->crash_limit = RF_DEFAULT_CRASH_LIMIT;
	m->crash_window = RF_DEFAULT_CRASH_WINDOW;
	m->heartbeat_timeout = RF_DEFAULT_HEARTBEAT_TIMEOUT;
	m->kernel_timeout = RF_KERNEL_TIMEOUT_AUTO;
	m->default_permissions = true;
	m->handle_killpriv = true;
	m->host_restart = true;
	m->restore_nodes = RF_DEFAULT_RESTORE_NODES;
	strcpy(m->user, RF_DEFAULT_USER);
}

/* Which keys a section has set, to catch duplicates and missing ones. */
#define MAX_KEYS 64

struct section {
	int is_mount;
	struct rf_mount_policy *m;
	int key_line[MAX_KEYS];
};

_Static_assert(sizeof(mount_keys) / sizeof(mount_keys[0]) <= MAX_KEYS, "a line per mount key");
_Static_assert(sizeof(global_keys) / sizeof(global_keys[0]) <= MAX_KEYS, "a line per key");

static int path_under(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (strcmp(b, "/") == 0)
		return 1;
	return strncmp(a, b, n) == 0 && (a[n] == '/' || a[n] == '\0');
}

/* The line that set @key in the section, or the section's header line. */
/* one of @a and @b is @b or @a, or inside it */
static bool paths_nest(const char *a, const char *b)
{
	return path_under(a, b) || path_under(b, a);
}

static int line_of(const struct section *sec, const char *key)
{
	int i;

	for (i = 0; mount_keys[i].key; i++)
		if (!strcmp(mount_keys[i].key, key))
			return sec->key_line[i] ? sec->key_line[i] : sec->m->line;
	return sec->m->line;
}

/* @key's @path ("" none) and the mount's own mountpoint: neither inside
 * the other */
static void apart_from_mountpoint(struct parser *ps, struct section *sec, const char *key,
				  const char *path)
{
	const char *mp = sec->m->mountpoint;

	if (path[0] && mp[0] && paths_nest(path, mp))
		perr(ps, line_of(sec, key),
		     "%s: '%s' and mountpoint '%s' must not contain one another", key, path, mp);
}

static void check_mount(struct parser *ps, struct section *sec)
{
	struct rf_mount_policy *m = sec->m;
	bool dynamic = !strcmp(m->user, RF_USER_DYNAMIC);
	size_t i;

	if (!m->mountpoint[0])
		perr(ps, m->line, "[mount %s]: missing required key 'mountpoint'", m->name);
	if (!m->plugin[0] && !m->program[0])
		perr(ps, m->line, "[mount %s]: missing required key 'plugin' (or 'program')",
		     m->name);
	if (m->plugin[0] && m->program[0])
		perr(ps, line_of(sec, "program"),
		     "program: a mount runs a plugin or a program, not both ('plugin' at line %d)",
		     line_of(sec, "plugin"));
	if (m->program[0] && m->options[0])
		perr(ps, line_of(sec, "options"),
		     "options: a program's arguments are 'program_args' (options are a plugin's)");
	if (m->program_args[0] && !m->program[0])
		perr(ps, line_of(sec, "program_args"), "program_args: no 'program' to give them");
	if (!strcmp(m->mountpoint, "/"))
		perr(ps, line_of(sec, "mountpoint"), "mountpoint: '/' would hide the whole system");
	if (m->ownership == RF_OWN_XATTR && !m->default_permissions)
		perr(ps, line_of(sec, "ownership"),
		     "ownership: xattr needs default_permissions = yes (the kernel enforces "
		     "the owners and modes the plugin reports)");
	if (m->bufpool == RF_FEATURE_ON && m->transport == RF_TRANSPORT_CLASSIC)
		perr(ps, line_of(sec, "bufpool"),
		     "bufpool: on needs FUSE io-uring, and transport is classic");
	if (m->zero_copy == RF_FEATURE_ON && m->transport == RF_TRANSPORT_CLASSIC)
		perr(ps, line_of(sec, "zero_copy"),
		     "zero_copy: on needs FUSE io-uring, and transport is classic");
	else if (m->zero_copy == RF_FEATURE_ON && m->bufpool == RF_FEATURE_OFF)
		perr(ps, line_of(sec, "zero_copy"),
		     "zero_copy: on needs the kernel's buffer pools, and bufpool is off");
	if (m->pool_size && m->bufpool == RF_FEATURE_OFF)
		perr(ps, line_of(sec, "pool_size"),
		     "pool_size: sizes the kernel's buffer pools, and bufpool is off");
	if ((m->disk_max || m->inodes_max) && !m->source[0])
		perr(ps, line_of(sec, m->disk_max ? "disk_max" : "inodes_max"),
		     "%s: limits the tenant's source, and there is none",
		     m->disk_max ? "disk_max" : "inodes_max");
	if ((m->disk_max || m->inodes_max) && m->shared_user)
		perr(ps, line_of(sec, "shared_user"),
		     "shared_user: a disk limit needs a user of its own (the kernel counts a "
		     "user's or a project's files, whoever's source they are in)");
	/* the kernel's timeout aborts the whole connection: it must not strike
	 * while a worker that held a request is being replaced */
	if (m->kernel_timeout != RF_KERNEL_TIMEOUT_AUTO && m->kernel_timeout &&
	    m->kernel_timeout <= m->request_timeout + m->start_timeout)
		perr(ps, line_of(sec, "kernel_timeout"),
		     "kernel_timeout: %u s would abort the connection while the watchdog "
		     "replaces a worker (request_timeout + start_timeout = %u s); more, or 0 "
		     "for none",
		     m->kernel_timeout, m->request_timeout + m->start_timeout);
	if (m->core_dir[0] && !m->debug)
		perr(ps, line_of(sec, "core_dir"),
		     "core_dir: only a tenant with debug = yes dumps core");
	apart_from_mountpoint(ps, sec, "core_dir", m->core_dir);
	if (dynamic && m->group[0])
		perr(ps, line_of(sec, "group"),
		     "group: only with a named user (a dynamic user has a group of its own, of "
		     "the same number)");
	apart_from_mountpoint(ps, sec, "source", m->source);
	for (i = 0; i + 1 < ps->pol->nmounts; i++) {
		const struct rf_mount_policy *o = &ps->pol->mounts[i];

		if (!strcmp(o->name, m->name))
			perr(ps, m->line, "[mount %s]: name already used at line %d", m->name,
			     o->line);
		else if (!dynamic && !strcmp(o->user, m->user) &&
			 !(m->shared_user && o->shared_user))
			perr(ps, line_of(sec, "user"),
			     "user: '%s' is also the user of [mount %s] (line %d): every tenant "
			     "runs as a user of its own; to share one, say shared_user = yes in "
			     "both",
			     m->user, o->name, o->line);
		else if (m->mountpoint[0] && !strcmp(o->mountpoint, m->mountpoint))
			perr(ps, line_of(sec, "mountpoint"),
			     "mountpoint: '%s' is already the mountpoint of [mount %s] (line %d)",
			     m->mountpoint, o->name, o->line);
		else if (m->mountpoint[0] && paths_nest(m->mountpoint, o->mountpoint))
			perr(ps, line_of(sec, "mountpoint"),
			     "mountpoint: '%s' and the mountpoint of [mount %s] (line %d) are "
			     "nested",
			     m->mountpoint, o->name, o->line);
		else if (m->source[0] && paths_nest(m->source, o->mountpoint))
			perr(ps, line_of(sec, "source"),
			     "source: '%s' overlaps the mountpoint of [mount %s] (line %d)",
			     m->source, o->name, o->line);
		else if (m->mountpoint[0] && o->source[0] && paths_nest(o->source, m->mountpoint))
			perr(ps, line_of(sec, "mountpoint"),
			     "mountpoint: '%s' overlaps the source of [mount %s] (line %d)",
			     m->mountpoint, o->name, o->line);
	}
}

static int parse_header(struct parser *ps, char *s, struct section *sec)
{
	char *end = strchr(s, ']');
	char *name;

	if (!end || trim(end + 1)[0] != '\0') {
		perr(ps, ps->line, "expected a section header '[global]' or '[mount NAME]'");
		return -1;
	}
	*end = '\0';
	s = trim(s + 1);
	memset(sec->key_line, 0, sizeof(sec->key_line));
	if (!strcmp(s, "global")) {
		if (ps->global_line) {
			perr(ps, ps->line, "[global] appears twice (first at line %d)",
			     ps->global_line);
			return -1;
		}
		ps->global_line = ps->line;
		sec->is_mount = 0;
		sec->m = NULL;
		return 0;
	}
	if (strncmp(s, "mount", 5) != 0 || (s[5] != ' ' && s[5] != '\t')) {
		perr(ps, ps->line, "unknown section '[%s]': expected [global] or [mount NAME]", s);
		return -1;
	}
	name = trim(s + 5);
	if (!valid_name(name, RF_POLICY_NAME_MAX)) {
		perr(ps, ps->line, "[mount %s]: NAME must be 1-%d letters, digits, '_', '-' or '.'",
		     name, RF_POLICY_NAME_MAX - 1);
		return -1;
	}
	if (ps->pol->nmounts >= RF_POLICY_MOUNTS_MAX) {
		perr(ps, ps->line, "too many mounts (at most %d)", RF_POLICY_MOUNTS_MAX);
		return -1;
	}
	{
		struct rf_mount_policy *nm =
			realloc(ps->pol->mounts, (ps->pol->nmounts + 1) * sizeof(*nm));

		if (!nm)
			return -ENOMEM;
		ps->pol->mounts = nm;
	}
	sec->m = &ps->pol->mounts[ps->pol->nmounts++];
	mount_defaults(sec->m);
	strcpy(sec->m->name, name);
	sec->m->line = ps->line;
	sec->is_mount = 1;
	return 0;
}

static void parse_kv(struct parser *ps, char *s, struct section *sec)
{
	const struct key_def *keys = sec->is_mount ? mount_keys : global_keys;
	char *eq = strchr(s, '=');
	char *k, *v;
	int i;

	if (!eq) {
		perr(ps, ps->line, "expected 'key = value', got '%s'", s);
		return;
	}
	*eq = '\0';
	k = trim(s);
	v = trim(eq + 1);
	for (i = 0; keys[i].key; i++)
		if (!strcmp(keys[i].key, k))
			break;
	if (!keys[i].key) {
		perr(ps, ps->line, "unknown key '%s' in %s", k,
		     sec->is_mount ? "a [mount] section" : "[global]");
		return;
	}
	if (sec->key_line[i]) {
		perr(ps, ps->line, "%s: set twice (first at line %d)", k, sec->key_line[i]);
		return;
	}
	sec->key_line[i] = ps->line;
	if (!v[0]) {
		perr(ps, ps->line, "%s: empty value", k);
		return;
	}
	set_value(ps, &keys[i], sec->is_mount ? (void *)sec->m : (void *)ps->pol, v);
}

int rf_policy_parse(const char *file, const char *text, size_t len, struct rf_policy **out,
		    char *err, size_t errlen)
{
	struct parser ps = { .file = file, .err = err, .errlen = errlen };
	struct section sec = { 0 };
	int have_section = 0, r;
	size_t pos = 0;
	char line[4096];

	if (err && errlen)
		err[0] = '\0';
	ps.pol = calloc(1, sizeof(*ps.pol));
	if (!ps.pol)
		return -ENOMEM;
	snprintf(ps.pol->file, sizeof(ps.pol->file), "%s", file);
	strcpy(ps.pol->control_socket, RF_DEFAULT_CONTROL_SOCKET);
	snprintf(ps.pol->plugin_dir, sizeof(ps.pol->plugin_dir), "%s", RF_PLUGIN_DIR);
	snprintf(ps.pol->seccomp_policy, sizeof(ps.pol->seccomp_policy), "%s", RF_SECCOMP_POLICY);
	strcpy(ps.pol->log_target, "syslog");
	ps.pol->user_range[0] = RF_DEFAULT_USER_RANGE_LO;
	ps.pol->user_range[1] = RF_DEFAULT_USER_RANGE_HI;
	strcpy(ps.pol->users_file, RF_DEFAULT_USERS_FILE);

	while (pos < len) {
		size_t end = pos, n;
		char *s, *hash;

		while (end < len && text[end] != '\n')
			end++;
		n = end - pos;
		ps.line++;
		if (memchr(text + pos, '\0', n)) {
			perr(&ps, ps.line, "NUL byte in line");
			pos = end + 1;
			continue;
		}
		if (n >= sizeof(line)) {
			perr(&ps, ps.line, "line longer than %zu bytes", sizeof(line) - 1);
			pos = end + 1;
			continue;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos = end + 1;
		/* '#' starts a comment only at the start of a line or after white
		 * space, so values may contain '#'. */
		for (hash = line; (hash = strchr(hash, '#')); hash++)
			if (hash == line || hash[-1] == ' ' || hash[-1] == '\t') {
				*hash = '\0';
				break;
			}
		s = trim(line);
		if (!s[0])
			continue;
		if (s[0] == '[') {
			if (have_section && sec.is_mount && sec.m)
				check_mount(&ps, &sec);
			r = parse_header(&ps, s, &sec);
			if (r == -ENOMEM)
				goto nomem;
			if (r < 0) {
				/* skip the keys of a rejected section */
				sec.is_mount = 1;
				sec.m = NULL;
			}
			have_section = 1;
			continue;
		}
		if (!have_section) {
			perr(&ps, ps.line,
			     "key outside a section: start with [global] or [mount NAME]");
			continue;
		}
		if (sec.is_mount && !sec.m)
			continue; /* inside a rejected header; already reported */
		parse_kv(&ps, s, &sec);
	}
	if (have_section && sec.is_mount && sec.m)
		check_mount(&ps, &sec);
	if (ps.pol->nmounts == 0 && ps.nerr == 0)
		perr(&ps, ps.line ? ps.line : 1, "no [mount NAME] section: nothing to serve");
	if (ps.nerr) {
		rf_policy_free(ps.pol);
		return -EINVAL;
	}
	*out = ps.pol;
	return 0;
nomem:
	rf_policy_free(ps.pol);
	return -ENOMEM;
}

int rf_policy_load(const char *path, struct rf_policy **out, char *err, size_t errlen)
{
	size_t len;
	char *buf;
	int r;

	r = rf_read_policy_file(path, RF_POLICY_FILE_MAX, &buf, &len);
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot read: %s%s\n", path, rf_read_policy_error(r),
			 r == -EFBIG ? " (at most 1 MiB)" : "");
		return r == -ENOTSUP || r == -EFBIG ? -EINVAL : r;
	}
	r = rf_policy_parse(path, buf, len, out, err, errlen);
	if (r < 0) {
		free(buf);
		return r;
	}
	(*out)->text = buf;
	(*out)->text_len = len;
	return 0;
}

void rf_policy_free(struct rf_policy *p)
{
	if (!p)
		return;
	free(p->mounts);
	free(p->text);
	free(p);
}

int rf_policy_plugin_path(const struct rf_policy *p, const struct rf_mount_policy *m, char *out,
			  size_t outlen)
{
	int n;

	if (m->program[0])
		n = snprintf(out, outlen, "%s", m->program);
	else if (m->plugin[0] == '/')
		n = snprintf(out, outlen, "%s", m->plugin);
	else
		n = snprintf(out, outlen, "%s/%s.so", p->plugin_dir, m->plugin);
	return (n < 0 || (size_t)n >= outlen) ? -ENAMETOOLONG : 0;
}

bool rf_mount_policy_same(const struct rf_mount_policy *a, const struct rf_mount_policy *b)
{
#define SAME_STR(f) (strcmp(a->f, b->f) == 0)
#define SAME(f) (a->f == b->f)
	return SAME_STR(name) && SAME_STR(mountpoint) && SAME_STR(plugin) && SAME_STR(program) &&
	       SAME_STR(program_args) && SAME_STR(source) && SAME_STR(options) && SAME_STR(user) &&
	       SAME_STR(group) && SAME_STR(seccomp_policy) && SAME(shared_user) && SAME(disk_max) &&
	       SAME(inodes_max) && SAME(transport) && SAME(bufpool) && SAME(zero_copy) &&
	       SAME(pool_size) && SAME(state_size) && SAME(restore_nodes) && SAME(queue_depth) &&
	       SAME(max_write) && SAME(start_timeout) && SAME(max_file_size) && SAME(memory_max) &&
	       SAME(pids_max) && SAME(cpu_weight) && SAME(sched_idle) && SAME(request_timeout) &&
	       SAME(heartbeat_timeout) && SAME(kernel_timeout) && SAME(crash_limit) &&
	       SAME(crash_window) && SAME(allow_other) && SAME(default_permissions) &&
	       SAME(read_only) && SAME(ownership) && SAME(handle_killpriv) && SAME(host_restart) &&
	       SAME(debug) && SAME(disk_shared) && SAME_STR(core_dir);
#undef SAME
#undef SAME_STR
}

const char *rf_policy_seccomp_path(const struct rf_policy *p, const struct rf_mount_policy *m)
{
	if (m->seccomp_policy[0])
		return m->seccomp_policy;
	return m->program[0] ? RF_PROGRAM_POLICY : p->seccomp_policy;
}
