/* SPDX-License-Identifier: MIT */
/*
 * A program tenant's plugin host and its runtime (runtime.c): how the
 * host hands its worker to the runtime the program loads.
 */
#ifndef RINGFENCE_RUNTIME_H
#define RINGFENCE_RUNTIME_H

#include <stddef.h>

/* in the program's environment: "ADDRESS SIZE VERSION", the worker's
 * address, sizeof(struct rf_worker) and RF_IPC_VERSION of the host that
 * started it, which the runtime checks are its own */
#define RF_HOST_ENV "RINGFENCE_HOST"
/* the program's library directory (libfuse3.so.3, this runtime) in the
 * sandbox's root */
#define RF_SANDBOX_LIBDIR "/ringfence"

/* in a program's arguments (program_args): the mount point's place, for
 * a program that wants other arguments before it */
#define RF_MOUNTPOINT_WORD "{mountpoint}"

struct rf_plugin;

/* The runtime's entry, which the program's libfuse3.so.3 finds by name
 * (libfuse/loop.c): serve @p (the program's session as a plugin) until
 * the keeper says STOP; 0, or -ENOTCONN outside a ringfence plugin host,
 * -EBUSY if called again. A failure to start ends the process. */
int rf_host_program_serve(const struct rf_plugin *p);

#endif /* RINGFENCE_RUNTIME_H */
