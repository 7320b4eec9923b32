/* SPDX-License-Identifier: MIT */
/*
 * Logging in the style of OpenBSD's log.c: log_warn() appends strerror(errno),
 * log_warnx() does not; fatal()/fatalx() log and exit(1).
 *
 * Lines go to stderr (foreground) or syslog. A process may install a sink
 * instead (the worker sends its lines to the broker over IPC).
 */
#ifndef RINGFENCE_LOG_H
#define RINGFENCE_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rf_log_level {
	RF_LOG_ERR = 3,
	RF_LOG_WARN = 4,
	RF_LOG_INFO = 6,
	RF_LOG_DEBUG = 7,
};

typedef void (*rf_log_sink_fn)(int level, const char *line);

/* @ident prefixes every line; @to_stderr chooses stderr over syslog;
 * messages above @max_level are dropped. */
void log_init(const char *ident, int to_stderr, int max_level);
void log_set_sink(rf_log_sink_fn sink);
void log_set_prefix(const char *prefix);
int log_get_level(void);

/* Copy @in to @out, NUL-terminated and cut to @outlen, with every byte
 * below 0x20, DEL, the backslash and every byte not in well-formed UTF-8
 * (C1 controls included) written as \xNN: text from a worker can then
 * neither begin a log line of its own, nor drive a terminal, nor make
 * JSON output invalid. */
void log_escape(const char *in, char *out, size_t outlen);

/* A token bucket for lines from a source the log cannot trust to be
 * quiet: @burst lines at once, then @rate a second, both given by each
 * log_rate_take. Zeroed, it is full. */
struct log_rate {
	bool started;
	uint32_t tokens;
	uint64_t refill_ms;
};

/* true if one more line may go at @now_ms (a monotonic clock's
 * milliseconds), and takes its token */
bool log_rate_take(struct log_rate *r, uint64_t now_ms, uint32_t burst, uint32_t rate);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif /* RINGFENCE_LOG_H */
