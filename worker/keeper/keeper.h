/* SPDX-License-Identifier: MIT */
/*
 * The keeper (host/host.c says what the two processes are): what the
 * worker's main thread asks of it. Its files and their order are in
 * keeper_i.h.
 */
#ifndef RINGFENCE_KEEPER_H
#define RINGFENCE_KEEPER_H

#include "worker.h"

extern const struct rf_side rf_keeper_side;

/* loop.c: start every queue's thread and wait until each has enabled its
 * ring, added its queue and pool and dropped its own privileges, while
 * the process is still root (0, or -errno with the queue and step in
 * @why); then, once the whole process has dropped them and the plugin
 * host serves, let them register their entries and serve (returns when
 * every queue has). */
int rf_queues_prepare(struct rf_worker *w, char *why, size_t len);
void rf_queues_serve(struct rf_worker *w);

/* plugin_host.c, the keeper's end of its host: before the fork, as root,
 * the host's channels and rings (0, or -errno with what in @why), and
 * after it the keeper lets go of the host's parts; then the host is
 * waited for at start, told PING and STOP, reaped; a host that died
 * ends the keeper with its status (rf_host_lost does not return).
 * host_restart: a thread of its own reaps each host and tells the queue
 * threads and the broker (rf_host_reaper_start); the main thread starts
 * the next host on the broker's HOST_START (rf_host_respawn; the child
 * returns 0 from it, to become the new host). */
int rf_host_prepare(struct rf_worker *w, char *why, size_t len);
void rf_host_forked_keeper(struct rf_worker *w);
/* A program's output, its lines logged ("program: LINE"), by a thread of
 * the keeper's, from its sandbox on; nothing for a plugin's. */
void rf_host_output_start(struct rf_worker *w);
/* --learn-seccomp, a program's: each host's listener answered by the
 * keeper (rf_learn_adopt), from its sandbox on; nothing otherwise. */
void rf_host_learn_start(struct rf_worker *w);
void rf_host_wait_ready(struct rf_worker *w);
void rf_host_broadcast(struct rf_worker *w, uint8_t kind, uint64_t a);
void rf_host_reap(struct rf_worker *w);
void rf_host_lost(struct rf_worker *w, const char *why) __attribute__((noreturn));
void rf_host_reaper_start(struct rf_worker *w);
pid_t rf_host_respawn(struct rf_worker *w, uint32_t generation);

/* rescue.c: a successor's list of the ids in its range that no worker
 * received, newest first, plus the next 2 * (nslots + 16) ids past the
 * newest received (fewer once the kernel's count is known). */
void rf_rescue_plan(struct rf_worker *w);

/* rescue.c: what bounds that list, read from the kernel's count of its
 * requests (w->waiting_fd) once the keeper's set-up is done, and closed;
 * rf_rescue_budget is the pure part, over a count already read (-1: none). */
void rf_rescue_bound(struct rf_worker *w);
void rf_rescue_budget(struct rf_worker *w, int64_t waiting);

/* data.c: whether the source is on a memory file system (once, at
 * start; for the host's transfers too) */
void rf_data_probe_source(struct rf_worker *w);

#endif /* RINGFENCE_KEEPER_H */
