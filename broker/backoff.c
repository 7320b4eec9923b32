// SPDX-License-Identifier: MIT
/* What a worker's death means for its tenant: how soon a successor, or
 * whether the plugin has died too often. Pure: check_backoff drives it. */
#include "broker.h"

struct rf_backoff rf_backoff_after_death(time_t *deaths, unsigned int limit, unsigned int window,
					 unsigned int crashes, time_t now)
{
	struct rf_backoff b = { 0, 0, false };
	unsigned int i;

	/* a ring of the last @limit deaths; this one is death number @crashes */
	deaths[(crashes - 1) % limit] = now;
	for (i = 0; i < limit && i < crashes; i++)
		if (now - deaths[i] < (time_t)window)
			b.recent++;
	if (b.recent >= limit) {
		b.crash_loop = true; /* the EIO responder's turn */
		return b;
	}
	/* a first death (none other within the window) at once: with node ids
	 * and open files restored, its clients wait only for the successor's
	 * start; then 100 ms, 200 ms, 400 ms, ... for deaths close together,
	 * at most 3.2 s */
	b.delay_ms = b.recent <= 1 ? 0 : 100L << (b.recent > 7 ? 5 : b.recent - 2);
	return b;
}
