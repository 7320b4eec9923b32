// SPDX-License-Identifier: MIT
/*
 * A worker process's log lines and its failure, as messages to the broker
 * on its channel. The keeper and the plugin host each have one (the
 * host's own since the fork), and a program tenant's host a second copy of
 * this file, in its runtime library (host/runtime.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "msg.h"
#include "report.h"

static int report_fd = -1;

static void ipc_log_sink(int level, const char *line)
{
	char buf[sizeof(struct rf_msg_log) + 1024];
	struct rf_msg_log *l = (struct rf_msg_log *)buf;
	size_t n = strnlen(line, 1023);

	l->level = (uint32_t)level;
	memcpy(l->line, line, n);
	l->line[n] = '\0';
	if (rf_msg_send(report_fd, RF_MSG_LOG, 0, l, sizeof(*l) + n + 1, NULL, 0) < 0) {
		/* the broker is gone: stderr (/dev/null, or a terminal when
		 * run by hand) is all that is left */
		ssize_t w = write(STDERR_FILENO, line, n);

		(void)w;
	}
}

void rf_report_to(int ipc_fd)
{
	report_fd = ipc_fd;
	log_set_sink(ipc_log_sink);
}

void rf_report_fail(int err, const char *fmt, ...)
{
	char buf[sizeof(struct rf_msg_failed) + 512];
	struct rf_msg_failed *f = (struct rf_msg_failed *)buf;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(f->what, 512, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > 511)
		n = 511;
	/* one line (errors from a parser come one per line); the broker would
	 * show a newline escaped */
	while (n > 0 && f->what[n - 1] == '\n')
		f->what[--n] = '\0';
	for (char *c = f->what; (c = strchr(c, '\n')); c++)
		*c = ' ';
	f->error = err;
	rf_msg_send(report_fd, RF_MSG_FAILED, 0, f, sizeof(*f) + (size_t)n + 1, NULL, 0);
	log_warnx("%s: %s", f->what, strerror(err));
	exit(1);
}
