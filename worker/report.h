/* SPDX-License-Identifier: MIT */
/* What a worker process tells the broker on its channel (report.c). */
#ifndef RINGFENCE_REPORT_H
#define RINGFENCE_REPORT_H

/* Log lines go to the broker on @ipc_fd from now on (RF_MSG_LOG), or to
 * standard error once the broker is gone. */
void rf_report_to(int ipc_fd);
/* The worker's start-up failed: FAILED with @err and the reason, a log
 * line, exit(1). */
void rf_report_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

#endif /* RINGFENCE_REPORT_H */
