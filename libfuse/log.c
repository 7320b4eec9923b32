// SPDX-License-Identifier: MIT
/*
 * libfuse's log: every message of this library goes through fuse_log, to
 * standard error (the broker's log of the tenant) or to the function the
 * program installs, as in libfuse.
 */
#include <stdarg.h>
#include <stdio.h>

#include "libfuse_i.h"

#define EXPORT __attribute__((visibility("default")))

static void to_stderr(enum fuse_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	vfprintf(stderr, fmt, ap);
}

static fuse_log_func_t log_func = to_stderr;

EXPORT void fuse_set_log_func(fuse_log_func_t func)
{
	__atomic_store_n(&log_func, func ? func : to_stderr, __ATOMIC_RELEASE);
}

EXPORT void fuse_log(enum fuse_log_level level, const char *fmt, ...)
{
	fuse_log_func_t f = __atomic_load_n(&log_func, __ATOMIC_ACQUIRE);
	va_list ap;

	va_start(ap, fmt);
	f(level, fmt, ap);
	va_end(ap);
}

/* syslog instead of standard error (libfuse 3.17): a program tenant has
 * no syslog socket, and its standard error is the tenant's log already,
 * so its messages stay there. */
EXPORT void fuse_log_enable_syslog(const char *ident, int option, int facility)
{
	(void)ident;
	(void)option;
	(void)facility;
}

EXPORT void fuse_log_close_syslog(void)
{
}
