// SPDX-License-Identifier: MIT
/* seccomp.policy: parser (pure) and compiler (libseccomp). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "policy.h"
#include "seccomp_policy.h"

#define MAX_INCLUDE_DEPTH 8
/* what one policy may read, every @include counted: a fan-out of includes
 * (40 per file, 5 deep, is 10^8 parses) ends in an error, not a hang */
#define MAX_FILES 64
#define MAX_TOTAL (1024 * 1024)
#define MAX_CLAUSES 256
#define MAX_FILE (256 * 1024)

/* ---- named constants ---- */

#define C(x)                      \
	{                         \
#x, (uint64_t)(x) \
	}
static const struct {
	const char *name;
	uint64_t value;
} constants[] = {
	C(O_RDONLY),
	C(O_WRONLY),
	C(O_RDWR),
	C(O_ACCMODE),
	C(O_CREAT),
	C(O_EXCL),
	C(O_NOCTTY),
	C(O_TRUNC),
	C(O_APPEND),
	C(O_NONBLOCK),
	C(O_DSYNC),
	C(O_SYNC),
	C(O_DIRECT),
	C(O_LARGEFILE),
	C(O_DIRECTORY),
	C(O_NOFOLLOW),
	C(O_NOATIME),
	C(O_CLOEXEC),
	C(O_PATH),
	C(O_TMPFILE),
	C(PROT_NONE),
	C(PROT_READ),
	C(PROT_WRITE),
	C(PROT_EXEC),
	C(MAP_SHARED),
	C(MAP_PRIVATE),
	C(MAP_FIXED),
	C(MAP_ANONYMOUS),
	C(MAP_NORESERVE),
	C(MAP_STACK),
	C(MAP_POPULATE),
	C(MAP_FIXED_NOREPLACE),
	C(MAP_GROWSDOWN),
	C(MAP_HUGETLB),
	C(F_DUPFD),
	C(F_GETFD),
	C(F_SETFD),
	C(F_GETFL),
	C(F_SETFL),
	C(F_GETLK),
	C(F_SETLK),
	C(F_SETLKW),
	C(F_DUPFD_CLOEXEC),
	C(F_OFD_GETLK),
	C(F_OFD_SETLK),
	C(F_OFD_SETLKW),
	C(F_ADD_SEALS),
	C(F_GET_SEALS),
	C(FD_CLOEXEC),
	C(FUTEX_WAIT),
	C(FUTEX_WAKE),
	C(FUTEX_REQUEUE),
	C(FUTEX_CMP_REQUEUE),
	C(FUTEX_WAKE_OP),
	C(FUTEX_WAIT_BITSET),
	C(FUTEX_WAKE_BITSET),
	C(FUTEX_LOCK_PI),
	C(FUTEX_UNLOCK_PI),
	C(FUTEX_PRIVATE_FLAG),
	C(FUTEX_CLOCK_REALTIME),
	{ "FUTEX_CMD_MASK", (uint64_t)FUTEX_CMD_MASK },
	C(CLONE_VM),
	C(CLONE_FS),
	C(CLONE_FILES),
	C(CLONE_SIGHAND),
	C(CLONE_THREAD),
	C(CLONE_SYSVSEM),
	C(CLONE_SETTLS),
	C(CLONE_PARENT_SETTID),
	C(CLONE_CHILD_CLEARTID),
	C(CLONE_CHILD_SETTID),
	C(AT_EMPTY_PATH),
	C(AT_SYMLINK_NOFOLLOW),
	C(AT_SYMLINK_FOLLOW),
	C(AT_REMOVEDIR),
	C(AT_EACCESS),
	C(SIGHUP),
	C(SIGINT),
	C(SIGQUIT),
	C(SIGABRT),
	C(SIGKILL),
	C(SIGSEGV),
	C(SIGPIPE),
	C(SIGALRM),
	C(SIGTERM),
	C(SIGCHLD),
	C(SIGSYS),
	C(SIG_BLOCK),
	C(SIG_UNBLOCK),
	C(SIG_SETMASK),
	C(PR_SET_NAME),
	C(PR_GET_NAME),
	C(PR_SET_DUMPABLE),
	C(PR_GET_DUMPABLE),
	C(PR_SET_NO_NEW_PRIVS),
	C(PR_CAP_AMBIENT),
	C(PR_SET_VMA),
	C(MADV_NORMAL),
	C(MADV_DONTNEED),
	C(MADV_FREE),
	C(MADV_WILLNEED),
	C(MADV_HUGEPAGE),
	C(MADV_NOHUGEPAGE),
	C(MADV_DONTDUMP),
	C(FALLOC_FL_KEEP_SIZE),
	C(FALLOC_FL_PUNCH_HOLE),
	C(FALLOC_FL_ZERO_RANGE),
	C(SEEK_SET),
	C(SEEK_CUR),
	C(SEEK_END),
	C(SEEK_DATA),
	C(SEEK_HOLE),
	C(XATTR_CREATE),
	C(XATTR_REPLACE),
	C(RENAME_NOREPLACE),
	C(RENAME_EXCHANGE),
	C(RENAME_WHITEOUT),
	C(EFD_CLOEXEC),
	C(EFD_NONBLOCK),
	C(EFD_SEMAPHORE),
	C(CLOCK_REALTIME),
	C(CLOCK_MONOTONIC),
	C(CLOCK_BOOTTIME),
	C(CLOCK_PROCESS_CPUTIME_ID),
	C(CLOCK_THREAD_CPUTIME_ID),
	C(CLOCK_MONOTONIC_RAW),
	C(CLOCK_REALTIME_COARSE),
	C(CLOCK_MONOTONIC_COARSE),
	C(CLOCK_TAI),
	{ "IORING_REGISTER_FILES_UPDATE", 6 },
	{ "IORING_REGISTER_ENABLE_RINGS", 12 },
	{ "IORING_ENTER_GETEVENTS", 1 },
};
#undef C

