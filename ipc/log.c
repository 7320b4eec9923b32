// SPDX-License-Identifier: MIT
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <syslog.h>
#include <unistd.h>

static const char *log_ident = "ringfence";
static char log_prefix[96];
static int log_stderr = 1;
static int log_level = RF_LOG_INFO;
static rf_log_sink_fn log_sink;

void log_init(const char *ident, int to_stderr, int max_level)
{
	log_ident = ident;
	log_stderr = to_stderr;
	log_level = max_level;
	if (!to_stderr)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_sink(rf_log_sink_fn sink)
{
	log_sink = sink;
}

void log_set_prefix(const char *prefix)
{
	snprintf(log_prefix, sizeof(log_prefix), "%s", prefix ? prefix : "");
}

int log_get_level(void)
{
	return log_level;
}

void log_escape(const char *in, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!outlen)
		return;
	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;
		bool plain = c >= 0x20 && c != 0x7f && c != '\\';

		if (o + (plain ? 1 : 4) >= outlen)
			break;
		if (plain) {
			out[o++] = (char)c;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 15];
	}
	out[o] = '\0';
}

void log_vmsg(int level, const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	if (level > log_level)
		return;
	n = snprintf(line, sizeof(line), "%s", log_prefix);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (log_sink) {
		log_sink(level, line);
		return;
	}
	if (log_stderr) {
		/* one write per line keeps lines from several threads whole */
		char out[1200];
		int len =
			snprintf(out, sizeof(out), "%s[%d]: %s\n", log_ident, (int)getpid(), line);

		if (len > 0) {
			ssize_t w =
				write(STDERR_FILENO, out,
				      (size_t)len < sizeof(out) ? (size_t)len : sizeof(out) - 1);
			(void)w;
		}
	} else {
		syslog(level, "%s", line);
	}
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

static void log_errno(int level, int saved, const char *fmt, va_list ap)
{
	char buf[900];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	log_msg(level, "%s: %s", buf, strerror(saved));
}

void log_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_errno(RF_LOG_WARN, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

void log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(RF_LOG_WARN, fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(RF_LOG_INFO, fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(RF_LOG_DEBUG, fmt, ap);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_errno(RF_LOG_ERR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(RF_LOG_ERR, fmt, ap);
	va_end(ap);
	exit(1);
}
