// SPDX-License-Identifier: MIT
/*
 * The seen table and the list of request ids a successor asks its queues
 * for (worker/queue.c, rescue()). Pure: the unit tests drive it.
 */
#include <stdlib.h>

#include "log.h"
#include "worker.h"

/* Ids grow by 2 per request from 2 and never reach this in a mount's life;
 * a probe carries its id in user_data above a 3-bit tag (queue.c), so it
 * must stay below 2^61. */
#define RF_SEEN_ID_MAX (1ULL << 60)

void rf_seen_record(struct rf_worker *w, uint64_t id)
{
	if (!(id & 1)) /* an odd id is an interrupt's: its request's id | 1 */
		__atomic_store_n(&w->seen[(id >> 1) % RF_SEEN_IDS], id, __ATOMIC_RELAXED);
}

bool rf_seen(const struct rf_worker *w, uint64_t id)
{
	return __atomic_load_n(&w->seen[(id >> 1) % RF_SEEN_IDS], __ATOMIC_RELAXED) == id;
}

void rf_rescue_plan(struct rf_worker *w)
{
	uint64_t hi = 0, lo = UINT64_MAX, ahead, id;
	uint32_t i, n = 0;

	/* the table is in memory a dead plugin could write: take only even
	 * ids in a sane range, so that nothing below can overflow */
	for (i = 0; i < RF_SEEN_IDS; i++) {
		id = w->seen[i];
		if (!id || (id & 1) || id > RF_SEEN_ID_MAX)
			continue;
		if (id > hi)
			hi = id;
		if (id < lo)
			lo = id;
	}
	if (!hi)
		return;
	if (hi - lo > 2ULL * (RF_SEEN_IDS - 1))
		lo = hi - 2ULL * (RF_SEEN_IDS - 1);
	/* past the newest id received: at most one lost request per entry,
	 * behind the requests that were queued when the worker died */
	ahead = 2ULL * (w->geom.nslots + 16);
	w->rescue = calloc((hi + ahead - lo) / 2 + 1, sizeof(*w->rescue));
	w->rescue_misses = calloc((hi + ahead - lo) / 2 + 1, sizeof(*w->rescue_misses));
	if (!w->rescue || !w->rescue_misses)
		fatal("calloc");
	w->rescue_hi = hi;
	for (id = hi + ahead; id >= lo; id -= 2)
		if (!rf_seen(w, id))
			w->rescue[n++] = id;
	w->nrescue = n;
}