int rf_sc_constant(const char *name, uint64_t *value)
{
	size_t i;

	for (i = 0; i < sizeof(constants) / sizeof(constants[0]); i++)
		if (!strcmp(constants[i].name, name)) {
			*value = constants[i].value;
			return 0;
		}
	return -ENOENT;
}

static int errno_by_name(const char *name)
{
	int e;

	for (e = 1; e < 4096; e++) {
		const char *n = strerrorname_np(e);

		if (n && !strcmp(n, name))
			return e;
	}
	return -1;
}

/* ---- parser ---- */

struct ps {
	const char *file;
	int line;
	const char *text; /* the current line */
	const char *p; /* cursor */
	char *err;
	size_t errlen, used;
	int nerr;
	struct rf_sc_policy *pol;
	int default_line;
	char default_file[1024]; /* a copy: an included file's name dies with its parse */
	int default_depth; /* the include depth of the file that set it */
	int depth;
	int *nfiles; /* files and bytes read so far by this policy, includes */
	size_t *nbytes; /* too: shared by every level */
};

static void perr(struct ps *s, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void perr(struct ps *s, const char *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	s->nerr++;
	if (!s->err || s->used + 1 >= s->errlen)
		return;
	n = snprintf(s->err + s->used, s->errlen - s->used, "%s:%d:%d: ", s->file, s->line,
		     (int)(at - s->text) + 1);
	if (n > 0)
		s->used = s->used + (size_t)n < s->errlen ? s->used + (size_t)n : s->errlen - 1;
	va_start(ap, fmt);
	n = vsnprintf(s->err + s->used, s->errlen - s->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		s->used = s->used + (size_t)n < s->errlen ? s->used + (size_t)n : s->errlen - 1;
	if (s->used + 1 < s->errlen) {
		s->err[s->used++] = '\n';
		s->err[s->used] = '\0';
	}
}

static void skip_ws(struct ps *s)
{
	while (*s->p == ' ' || *s->p == '\t')
		s->p++;
}

static int at_end(struct ps *s)
{
	skip_ws(s);
	return *s->p == '\0';
}

/* Consume @tok if it comes next. */
static int accept_tok(struct ps *s, const char *tok)
{
	size_t n = strlen(tok);

	skip_ws(s);
	if (strncmp(s->p, tok, n))
		return 0;
	/* "&" must not eat the first half of "&&", nor "|" of "||" */
	if (n == 1 && (tok[0] == '&' || tok[0] == '|') && s->p[1] == tok[0])
		return 0;
	/* "<" and ">" must not eat "<=" / ">=" */
	if (n == 1 && (tok[0] == '<' || tok[0] == '>') && s->p[1] == '=')
		return 0;
	s->p += n;
	return 1;
}

static int ident(struct ps *s, char *out, size_t len)
{
	size_t n = 0;

	skip_ws(s);
	if (!isalpha((unsigned char)*s->p) && *s->p != '_')
		return 0;
	while (isalnum((unsigned char)s->p[n]) || s->p[n] == '_')
		n++;
	if (n >= len)
		return 0;
	memcpy(out, s->p, n);
	out[n] = '\0';
	s->p += n;
	return 1;
}

/* atom := NUMBER | CONSTANT */
static int atom(struct ps *s, uint64_t *v)
{
	char name[64];
	const char *at;

	skip_ws(s);
	at = s->p;
	if (isdigit((unsigned char)*s->p)) {
		char *end;

		errno = 0;
		*v = strtoull(s->p, &end, 0);
		if (errno || isalnum((unsigned char)*end) || *end == '_') {
			perr(s, at, "expected a number, got '%.20s'", at);
			return -1;
		}
		s->p = end;
		return 0;
	}
	if (!ident(s, name, sizeof(name))) {
		perr(s, at, "expected a number or a constant name, got '%.20s'", at);
		return -1;
	}
	if (rf_sc_constant(name, v) < 0) {
		perr(s, at, "unknown constant '%s'", name);
		return -1;
	}
	return 0;
}

/* value := atom ('|' atom)* */
static int value(struct ps *s, uint64_t *v)
{
	uint64_t a;

	if (atom(s, v) < 0)
		return -1;
	while (accept_tok(s, "|")) {
		if (atom(s, &a) < 0)
			return -1;
		*v |= a;
	}
	return 0;
}

/* One condition; an "in" set yields several alternatives in @alts. */
static int cond(struct ps *s, struct rf_sc_cond *alts, size_t *nalts)
{
	static const struct {
		const char *tok;
		enum rf_sc_op op;
	} cmps[] = { { "==", RF_SC_EQ }, { "!=", RF_SC_NE }, { "<=", RF_SC_LE },
		     { ">=", RF_SC_GE }, { "<", RF_SC_LT },  { ">", RF_SC_GT } };
	struct rf_sc_cond c = { 0 };
	const char *at;
	char name[16];
	size_t i;

	skip_ws(s);
	at = s->p;
	if (!ident(s, name, sizeof(name)) || strncmp(name, "arg", 3) || strlen(name) != 4 ||
	    name[3] < '0' || name[3] > '5') {
		perr(s, at, "expected arg0..arg5, got '%.20s'", at);
		return -1;
	}
	c.arg = (uint8_t)(name[3] - '0');
	*nalts = 1;
	for (i = 0; i < sizeof(cmps) / sizeof(cmps[0]); i++)
		if (accept_tok(s, cmps[i].tok)) {
			c.op = cmps[i].op;
			if (value(s, &c.value) < 0)
				return -1;
			alts[0] = c;
			return 0;
		}
	if (accept_tok(s, "&")) {
		c.op = RF_SC_MASKED_EQ;
		if (value(s, &c.mask) < 0)
			return -1;
		c.value = c.mask;
		if (accept_tok(s, "==") && value(s, &c.value) < 0)
			return -1;
		alts[0] = c;
		return 0;
	}
	at = s->p;
	if (ident(s, name, sizeof(name)) && !strcmp(name, "in")) {
		if (!accept_tok(s, "{")) {
			perr(s, s->p, "expected '{' after 'in'");
			return -1;
		}
		*nalts = 0;
		c.op = RF_SC_EQ;
		do {
			if (*nalts >= 32) {
				perr(s, s->p, "more than 32 values in a set");
				return -1;
			}
			if (value(s, &c.value) < 0)
				return -1;
			alts[(*nalts)++] = c;
		} while (accept_tok(s, ","));
		if (!accept_tok(s, "}")) {
			perr(s, s->p, "expected ',' or '}' in a set");
			return -1;
		}
		return 0;
	}
	perr(s, at, "expected ==, !=, <, <=, >, >=, '&' or 'in' after arg%d", c.arg);
	return -1;
}

static int add_clause(struct ps *s, struct rf_sc_rule *r, const struct rf_sc_clause *c)
{
	struct rf_sc_clause *n;

	if (r->nclauses >= MAX_CLAUSES) {
		perr(s, s->p, "more than %d alternatives for one call", MAX_CLAUSES);
		return -1;
	}
	n = realloc(r->clauses, (r->nclauses + 1) * sizeof(*n));
	if (!n)
		return -1;
	r->clauses = n;
	r->clauses[r->nclauses++] = *c;
	return 0;
}

/* conjunction := cond ('&&' cond)*, expanded into clauses (one per choice of the
 * "in" alternatives) appended to @r. */
static int conjunction(struct ps *s, struct rf_sc_rule *r)
{
	struct rf_sc_clause partial[MAX_CLAUSES];
	size_t np = 1, i, j, k;

	partial[0].nconds = 0;
	do {
		struct rf_sc_cond alts[32];
		size_t na;
		const char *at;

		skip_ws(s);
		at = s->p;
		if (cond(s, alts, &na) < 0)
			return -1;
		for (i = 0; i < partial[0].nconds; i++)
			if (partial[0].conds[i].arg == alts[0].arg) {
				perr(s, at,
				     "arg%d is compared twice in one '&&' chain (one comparison "
				     "per argument)",
				     alts[0].arg);
				return -1;
			}
		if (np * na > MAX_CLAUSES) {
			perr(s, at, "too many combinations of 'in' sets");
			return -1;
		}
		/* cross product */
		for (j = np; j-- > 0;)
			for (k = na; k-- > 0;) {
				struct rf_sc_clause c = partial[j];

				c.conds[c.nconds++] = alts[k];
				partial[j * na + k] = c;
			}
		np *= na;
	} while (accept_tok(s, "&&"));
	for (i = 0; i < np; i++)
		if (add_clause(s, r, &partial[i]) < 0)
			return -1;
	return 0;
}

static struct rf_sc_rule *find_rule(struct rf_sc_policy *p, int nr)
{
	size_t i;

	for (i = 0; i < p->nrules; i++)
		if (p->rules[i].nr == nr)
			return &p->rules[i];
	return NULL;
}

static int parse_file(struct ps *s, const char *path);

static void parse_directive(struct ps *s)
{
	char word[32];
	const char *at = s->p;

	s->p++; /* '@' */
	if (!ident(s, word, sizeof(word))) {
		perr(s, at, "expected @default or @include");
		return;
	}
	if (!strcmp(word, "default")) {
		enum rf_sc_action action;
		char act[16];
		const char *a;

		skip_ws(s);
		a = s->p;
		if (!ident(s, act, sizeof(act))) {
			perr(s, a, "expected kill, trap or log");
			return;
		}
		if (!strcmp(act, "kill"))
			action = RF_SC_KILL;
		else if (!strcmp(act, "trap"))
			action = RF_SC_TRAP;
		else if (!strcmp(act, "log"))
			action = RF_SC_LOG;
		else {
			perr(s, a, "expected kill, trap or log, got '%s'", act);
			return;
		}
		if (!at_end(s))
			perr(s, s->p, "unexpected '%.20s' after @default", s->p);
		/* the including file's @default wins over an included one's,
		 * before or after its @include; two at one level are an error */
		if (s->default_line && s->default_depth == s->depth) {
			perr(s, at, "@default set twice (first at %s:%d)", s->default_file,
			     s->default_line);
			return;
		}
		if (s->default_line && s->default_depth < s->depth)
			return;
		s->pol->default_action = action;
		s->default_line = s->line;
		s->default_depth = s->depth;
		snprintf(s->default_file, sizeof(s->default_file), "%s", s->file);
		return;
	}
	if (!strcmp(word, "include")) {
		char path[1024], dir[1024];
		const char *slash, *inc;
		struct ps sub;
		char *e;
		int r;

		skip_ws(s);
		inc = s->p;
		if (!*inc) {
			perr(s, inc, "expected a file after @include");
			return;
		}
		strncpy(dir, s->file, sizeof(dir) - 1);
		dir[sizeof(dir) - 1] = '\0';
		slash = strrchr(dir, '/');
		if (inc[0] == '/')
			snprintf(path, sizeof(path), "%s", inc);
		else if (slash)
			snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - dir), dir, inc);
		else
			snprintf(path, sizeof(path), "%s", inc);
		e = path + strlen(path);
		while (e > path && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (s->depth >= MAX_INCLUDE_DEPTH) {
			perr(s, at, "@include nested more than %d deep", MAX_INCLUDE_DEPTH);
			return;
		}
		sub = *s;
		sub.depth = s->depth + 1;
		r = parse_file(&sub, path);
		if (r < 0) {
			if (r == -E2BIG && *s->nfiles > MAX_FILES)
				s->nerr++; /* said once already */
			else if (r == -E2BIG && (*s->nfiles = MAX_FILES + 1))
				perr(s, inc,
				     "'%s': one policy may read at most %d files and %d bytes",
				     path, MAX_FILES, MAX_TOTAL);
			else
				perr(s, inc, "cannot read '%s': %s", path, rf_read_policy_error(r));
			return;
		}
		s->nerr = sub.nerr;
		s->used = sub.used;
		s->default_line = sub.default_line;
		s->default_depth = sub.default_depth;
		memcpy(s->default_file, sub.default_file, sizeof(s->default_file));
		return;
	}
	perr(s, at, "unknown directive '@%s': expected @default or @include", word);
}

static void parse_rule(struct ps *s)
{
	struct rf_sc_rule r, *prev;
	const char *at = s->p;
	char word[32];

	memset(&r, 0, sizeof(r));
	if (!ident(s, r.name, sizeof(r.name))) {
		perr(s, at, "expected a system call name");
		return;
	}
	if (!accept_tok(s, ":")) {
		perr(s, s->p, "expected ':' after '%s'", r.name);
		return;
	}
	r.nr = seccomp_syscall_resolve_name(r.name);
	if (r.nr == __NR_SCMP_ERROR) {
		perr(s, at, "unknown system call '%s'", r.name);
		return;
	}
	/* one rule a call in one file, or in files included at one depth;
	 * a rule of an including file replaces its included files', whether
	 * it comes before or after their @include */
	prev = find_rule(s->pol, r.nr);
	if (prev && prev->depth == s->depth) {
		perr(s, at, "'%s' already has a rule at %s", r.name, prev->where);
		return;
	}
	r.depth = s->depth;
	snprintf(r.where, sizeof(r.where), "%s:%d", s->file, s->line);
	skip_ws(s);
	if (s->p[0] == '1' && (s->p[1] == '\0' || s->p[1] == ' ' || s->p[1] == '\t')) {
		s->p++;
		r.action = RF_SC_ALLOW;
	} else {
		const char *save = s->p;

		if (ident(s, word, sizeof(word)) && !strcmp(word, "return")) {
			const char *e;

			skip_ws(s);
			e = s->p;
			if (isdigit((unsigned char)*e)) {
				uint64_t v;

				if (atom(s, &v) < 0)
					return;
				r.errno_value = (int)v;
			} else if (ident(s, word, sizeof(word))) {
				r.errno_value = errno_by_name(word);
			} else {
				r.errno_value = -1;
			}
			if (r.errno_value <= 0 || r.errno_value > 4095) {
				perr(s, e, "expected an errno name such as EPERM");
				return;
			}
			r.action = RF_SC_ERRNO;
		} else {
			s->p = save;
			r.action = RF_SC_ALLOW;
			do {
				if (conjunction(s, &r) < 0) {
					free(r.clauses);
					return;
				}
			} while (accept_tok(s, "||"));
		}
	}
	if (!at_end(s)) {
		perr(s, s->p, "unexpected '%.20s'%s", s->p,
		     r.nclauses ? ": expected '&&' or '||'" : "");
		free(r.clauses);
		return;
	}
	if (prev && prev->depth < r.depth) {
		free(r.clauses); /* the including file's stands */
		return;
	}
	if (prev) {
		free(prev->clauses);
		*prev = r;
		return;
	}
	{
		struct rf_sc_rule *n = realloc(s->pol->rules, (s->pol->nrules + 1) * sizeof(*n));

		if (!n) {
			free(r.clauses);
			perr(s, at, "out of memory");
			return;
		}
		s->pol->rules = n;
		s->pol->rules[s->pol->nrules++] = r;
	}
}

static void parse_text(struct ps *s, const char *text, size_t len)
{
	size_t pos = 0;
	char line[2048];

	while (pos < len) {
		size_t end = pos, n;
		char *hash;

		while (end < len && text[end] != '\n')
			end++;
		n = end - pos;
		s->line++;
		if (n >= sizeof(line) || memchr(text + pos, '\0', n)) {
			s->text = s->p = "";
			perr(s, s->p, n >= sizeof(line) ? "line too long" : "NUL byte in line");
			pos = end + 1;
			continue;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos = end + 1;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		s->text = s->p = line;
		if (at_end(s))
			continue;
		if (*s->p == '@')
			parse_directive(s);
		else
			parse_rule(s);
	}
}

/* 0, or -errno: -E2BIG past the policy's budget of files and bytes */
static int parse_file(struct ps *s, const char *path)
{
	size_t len;
	char *buf;
	int r;

	if (*s->nfiles >= MAX_FILES)
		return -E2BIG;
	r = rf_read_policy_file(path, MAX_FILE, &buf, &len);
	if (r < 0)
		return r;
	if (*s->nbytes + len > MAX_TOTAL) {
		free(buf);
		return -E2BIG;
	}
	++*s->nfiles;
	*s->nbytes += len;
	s->file = path;
	s->line = 0;
	parse_text(s, buf, len);
	free(buf);
	return 0;
}

static struct rf_sc_policy *new_policy(void)
{
	struct rf_sc_policy *p = calloc(1, sizeof(*p));

	if (p)
		p->default_action = RF_SC_KILL;
	return p;
}

static int finish(struct ps *s, struct rf_sc_policy **out)
{
	if (s->nerr) {
		rf_sc_policy_free(s->pol);
		return -EINVAL;
	}
	*out = s->pol;
	return 0;
}

int rf_sc_policy_parse(const char *file, const char *text, size_t len, struct rf_sc_policy **out,
		       char *err, size_t errlen)
{
	int nfiles = 1;
	size_t nbytes = len;
	struct ps s = {
		.file = file, .err = err, .errlen = errlen, .nfiles = &nfiles, .nbytes = &nbytes
	};

	if (err && errlen)
		err[0] = '\0';
	s.pol = new_policy();
	if (!s.pol)
		return -ENOMEM;
	parse_text(&s, text, len);
	return finish(&s, out);
}

int rf_sc_policy_load(const char *path, struct rf_sc_policy **out, char *err, size_t errlen)
{
	int nfiles = 0;
	size_t nbytes = 0;
	struct ps s = { .err = err, .errlen = errlen, .nfiles = &nfiles, .nbytes = &nbytes };
	int r;

	if (err && errlen)
		err[0] = '\0';
	s.pol = new_policy();
	if (!s.pol)
		return -ENOMEM;
	r = parse_file(&s, path);
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot read: %s\n", path, rf_read_policy_error(r));
		rf_sc_policy_free(s.pol);
		return r;
	}
	return finish(&s, out);
}

void rf_sc_policy_free(struct rf_sc_policy *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nrules; i++)
		free(p->rules[i].clauses);
	free(p->rules);
	free(p);
}

