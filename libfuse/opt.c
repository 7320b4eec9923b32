// SPDX-License-Identifier: MIT
/*
 * libfuse 3's option parser (fuse_opt.h), for unmodified libfuse programs
 * run as ringfence tenants. Written to the header's contract, which says
 * how templates match and act; where it leaves a case open, this does what
 * a program built against libfuse sees there (said at each place).
 *
 * An argument vector is parsed into a new one: argv[0], then whatever the
 * templates and the program's function keep, with every kept "-o" option
 * gathered into one "-o a,b,..." pair right after argv[0].
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libfuse.h"

#define EXPORT __attribute__((visibility("default")))

/* FUSE_OPT_KEY's offset: -1U, an unsigned int widened to unsigned long */
#define KEY_OFFSET ((unsigned long)-1U)

static int nomem(void)
{
	fuse_log(FUSE_LOG_ERR, "fuse: memory allocation failed\n");
	return -1;
}

EXPORT int fuse_opt_add_arg(struct fuse_args *args, const char *arg)
{
	return fuse_opt_insert_arg(args, args->argc, arg);
}

/* A vector a program made itself (FUSE_ARGS_INIT over main's argv) is
 * copied before it grows: its strings are not ours to free. */
static int own(struct fuse_args *args)
{
	char **v;
	int i;

	if (args->allocated || !args->argv)
		return 0;
	v = calloc((size_t)args->argc + 1, sizeof(*v));
	if (!v)
		return -1;
	for (i = 0; i < args->argc; i++) {
		v[i] = strdup(args->argv[i]);
		if (!v[i]) {
			while (i--)
				free(v[i]);
			free(v);
			return -1;
		}
	}
	args->argv = v;
	args->allocated = 1;
	return 0;
}

EXPORT int fuse_opt_insert_arg(struct fuse_args *args, int pos, const char *arg)
{
	char *s, **v;

	if (pos < 0 || pos > args->argc)
		return -1;
	if (own(args) < 0)
		return nomem();
	s = strdup(arg);
	if (!s)
		return nomem();
	v = realloc(args->argv, ((size_t)args->argc + 2) * sizeof(*v));
	if (!v) {
		free(s);
		return nomem();
	}
	memmove(v + pos + 1, v + pos, (size_t)(args->argc - pos) * sizeof(*v));
	v[pos] = s;
	v[++args->argc] = NULL;
	args->argv = v;
	args->allocated = 1;
	return 0;
}

EXPORT void fuse_opt_free_args(struct fuse_args *args)
{
	int i;

	if (!args)
		return;
	if (args->allocated && args->argv) {
		for (i = 0; i < args->argc; i++)
			free(args->argv[i]);
		free(args->argv);
	}
	args->argc = 0;
	args->argv = NULL;
	args->allocated = 0;
}

/* *opts = *opts "," opt, with ',' and '\' in opt escaped if @escape */
static int add_opt(char **opts, const char *opt, bool escape)
{
	size_t old = *opts ? strlen(*opts) : 0, n = old + (old ? 1 : 0);
	const char *p;
	char *s;

	for (p = opt; *p; p++)
		n += (escape && (*p == ',' || *p == '\\')) ? 2 : 1;
	s = realloc(*opts, n + 1);
	if (!s)
		return nomem();
	n = old;
	if (old)
		s[n++] = ',';
	for (p = opt; *p; p++) {
		if (escape && (*p == ',' || *p == '\\'))
			s[n++] = '\\';
		s[n++] = *p;
	}
	s[n] = '\0';
	*opts = s;
	return 0;
}

EXPORT int fuse_opt_add_opt(char **opts, const char *opt)
{
	return add_opt(opts, opt, false);
}

EXPORT int fuse_opt_add_opt_escaped(char **opts, const char *opt)
{
	return add_opt(opts, opt, true);
}

/*
 * Does template @t match @arg? Its parameter, if it takes one, starts at
 * *param (in @arg; "" where "-x " stands alone and the next argument is
 * the parameter). A template takes a parameter where an '=' or a ' ' ends
 * its name and nothing or a '%' format follows: "name=" matches "name=..."
 * (the parameter after the '='), "-x " matches "-x" and "-x..." (the
 * parameter after the name); any other template matches only itself.
 */
static bool match(const char *t, const char *arg, const char **param, const char **format)
{
	const char *sep = strchr(t, '=');
	size_t n;

	if (!sep)
		sep = strchr(t, ' ');
	*format = NULL;
	if (sep && (!sep[1] || sep[1] == '%')) {
		n = (size_t)(sep - t) + (*sep == '=');
		if (strncmp(arg, t, n) == 0) {
			*param = arg + n;
			*format = sep[1] ? sep + 1 : NULL;
			return true;
		}
	}
	*param = NULL;
	return strcmp(t, arg) == 0;
}

EXPORT int fuse_opt_match(const struct fuse_opt opts[], const char *opt)
{
	const char *param, *format;

	for (; opts && opts->templ && opt; opts++)
		if (match(opts->templ, opt, &param, &format))
			return 1;
	return 0;
}

struct parse {
	void *data;
	const struct fuse_opt *opts;
	fuse_opt_proc_t proc;
	struct fuse_args out;
	char *o; /* the kept "-o" options, escaped, comma-separated */
	int argc;
	char **argv;
	int i; /* the argument being parsed */
	bool nonopt; /* past "--": every argument is a non-option */
};

/* Keep @arg: an "-o" option (@in_o) into the "-o" list, else as it is. */
static int keep(struct parse *p, const char *arg, bool in_o)
{
	return in_o ? fuse_opt_add_opt_escaped(&p->o, arg) : fuse_opt_add_arg(&p->out, arg);
}

