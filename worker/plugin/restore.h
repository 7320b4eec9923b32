/* SPDX-License-Identifier: MIT */
/*
 * Node ids and open files that outlive a worker (policy restore_nodes;
 * plugin.h, struct rf_restore_node, says what a plugin sees). Two tables
 * of records (nodetab.h) in the mount's state memory: for each node id the
 * kernel holds, the parent and name it was last reached by, its st_ino and
 * type, and the kernel's count of lookups; for each open file, its node
 * and open flags. A successor restores them before serving and maps the
 * dead generation's ids to its plugin's (restored nodes only; its own ids
 * carry its own generation, worker.h). All calls are no-ops without a
 * table (w->restore NULL) but rf_restore_start.
 */
#ifndef RINGFENCE_RESTORE_H
#define RINGFENCE_RESTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct rf_worker;
struct rf_req;

/* Open the tables in w->restore_mem and restore what a predecessor left,
 * through the plugin's hooks; after init(), before any request. 0, or
 * under cfg.restore_strict (an upgrade) -ESTALE with the reason in @why
 * when anything could not be restored: the tables are left as they were. */
int rf_restore_start(struct rf_worker *w, char *why, size_t len);
/* Free what rf_restore_start made (the tables stay in the memory). */
void rf_restore_stop(struct rf_worker *w);
/* The kernel id of plugin node @pid in an entry reply to @req, found as
 * @name in the request's directory (req->kid): recorded and counted as one
 * lookup. 0 for an id that cannot be sent. */
uint64_t rf_restore_entry(struct rf_req *req, uint64_t pid, const char *name,
			  const struct stat *st);
/* An open file handed to the kernel as @kfh, of node @kid. */
void rf_restore_opened(struct rf_req *req, uint64_t kid, uint64_t kfh);
/* A dead generation's node id or file handle: whether it was restored,
 * and as what. */
bool rf_restore_id_in(struct rf_worker *w, uint64_t kid, uint64_t *pid);
bool rf_restore_fh_in(struct rf_worker *w, uint64_t kfh, uint64_t *fh);
/* FORGET of @n lookups of @kid: the plugin's id to forget them of, or 0. */
uint64_t rf_restore_forget(struct rf_worker *w, uint64_t kid, uint64_t n);
/* RELEASE or RELEASEDIR of @kfh, before the plugin sees it. */
void rf_restore_release(struct rf_worker *w, uint64_t kfh);
/* A successful RENAME, UNLINK or RMDIR of @req, before its reply. */
void rf_restore_moved(struct rf_req *req);

#endif /* RINGFENCE_RESTORE_H */
