/* SPDX-License-Identifier: MIT */
/*
 * What ps shows of a worker process (title.c): the argv the broker gave
 * the keeper ("ringfence-worker: keeper TENANT --ipc-fd 3"), rewritten in
 * place to name the process's part, and its comm (top, /proc/PID/comm).
 */
#ifndef RINGFENCE_TITLE_H
#define RINGFENCE_TITLE_H

/* Remember the argv area the kernel reports as /proc/self/cmdline. */
void rf_title_init(int argc, char **argv);
/* "ringfence-worker: @role @tenant" there (cut to the area's length), the
 * rest of it cleared; and "rf-@role" as the comm. */
void rf_title_set(const char *role, const char *tenant);

#endif /* RINGFENCE_TITLE_H */