/* What the program's function says of @arg under @key: an error (-1),
 * dropped (0) or kept (anything else). FUSE_OPT_KEY_KEEP and _DISCARD
 * decide without it; with no function, everything is kept. */
static int call(struct parse *p, const char *arg, int key, bool in_o)
{
	int r;

	if (key == FUSE_OPT_KEY_DISCARD)
		return 0;
	if (key != FUSE_OPT_KEY_KEEP && p->proc) {
		r = p->proc(p->data, arg, key, &p->out);
		if (r == -1 || r == 0)
			return r;
	}
	return keep(p, arg, in_o) < 0 ? -1 : 1;
}

/* Store @param into the program's structure at @o's offset, as its
 * template's format says ("%s" allocates, freeing what was there). */
static int store(struct parse *p, const struct fuse_opt *o, const char *param, const char *format,
		 const char *arg)
{
	void *at = (char *)p->data + o->offset;

	if (strcmp(format, "%s") == 0) {
		char *s = strdup(param);

		if (!s)
			return nomem();
		free(*(char **)at);
		*(char **)at = s;
		return 0;
	}
	if (sscanf(param, format, at) != 1) {
		fuse_log(FUSE_LOG_ERR, "fuse: invalid parameter in option `%s'\n", arg);
		return -1;
	}
	return 0;
}

/*
 * One option, from the command line (@in_o false) or from an "-o" list.
 * Every template that matches acts, in order; one that matches none goes
 * to the program's function as FUSE_OPT_KEY_OPT.
 */
static int option(struct parse *p, const char *arg, bool in_o)
{
	const struct fuse_opt *o;
	const char *param, *format;
	char *joined = NULL;
	bool matched = false;
	int r = 0;

	for (o = p->opts; o && o->templ; o++) {
		const char *full = arg;

		if (!match(o->templ, arg, &param, &format))
			continue;
		matched = true;
		if (param && !*param && !in_o && strchr(o->templ, ' ') && !strchr(o->templ, '=')) {
			/* "-x " alone: the next argument is the parameter, and
			 * the program's function sees both as one, "-xparam" */
			if (!joined) {
				if (p->i + 1 >= p->argc) {
					fuse_log(FUSE_LOG_ERR,
						 "fuse: missing argument after `%s'\n", arg);
					r = -1;
					break;
				}
				p->i++;
				joined = malloc(strlen(arg) + strlen(p->argv[p->i]) + 1);
				if (!joined) {
					r = nomem();
					break;
				}
				strcpy(joined, arg);
				strcat(joined, p->argv[p->i]);
			}
			full = joined;
			param = joined + strlen(arg);
		}
		if (o->offset == KEY_OFFSET) {
			r = call(p, full, o->value, in_o);
		} else if (format) {
			r = store(p, o, param, format, full);
		} else {
			*(int *)(void *)((char *)p->data + o->offset) = o->value;
			r = 0;
		}
		if (r < 0)
			break;
	}
	free(joined);
	if (r < 0)
		return -1;
	if (!matched)
		return call(p, arg, FUSE_OPT_KEY_OPT, in_o) < 0 ? -1 : 0;
	return 0;
}

/* "a,b\,c": each option in turn, a backslash taking the next character
 * as it is */
static int option_list(struct parse *p, const char *list)
{
	char *buf = malloc(strlen(list) + 1), *d;
	const char *s = list;
	int r = 0;

	if (!buf)
		return nomem();
	while (!r) {
		for (d = buf; *s && *s != ','; s++) {
			if (*s == '\\' && s[1])
				s++;
			*d++ = *s;
		}
		*d = '\0';
		r = option(p, buf, true);
		if (!*s)
			break;
		s++;
	}
	free(buf);
	return r;
}

static int argument(struct parse *p)
{
	const char *arg = p->argv[p->i];

	if (p->nonopt || arg[0] != '-')
		return call(p, arg, FUSE_OPT_KEY_NONOPT, false) < 0 ? -1 : 0;
	if (arg[1] == 'o') {
		if (arg[2])
			return option_list(p, arg + 2);
		if (p->i + 1 >= p->argc) {
			fuse_log(FUSE_LOG_ERR, "fuse: missing argument after `-o'\n");
			return -1;
		}
		return option_list(p, p->argv[++p->i]);
	}
	if (strcmp(arg, "--") == 0) {
		p->nonopt = true;
		return fuse_opt_add_arg(&p->out, arg);
	}
	return option(p, arg, false);
}

EXPORT int fuse_opt_parse(struct fuse_args *args, void *data, const struct fuse_opt opts[],
			  fuse_opt_proc_t proc)
{
	struct parse p = { .data = data, .opts = opts, .proc = proc };
	int r = 0;

	if (!args || !args->argv || !args->argc)
		return 0;
	p.argc = args->argc;
	p.argv = args->argv;
	if (fuse_opt_add_arg(&p.out, args->argv[0]) < 0)
		return -1;
	for (p.i = 1; p.i < p.argc && !r; p.i++)
		r = argument(&p);
	/* a "--" with nothing kept after it is dropped, unless "-o" options
	 * were kept (libfuse tells by the argument count, which the "-o"
	 * pair then has moved on by two) */
	if (!r && p.nonopt && !p.o && strcmp(p.out.argv[p.out.argc - 1], "--") == 0) {
		free(p.out.argv[--p.out.argc]);
		p.out.argv[p.out.argc] = NULL;
	}
	if (!r && p.o)
		r = fuse_opt_insert_arg(&p.out, 1, "-o") < 0 ||
				    fuse_opt_insert_arg(&p.out, 2, p.o) < 0
			    ? -1
			    : 0;
	free(p.o);
	if (r) {
		fuse_opt_free_args(&p.out);
		return -1;
	}
	fuse_opt_free_args(args);
	*args = p.out;
	return 0;
}