/* ---- compiler ---- */

static uint32_t scmp_action(enum rf_sc_action a, int e)
{
	switch (a) {
	case RF_SC_ALLOW:
		return SCMP_ACT_ALLOW;
	case RF_SC_ERRNO:
		return SCMP_ACT_ERRNO((uint32_t)e);
	case RF_SC_TRAP:
		return SCMP_ACT_TRAP;
	case RF_SC_LOG:
		return SCMP_ACT_LOG;
	case RF_SC_KILL:
	default:
		return SCMP_ACT_KILL_PROCESS;
	}
}

static const enum scmp_compare scmp_ops[] = {
	[RF_SC_EQ] = SCMP_CMP_EQ,
	[RF_SC_NE] = SCMP_CMP_NE,
	[RF_SC_LT] = SCMP_CMP_LT,
	[RF_SC_LE] = SCMP_CMP_LE,
	[RF_SC_GT] = SCMP_CMP_GT,
	[RF_SC_GE] = SCMP_CMP_GE,
	[RF_SC_MASKED_EQ] = SCMP_CMP_MASKED_EQ,
};

static int build(const struct rf_sc_policy *p, scmp_filter_ctx *out, int tsync, uint32_t dflt)
{
	scmp_filter_ctx ctx = seccomp_init(dflt);
	size_t i, j, k;
	int r;

	if (!ctx)
		return -ENOMEM;
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* a binary search over the system call numbers, not a linear one */
	if (!r)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (!r && tsync)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	for (i = 0; !r && i < p->nrules; i++) {
		const struct rf_sc_rule *rule = &p->rules[i];
		uint32_t act = scmp_action(rule->action, rule->errno_value);

		if (rule->nclauses == 0) {
			r = seccomp_rule_add(ctx, act, rule->nr, 0);
			continue;
		}
		for (j = 0; !r && j < rule->nclauses; j++) {
			const struct rf_sc_clause *c = &rule->clauses[j];
			struct scmp_arg_cmp cmp[RF_SC_MAX_ARGS * 2];

			for (k = 0; k < c->nconds; k++) {
				cmp[k].arg = c->conds[k].arg;
				cmp[k].op = scmp_ops[c->conds[k].op];
				if (c->conds[k].op == RF_SC_MASKED_EQ) {
					cmp[k].datum_a = c->conds[k].mask;
					cmp[k].datum_b = c->conds[k].value;
				} else {
					cmp[k].datum_a = c->conds[k].value;
					cmp[k].datum_b = 0;
				}
			}
			r = seccomp_rule_add_array(ctx, act, rule->nr, (unsigned int)c->nconds,
						   cmp);
		}
	}
	if (r) {
		seccomp_release(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}

int rf_sc_policy_export_bpf(const struct rf_sc_policy *p, int fd)
{
	scmp_filter_ctx ctx;
	int r = build(p, &ctx, 0, scmp_action(p->default_action, 0));

	if (r)
		return r;
	r = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	return r;
}

int rf_sc_policy_load_filter(const struct rf_sc_policy *p)
{
	scmp_filter_ctx ctx;
	int r = build(p, &ctx, 1, scmp_action(p->default_action, 0));

	if (r)
		return r;
	r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int rf_sc_policy_load_learning(const struct rf_sc_policy *p)
{
	scmp_filter_ctx ctx;
	int r = build(p, &ctx, 1, SCMP_ACT_NOTIFY), fd;

	if (r)
		return r;
	/* what the supervising thread itself calls: were those notified,
	 * it would wait for its own answer */
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
			     SCMP_A1(SCMP_CMP_EQ, SECCOMP_IOCTL_NOTIF_RECV));
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_EQ, SECCOMP_IOCTL_NOTIF_SEND));
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(gettid), 0);
	if (!r)
		r = seccomp_load(ctx);
	fd = r ? r : seccomp_notify_fd(ctx);
	seccomp_release(ctx);
	return fd;
}

