/* SPDX-License-Identifier: MIT */
/* A line in the broker's log from a test plugin, through the worker's
 * channel (fd 3): the plugins that attack the framework know it. */
#ifndef RINGFENCE_TESTLOG_H
#define RINGFENCE_TESTLOG_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "msg.h"

static void test_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void test_log(const char *fmt, ...)
{
	char buf[sizeof(struct rf_msg_log) + 256];
	struct rf_msg_log *l = (struct rf_msg_log *)buf;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->line, 256, fmt, ap);
	va_end(ap);
	l->level = 6;
	rf_msg_send(3, RF_MSG_LOG, 0, l, sizeof(*l) + strlen(l->line) + 1, NULL, 0);
}

#endif /* RINGFENCE_TESTLOG_H */
