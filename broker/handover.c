// SPDX-License-Identifier: MIT
/*
 * The broker's state as text, for the broker that re-executes itself
 * (reexec.c): written by the old image, read by the new one, which may be
 * a newer build. Text, not structs: a field is named, so a build that adds
 * one still reads what an older build wrote (missing fields stay zero),
 * and one that meets a field it does not know refuses the whole state
 * before the old image lets go (the pre-flight, --resume-check). The
 * policy goes as the text it was read from, so the new image parses it
 * with its own parser; what a tenant runs that the text does not say (a
 * plugin from ringfencectl upgrade) goes with the tenant.
 *
 *   ringfence-broker-state 2
 *   KEY VALUE                      the broker's fields
 *   policy LENGTH                  then LENGTH bytes of policy text and a newline
 *   tenant NAME                    then KEY VALUE lines of that tenant
 *   end
 *
 * Strings are escaped (\xNN for a control byte, a backslash or a space at
 * either end), numbers are decimal. Pure: nothing here touches a
 * descriptor; reexec.c checks what the descriptors named are.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "msg.h"

enum ftype {
	F_UNSIGNED,
	F_SIGNED,
	F_BOOL,
	F_STR
};

/* A field of struct rf_tenant: @n elements @stride bytes apart (arrays
 * are KEY.I lines). */
struct field {
	const char *name;
	enum ftype type;
	size_t off, size, stride;
	unsigned int n;
};

#define M(m) offsetof(struct rf_tenant, m), sizeof(((struct rf_tenant *)0)->m)
#define ONE(name, type, m)             \
	{                              \
		name, type, M(m), 0, 1 \
	}
#define ARR(name, type, m, count)                                    \
	{                                                            \
		name, type, offsetof(struct rf_tenant, m[0]),        \
			sizeof(((struct rf_tenant *)0)->m[0]),       \
			sizeof(((struct rf_tenant *)0)->m[0]), count \
	}