static const char *action_name(enum rf_sc_action a)
{
	switch (a) {
	case RF_SC_ALLOW:
		return "allow";
	case RF_SC_ERRNO:
		return "errno";
	case RF_SC_TRAP:
		return "trap";
	case RF_SC_LOG:
		return "log";
	case RF_SC_KILL:
		return "kill";
	}
	return "?";
}

void rf_sc_policy_print(const struct rf_sc_policy *p, FILE *f)
{
	static const char *ops[] = { "==", "!=", "<", "<=", ">", ">=", "&" };
	size_t i, j, k;

	fprintf(f, "# x86-64 only (i386, x32: kill); default: %s; %zu rules\n",
		action_name(p->default_action), p->nrules);
	for (i = 0; i < p->nrules; i++) {
		const struct rf_sc_rule *r = &p->rules[i];

		fprintf(f, "%-20s (%3d) ", r->name, r->nr);
		if (r->action == RF_SC_ERRNO) {
			const char *n = strerrorname_np(r->errno_value);

			fprintf(f, "errno %s", n ? n : "?");
		} else if (!r->nclauses) {
			fprintf(f, "allow");
		} else {
			fprintf(f, "allow if ");
			for (j = 0; j < r->nclauses; j++) {
				const struct rf_sc_clause *c = &r->clauses[j];

				fprintf(f, "%s(", j ? " || " : "");
				for (k = 0; k < c->nconds; k++) {
					const struct rf_sc_cond *d = &c->conds[k];

					fprintf(f, "%sarg%u %s 0x%llx", k ? " && " : "", d->arg,
						ops[d->op],
						(unsigned long long)(d->op == RF_SC_MASKED_EQ
									     ? d->mask
									     : d->value));
					if (d->op == RF_SC_MASKED_EQ)
						fprintf(f, " == 0x%llx",
							(unsigned long long)d->value);
				}
				fprintf(f, ")");
			}
		}
		fprintf(f, "   # %s\n", r->where);
	}
}
