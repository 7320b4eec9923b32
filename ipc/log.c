// SPDX-License-Identifier: MIT
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Length of the well-formed UTF-8 sequence at @s (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), 0 if there is none; C1
 * controls (U+0080..U+009F) count as none, terminals act on them. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, lo = s[0] == 0xc2 ? 0xa0 : 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

void log_escape(const char *in, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0, n;

	if (!outlen)
		return;
	while (*s) {
		if (*s >= 0x20 && *s < 0x7f && *s != '\\')
			n = 1;
		else if (*s >= 0x80)
			n = utf8_len(s);
		else
			n = 0;
		if (o + (n ? n : 4) >= outlen)
			break;
		if (n) {
			memcpy(out + o, s, n);
			o += n;
			s += n;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[*s >> 4];
		out[o++] = hex[*s & 15];
		s++;
	}
	out[o] = '\0';
}

bool log_rate_take(struct log_rate *r, uint64_t now_ms, uint32_t burst, uint32_t rate)
{
	uint64_t add;

	if (!r->started || r->tokens > burst) {
		r->started = true;
		r->tokens = burst;
		r->refill_ms = now_ms;
	}
	add = now_ms > r->refill_ms ? (now_ms - r->refill_ms) * rate / 1000 : 0;
	if (add) {
		r->tokens = add >= burst - r->tokens ? burst : r->tokens + (uint32_t)add;
		r->refill_ms += add * 1000 / rate;
	}
	if (!r->tokens)
		return false;
	r->tokens--;
	return true;
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