static const struct field fields[] = {
	ONE("plugin", F_STR, pol.plugin),
	ONE("index", F_UNSIGNED, index),
	ONE("state", F_SIGNED, state),
	ONE("fail_reason", F_STR, fail_reason),
	ONE("uid", F_UNSIGNED, uid),
	ONE("gid", F_UNSIGNED, gid),
	ONE("fuse_fd", F_SIGNED, fuse_fd),
	ONE("mounted", F_BOOL, mounted),
	ONE("conn_id", F_UNSIGNED, conn_id),
	ONE("conn.minor", F_UNSIGNED, conn.minor),
	ONE("conn.max_write", F_UNSIGNED, conn.max_write),
	ONE("conn.max_pages", F_UNSIGNED, conn.max_pages),
	ONE("conn.payload_size", F_UNSIGNED, conn.payload_size),
	ONE("conn.flags", F_UNSIGNED, conn.flags),
	ONE("conn.transport", F_SIGNED, conn.transport),
	ONE("conn.bufpool_offered", F_BOOL, conn.bufpool_offered),
	ONE("conn.bufpool", F_BOOL, conn.bufpool),
	ONE("conn.zero_copy", F_BOOL, conn.zero_copy),
	ONE("conn.kernel_timeout", F_UNSIGNED, conn.kernel_timeout),
	ONE("conn.why", F_STR, conn.why),
	ONE("cg.ngroups", F_SIGNED, cg.ngroups),
	ARR("cg.dir", F_STR, cg.dir, RF_CG_MAX),
	ARR("cg.procs", F_STR, cg.procs, RF_CG_MAX),
	ONE("cg.mechanism", F_STR, cg.mechanism),
	ONE("cg.pids", F_BOOL, cg.pids),
	ONE("cg.sched_idle", F_BOOL, cg.sched_idle),
	ONE("disk_mechanism", F_STR, disk_mechanism),
	ONE("pool_fd", F_SIGNED, pool_fd),
	ONE("state_fd", F_SIGNED, state_fd),
	ONE("geom.nqueues", F_UNSIGNED, geom.nqueues),
	ONE("geom.depth", F_UNSIGNED, geom.depth),
	ONE("geom.payload_size", F_UNSIGNED, geom.payload_size),
	ONE("geom.qpool_size", F_UNSIGNED, geom.qpool_size),
	ONE("worker_pid", F_SIGNED, worker_pid),
	ONE("worker_start", F_UNSIGNED, worker_start),
	ONE("ipc_fd", F_SIGNED, ipc_fd),
	ONE("host_ipc_fd", F_SIGNED, host_ipc_fd),
	ONE("host_msgs_seen", F_UNSIGNED, host_msgs_seen),
	ONE("ipc_waits", F_UNSIGNED, ipc_waits),
	ONE("msgs_seen", F_UNSIGNED, msgs_seen),
	ONE("started", F_SIGNED, started),
	ONE("restarts", F_UNSIGNED, restarts),
	ONE("crashes", F_UNSIGNED, crashes),
	ONE("generation", F_UNSIGNED, generation),
	ONE("watchdog_kills", F_UNSIGNED, watchdog_kills),
	ONE("heartbeat_kills", F_UNSIGNED, heartbeat_kills),
	ONE("outside_kills", F_UNSIGNED, outside_kills),
	ONE("sigkilled", F_BOOL, proc.sigkilled),
	ONE("hb_seq", F_UNSIGNED, hb_seq),
	ONE("hb_sent_seq", F_UNSIGNED, hb_sent_seq),
	ONE("hb_sent_ns", F_UNSIGNED, hb_sent_ns),
	ARR("deaths", F_SIGNED, deaths, RF_CRASH_LIMIT_MAX),
	ONE("log_dropped", F_UNSIGNED, log_dropped),
	ONE("log_dropped_told", F_UNSIGNED, log_dropped_told),
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static void put_str(FILE *f, const char *s)
{
	size_t i, n = strlen(s);

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || c == '\\' || (c == ' ' && (i == 0 || i == n - 1)))
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

static void put_field(FILE *f, const struct rf_tenant *t, const struct field *d, unsigned int i)
{
	const char *p = (const char *)t + d->off + i * d->stride;
	unsigned long long u = 0;
	long long s = 0;

	fputs(d->name, f);
	if (d->n > 1)
		fprintf(f, ".%u", i);
	fputc(' ', f);
	switch (d->type) {
	case F_UNSIGNED:
		memcpy(&u, p, d->size); /* little-endian: the low bytes */
		fprintf(f, "%llu", u);
		break;
	case F_SIGNED:
		if (d->size == 4) {
			int32_t v;

			memcpy(&v, p, 4);
			s = v;
		} else {
			memcpy(&s, p, 8);
		}
		fprintf(f, "%lld", s);
		break;
	case F_BOOL:
		fputc(*(const bool *)p ? '1' : '0', f);
		break;
	case F_STR:
		put_str(f, p);
		break;
	}
	fputc('\n', f);
}

int rf_handover_write(const struct rf_broker *b, int reply_fd, FILE *f)
{
	const struct rf_policy *p = b->policy;
	size_t i, k;
	unsigned int e;

	if (!p->text)
		return -EINVAL;
	fprintf(f, "%s %d\n", RF_HANDOVER_MAGIC, RF_HANDOVER_FORMAT);
	fprintf(f, "writer %s\n", RF_VERSION);
	fprintf(f, "pid %d\n", (int)b->pid);
	fprintf(f, "ipc_version %d\npool_version %d\n", RF_IPC_VERSION, RF_POOL_VERSION);
	fprintf(f, "nqueues %u\n", b->nqueues);
	fputs("config ", f);
	put_str(f, b->config);
	fprintf(f, "\nforeground %d\ndebug %d\nbench %u\n", b->foreground, b->debug, b->bench);
	fprintf(f, "ctl_fd %d\nreply_fd %d\nhandovers %u\n", b->ctl_fd, reply_fd, b->handovers + 1);
	fprintf(f, "policy %zu\n", p->text_len);
	fwrite(p->text, 1, p->text_len, f);
	fputc('\n', f);
	for (i = 0; i < b->ntenants; i++) {
		struct rf_tenant t = *b->tenants[i];

		/* a socket no event watches is the worker's to have closed,
		 * or a killed worker's: it stays behind */
		if (!t.ipc_ev)
			t.ipc_fd = -1;
		if (!t.host_ipc_ev)
			t.host_ipc_fd = -1;
		fputs("tenant ", f);
		put_str(f, t.pol.name);
		fputc('\n', f);
		for (k = 0; k < NFIELDS; k++)
			for (e = 0; e < fields[k].n; e++)
				put_field(f, &t, &fields[k], e);
	}
	fputs("end\n", f);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

/* Parsing */

struct cursor {
	const char *text;
	size_t len, pos;
	unsigned int line;
	char *err;
	size_t errlen;
	int format;
	bool responder; /* format 1: the tenant's worker is the EIO responder */
};

static int perr(struct cursor *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int perr(struct cursor *c, const char *fmt, ...)
{
	int n = snprintf(c->err, c->errlen, "broker state, line %u: ", c->line);
	va_list ap;

	if (n >= 0 && (size_t)n < c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* The next line, NUL-terminated in @buf; -EINVAL at the end of the text
 * or for a line that does not fit. */
static int next_line(struct cursor *c, char *buf, size_t len)
{
	const char *nl;
	size_t n;

	if (c->pos >= c->len)
		return perr(c, "the state ends early (no \"end\")");
	c->line++;
	nl = memchr(c->text + c->pos, '\n', c->len - c->pos);
	if (!nl)
		return perr(c, "no newline at the end");
	n = (size_t)(nl - (c->text + c->pos));
	if (n >= len || memchr(c->text + c->pos, '\0', n))
		return perr(c, "line too long, or a NUL byte");
	memcpy(buf, c->text + c->pos, n);
	buf[n] = '\0';
	c->pos += n + 1;
	return 0;
}

static int get_str(const char *in, char *out, size_t len)
{
	size_t o = 0;
	unsigned int x;

	for (; *in; in++) {
		char c = *in;

		if (c == '\\') {
			if (in[1] != 'x' || sscanf(in + 2, "%2x", &x) != 1 || !x)
				return -EINVAL;
			c = (char)x;
			in += 3;
		}
		if (o + 1 >= len)
			return -ENAMETOOLONG;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int get_num(const char *s, bool is_signed, long long *sv, unsigned long long *uv)
{
	char *end;

	errno = 0;
	if (is_signed)
		*sv = strtoll(s, &end, 10);
	else if (*s == '-')
		return -EINVAL;
	else
		*uv = strtoull(s, &end, 10);
	return errno || end == s || *end ? -EINVAL : 0;
}

static int set_field(struct rf_tenant *t, const struct field *d, unsigned int i, const char *v)
{
	char *p = (char *)t + d->off + i * d->stride;
	unsigned long long u;
	long long s;

	switch (d->type) {
	case F_UNSIGNED:
		if (get_num(v, false, &s, &u) < 0 || (d->size == 4 && u > UINT32_MAX))
			return -EINVAL;
		memcpy(p, &u, d->size);
		return 0;
	case F_SIGNED:
		if (get_num(v, true, &s, &u) < 0 ||
		    (d->size == 4 && (s < INT32_MIN || s > INT32_MAX)))
			return -EINVAL;
		if (d->size == 4) {
			int32_t v32 = (int32_t)s;

			memcpy(p, &v32, 4);
		} else {
			memcpy(p, &s, 8);
		}
		return 0;
	case F_BOOL:
		if (strcmp(v, "0") && strcmp(v, "1"))
			return -EINVAL;
		*(bool *)p = v[0] == '1';
		return 0;
	case F_STR:
		return get_str(v, p, d->size);
	}
	return -EINVAL;
}

/* KEY[.I] VALUE of a tenant. */
static int tenant_line(struct cursor *c, struct rf_tenant *t, char *line)
{
	char *v = strchr(line, ' '), *dot;
	unsigned int i = 0;
	size_t k;

	if (!v)
		return perr(c, "'%.64s': a key and a value expected", line);
	*v++ = '\0';
	if (c->format == 1 && (!strcmp(line, "stopping") || !strcmp(line, "responder"))) {
		/* a stopped or failed tenant's state says all; the responder
		 * is a state of its own (tenant_check) */
		if (strcmp(v, "0") && strcmp(v, "1"))
			return perr(c, "%s: bad value '%.64s'", line, v);
		if (line[0] == 'r')
			c->responder = v[0] == '1';
		return 0;
	}
	for (k = 0; k < NFIELDS; k++) {
		size_t n = strlen(fields[k].name);

		if (strncmp(line, fields[k].name, n))
			continue;
		dot = line + n;
		if (fields[k].n == 1 && !*dot)
			break;
		if (fields[k].n > 1 && *dot == '.' && sscanf(dot + 1, "%u", &i) == 1 &&
		    i < fields[k].n && strspn(dot + 1, "0123456789") == strlen(dot + 1))
			break;
	}
	if (k == NFIELDS)
		return perr(c, "%s: unknown field of tenant %s (written by a newer ringfenced?)",
			    line, t->pol.name);
	if (set_field(t, &fields[k], i, v) < 0)
		return perr(c, "%s: bad value '%.64s'", line, v);
	return 0;
}

/* What no broker could have handed over, whatever its version. */
static int tenant_check(struct cursor *c, const struct rf_handover *h, struct rf_tenant *t)
{
	struct rf_pool_geom g;
	size_t i;

	if (c->format == 1 && t->state > RF_TENANT_FAILED)
		return perr(c, "tenant %s: state %d in format 1", t->pol.name, (int)t->state);
	if (c->format == 1 && c->responder) {
		if (t->state != RF_TENANT_FAILED)
			return perr(c, "tenant %s: the responder, state %d", t->pol.name,
				    (int)t->state);
		t->state = RF_TENANT_RESPONDING;
	}
	if (!rf_tenant_settled(t->state))
		return perr(c, "tenant %s: state %d (%s) cannot be handed over", t->pol.name,
			    (int)t->state, rf_tenant_state_name(t->state));
	if (t->conn.transport < RF_TRANSPORT_AUTO || t->conn.transport > RF_TRANSPORT_CLASSIC)
		return perr(c, "tenant %s: transport %d", t->pol.name, (int)t->conn.transport);
	if (t->cg.ngroups < 0 || t->cg.ngroups > RF_CG_MAX)
		return perr(c, "tenant %s: %d cgroups", t->pol.name, t->cg.ngroups);
	if (t->fuse_fd < -1 || t->pool_fd < -1 || t->state_fd < -1 || t->ipc_fd < -1 ||
	    t->host_ipc_fd < -1 || t->worker_pid < 0)
		return perr(c, "tenant %s: a descriptor or pid below -1", t->pol.name);
	if ((t->ipc_fd >= 0 || t->host_ipc_fd >= 0) && t->worker_pid <= 0)
		return perr(c, "tenant %s: a worker socket without a worker", t->pol.name);
	/* a stopped tenant keeps the geometry it had, for its status */
	if ((t->pool_fd >= 0 && !t->geom.nqueues) ||
	    (t->geom.nqueues && (t->geom.nqueues != h->nqueues ||
				 rf_pool_geom_init(&g, t->geom.nqueues, t->geom.depth,
						   t->geom.payload_size, t->geom.qpool_size) < 0)))
		return perr(c, "tenant %s: a pool of no possible geometry", t->pol.name);
	if (t->geom.nqueues)
		t->geom = g;
	if (t->index >= RF_POOL_INDEX_MAX)
		return perr(c, "tenant %s: pool index %u", t->pol.name, t->index);
	for (i = 0; i < h->ntenants; i++)
		if (&h->tenants[i] != t && h->tenants[i].index == t->index)
			return perr(c, "tenant %s: pool index %u is %s's too", t->pol.name,
				    t->index, h->tenants[i].pol.name);
	return 0;
}

/* "tenant NAME": a mount of the policy, not seen before; its policy with
 * the plugin the state names (set later, by its line). */
static int tenant_start(struct cursor *c, struct rf_handover *h, const char *v)
{
	struct rf_tenant *t;
	char name[RF_POLICY_NAME_MAX];
	size_t i;

	if (get_str(v, name, sizeof(name)) < 0)
		return perr(c, "tenant name '%.64s'", v);
	for (i = 0; i < h->ntenants; i++)
		if (!strcmp(h->tenants[i].pol.name, name))
			return perr(c, "tenant %s twice", name);
	for (i = 0; i < h->policy->nmounts; i++)
		if (!strcmp(h->policy->mounts[i].name, name))
			break;
	if (i == h->policy->nmounts)
		return perr(c, "tenant %s: not in the policy handed over", name);
	t = realloc(h->tenants, (h->ntenants + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	h->tenants = t;
	t = &h->tenants[h->ntenants++];
	memset(t, 0, sizeof(*t));
	c->responder = false;
	t->pol = h->policy->mounts[i];
	t->fuse_fd = t->pool_fd = t->state_fd = t->ipc_fd = t->host_ipc_fd = -1;
	return 0;
}

static int policy_text(struct cursor *c, struct rf_handover *h, const char *v)
{
	unsigned long long n;
	long long unused;
	char err[2048];
	int r;

	if (h->policy)
		return perr(c, "a second policy");
	if (get_num(v, false, &unused, &n) < 0 || n > RF_POLICY_FILE_MAX ||
	    n + 1 > c->len - c->pos || c->text[c->pos + n] != '\n')
		return perr(c, "policy length '%.32s' does not fit the state", v);
	err[0] = '\0';
	r = rf_policy_parse(h->config, c->text + c->pos, (size_t)n, &h->policy, err, sizeof(err));
	if (r < 0)
		return perr(c, "the policy handed over does not parse: %.1500s", err);
	h->policy->text = malloc(n ? n : 1);
	if (!h->policy->text)
		return -ENOMEM;
	memcpy(h->policy->text, c->text + c->pos, n);
	h->policy->text_len = (size_t)n;
	/* count the policy's lines, so that later errors name the right one */
	for (size_t i = 0; i <= n; i++)
		c->line += c->text[c->pos + i] == '\n';
	c->pos += (size_t)n + 1;
	return 0;
}

/* The broker's own KEY VALUE lines. */
static int broker_line(struct cursor *c, struct rf_handover *h, char *key, const char *v)
{
	static const struct {
		const char *name;
		size_t off;
		bool is_signed;
	} nums[] = {
		{ "pid", offsetof(struct rf_handover, pid), true },
		{ "ipc_version", offsetof(struct rf_handover, ipc_version), true },
		{ "pool_version", offsetof(struct rf_handover, pool_version), true },
		{ "nqueues", offsetof(struct rf_handover, nqueues), false },
		{ "foreground", offsetof(struct rf_handover, foreground), true },
		{ "debug", offsetof(struct rf_handover, debug), true },
		{ "bench", offsetof(struct rf_handover, bench), false },
		{ "ctl_fd", offsetof(struct rf_handover, ctl_fd), true },
		{ "reply_fd", offsetof(struct rf_handover, reply_fd), true },
		{ "handovers", offsetof(struct rf_handover, handovers), false },
	};
	unsigned long long u;
	long long s;
	size_t i;

	if (!strcmp(key, "writer"))
		return get_str(v, h->writer, sizeof(h->writer)) < 0 ? perr(c, "writer") : 0;
	if (!strcmp(key, "config")) {
		if (get_str(v, h->config, sizeof(h->config)) < 0 || !h->config[0])
			return perr(c, "config '%.64s'", v);
		return 0;
	}
	if (!strcmp(key, "policy"))
		return h->config[0] ? policy_text(c, h, v) : perr(c, "policy before config");
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (strcmp(key, nums[i].name))
			continue;
		if (get_num(v, nums[i].is_signed, &s, &u) < 0 ||
		    (nums[i].is_signed ? s < -1 || s > INT32_MAX : u > UINT32_MAX))
			return perr(c, "%s: bad value '%.32s'", key, v);
		if (nums[i].is_signed)
			*(int *)((char *)h + nums[i].off) = (int)s;
		else
			*(unsigned int *)((char *)h + nums[i].off) = (unsigned int)u;
		return 0;
	}
	return perr(c, "%s: unknown field (written by a newer ringfenced?)", key);
}

int rf_handover_parse(const char *text, size_t len, struct rf_handover *h, char *err, size_t errlen)
{
	struct cursor c = { .text = text, .len = len, .err = err, .errlen = errlen };
	char line[4096], magic[64];
	struct rf_tenant *t = NULL;
	int format, r;

	memset(h, 0, sizeof(*h));
	h->ctl_fd = h->reply_fd = -1;
	r = next_line(&c, line, sizeof(line));
	if (r < 0)
		return r;
	if (sscanf(line, "%63s %d", magic, &format) != 2 || strcmp(magic, RF_HANDOVER_MAGIC))
		return perr(&c, "not a ringfence broker state");
	if (format != 1 && format != RF_HANDOVER_FORMAT)
		return perr(&c, "format %d; this ringfenced reads formats 1 and %d", format,
			    RF_HANDOVER_FORMAT);
	c.format = format;
	for (;;) {
		char *v;

		r = next_line(&c, line, sizeof(line));
		if (r < 0)
			goto fail;
		if (!strcmp(line, "end"))
			break;
		v = strchr(line, ' ');
		if (!v) {
			r = perr(&c, "'%.64s': a key and a value expected", line);
			goto fail;
		}
		*v++ = '\0';
		if (!strcmp(line, "tenant")) {
			if (!h->policy) {
				r = perr(&c, "a tenant before the policy");
				goto fail;
			}
			if (t && (r = tenant_check(&c, h, t)) < 0)
				goto fail;
			r = tenant_start(&c, h, v);
			t = r < 0 ? NULL : &h->tenants[h->ntenants - 1];
		} else if (t) {
			v[-1] = ' ';
			r = tenant_line(&c, t, line);
		} else {
			r = broker_line(&c, h, line, v);
		}
		if (r < 0)
			goto fail;
	}
	if (t && (r = tenant_check(&c, h, t)) < 0)
		goto fail;
	if (c.pos != c.len) {
		r = perr(&c, "text after \"end\"");
		goto fail;
	}
	if (!h->policy || h->pid <= 0 || !h->nqueues) {
		r = perr(&c, "no policy, pid or nqueues");
		goto fail;
	}
	/* the workers that serve on are the old build's: they must speak
	 * this one's IPC and lay out the pool as it does */
	if (h->ipc_version != RF_IPC_VERSION || h->pool_version != RF_POOL_VERSION) {
		r = perr(&c,
			 "the running workers speak IPC version %d with pool layout %d; this "
			 "ringfenced speaks %d with %d: it cannot take them over (unmount and "
			 "start it instead)",
			 h->ipc_version, h->pool_version, RF_IPC_VERSION, RF_POOL_VERSION);
		goto fail;
	}
	return 0;
fail:
	rf_handover_free(h);
	return r == -ENOMEM ? r : -EINVAL;
}

void rf_handover_free(struct rf_handover *h)
{
	rf_policy_free(h->policy);
	free(h->tenants);
	h->policy = NULL;
	h->tenants = NULL;
	h->ntenants = 0;
}
