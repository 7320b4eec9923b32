/* SPDX-License-Identifier: MIT */
/*
 * The plugin host (host.c says what it is): what the worker's start-up
 * asks of it, in the host's own process after the fork.
 */
#ifndef RINGFENCE_HOST_H
#define RINGFENCE_HOST_H

#include "worker.h"

extern const struct rf_side rf_host_side;

/* The host's part of the fork: the keeper's parts let go of, its rings
 * enabled, the pool's records mapped read-only (0, or -errno with what
 * in @why); @again for a host the keeper starts after a death. */
int rf_host_enter(struct rf_worker *w, bool again, char *why, size_t len);
/* The host's last act, the worker's or a program's runtime's: serve until
 * the keeper says STOP (a queue thread each), then the plugin's destroy
 * and its restore tables closed. */
void rf_host_run(struct rf_worker *w);

#endif /* RINGFENCE_HOST_H */
