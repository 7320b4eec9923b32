/* SPDX-License-Identifier: MIT */
/* How a mount talks to the kernel: one name per transport for the policy,
 * the broker, the worker and the wire (CONFIG, the pool's header). */
#ifndef RINGFENCE_TRANSPORT_H
#define RINGFENCE_TRANSPORT_H

enum rf_transport {
	RF_TRANSPORT_AUTO = 0, /* the policy's only: io-uring where the kernel offers it */
	RF_TRANSPORT_URING = 1, /* FUSE over io-uring */
	RF_TRANSPORT_CLASSIC = 2, /* /dev/fuse */
};

/* "auto", "uring", "classic"; "none" for anything else */
const char *rf_transport_name(enum rf_transport t);

#endif /* RINGFENCE_TRANSPORT_H */
