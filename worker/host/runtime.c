// SPDX-License-Identifier: MIT
/*
 * The runtime of a program tenant's plugin host: libringfence-plugin.so.1
 * in ringfence's libfuse directory, which ringfence's libfuse3.so.3 needs
 * and so the program loads.
 *
 * The host starts the program in its own process (uexec.c) once it is in
 * its sandbox, the tenant's seccomp policy included: its worker
 * structure, its rings and the pool stay mapped as the host left them,
 * and the program's environment says where the structure is. This library
 * is a second copy of the host's code (host.c, plugin/, the channel),
 * called from the program's C library: nothing of the first copy runs
 * again, and the structure's function pointers are replaced by this
 * copy's. When the program starts its session's loop, the session becomes
 * the host's plugin, initialised, restored and served by the queue
 * threads as any plugin is; the loop returns when the keeper says STOP.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "report.h"
#include "runtime.h"
#include "worker.h"
#include "host.h"
#include "plugin/restore.h"

#define EXPORT __attribute__((visibility("default")))

static struct rf_worker *host;

/* The worker the host left, if this process is one: from the
 * environment, checked to be of this build's layout. */
__attribute__((constructor)) static void runtime_start(void)
{
	const char *s = getenv(RF_HOST_ENV);
	unsigned long long addr, size, version;
	int used = 0;

	if (!s)
		return;
	if (sscanf(s, "%llx %llu %llu%n", &addr, &size, &version, &used) != 3 || s[used] != '\0' ||
	    !addr || size != sizeof(struct rf_worker) || version != RF_IPC_VERSION)
		return; /* another build's host: nothing to serve (libfuse/loop.c says) */
	host = (struct rf_worker *)(uintptr_t)addr;
	unsetenv(RF_HOST_ENV);
	log_init("ringfence-worker", 1, RF_LOG_INFO);
	rf_report_to(host->ipc_fd);
}

EXPORT int rf_host_program_serve(const struct rf_plugin *p)
{
	static struct rf_plugin plugin;
	char why[256];
	int err;

	if (!host)
		return -ENOTCONN;
	if (host->plugin == &plugin)
		return -EBUSY;
	memcpy(&plugin, p, p->struct_size < sizeof(plugin) ? p->struct_size : sizeof(plugin));
	plugin.name = host->cfg.plugin; /* the program, in what the host logs */
	host->plugin = &plugin;
	host->side = &rf_host_side;
	err = rf_plugin_init(host);
	if (err)
		rf_report_fail(err, "program %s: its session's init", host->cfg.plugin);
	err = rf_restore_start(host, why, sizeof(why));
	if (err < 0)
		rf_report_fail(-err, "%s", why);
	rf_host_run(host);
	return 0;
}
