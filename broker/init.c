// SPDX-License-Identifier: MIT
/* FUSE_INIT: what the broker answers. Pure, so the unit tests drive it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "broker.h"

/* What a passthrough-style server can honour whatever the plugin. Locking
 * flags stay off: the kernel then keeps POSIX and flock locks locally. */
#define RF_WANTED_FLAGS                                                                      \
	(FUSE_ASYNC_READ | FUSE_ATOMIC_O_TRUNC | FUSE_BIG_WRITES | FUSE_AUTO_INVAL_DATA |    \
	 FUSE_ASYNC_DIO | FUSE_PARALLEL_DIROPS | FUSE_ABORT_ERROR | FUSE_MAX_PAGES |         \
	 FUSE_CACHE_SYMLINKS | FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO | FUSE_INIT_EXT | \
	 FUSE_DIRECT_IO_ALLOW_MMAP)

/* The kernel's own page count when FUSE_MAX_PAGES is not negotiated. */
#define RF_KERNEL_DEFAULT_MAX_PAGES 32

int rf_init_negotiate(const struct fuse_init_in *in, const struct rf_mount_policy *p,
		      uint32_t max_pages_limit, struct fuse_init_out *out,
		      struct rf_conn_params *cp)
{
	uint64_t offered, flags;
	uint32_t max_pages, max_write, payload;
	int uring_offered;

	memset(out, 0, sizeof(*out));
	memset(cp, 0, sizeof(*cp));
	if (in->major != FUSE_KERNEL_VERSION) {
		snprintf(cp->why, sizeof(cp->why), "kernel speaks FUSE %u.%u; ringfence needs 7.x",
			 in->major, in->minor);
		return -EPROTO;
	}
	cp->minor = in->minor < FUSE_KERNEL_MINOR_VERSION ? in->minor : FUSE_KERNEL_MINOR_VERSION;
	if (cp->minor < 36) {
		snprintf(cp->why, sizeof(cp->why),
			 "kernel speaks FUSE 7.%u; ringfence needs 7.36 or later", in->minor);
		return -EPROTO;
	}
	offered = in->flags;
	if (in->flags & FUSE_INIT_EXT)
		offered |= (uint64_t)in->flags2 << 32;

	uring_offered = cp->minor >= 42 && (offered & FUSE_OVER_IO_URING);
	switch (p->transport) {
	case RF_TRANSPORT_CLASSIC:
		cp->transport = RF_TRANSPORT_CLASSIC;
		snprintf(cp->why, sizeof(cp->why), "classic: chosen by the policy");
		break;
	case RF_TRANSPORT_URING:
		if (!uring_offered) {
			snprintf(cp->why, sizeof(cp->why),
				 "transport = uring, but the kernel did not offer "
				 "FUSE_OVER_IO_URING "
				 "(protocol 7.%u; is /sys/module/fuse/parameters/enable_uring Y?)",
				 in->minor);
			return -EOPNOTSUPP;
		}
		cp->transport = RF_TRANSPORT_URING;
		snprintf(cp->why, sizeof(cp->why), "io-uring: chosen by the policy");
		break;
	case RF_TRANSPORT_AUTO:
	default:
		if (uring_offered) {
			cp->transport = RF_TRANSPORT_URING;
			snprintf(cp->why, sizeof(cp->why), "io-uring: offered by the kernel");
		} else {
			cp->transport = RF_TRANSPORT_CLASSIC;
			snprintf(cp->why, sizeof(cp->why),
				 "classic: the kernel did not offer FUSE_OVER_IO_URING "
				 "(protocol 7.%u; /sys/module/fuse/parameters/enable_uring off?)",
				 in->minor);
		}
		break;
	}

	/* a capability of the kernel, not a feature to ask for: the queues
	 * take pools if the broker adds them */
	cp->bufpool_offered = cp->transport == RF_TRANSPORT_URING && cp->minor >= 46 &&
			      (offered & FUSE_HAS_IO_URING_BUFPOOL);
	if (p->bufpool == RF_FEATURE_ON && !cp->bufpool_offered) {
		snprintf(cp->why, sizeof(cp->why),
			 "bufpool = on, but the kernel offers no FUSE io-uring buffer pools "
			 "(protocol 7.%u over %s; they need 7.46, Linux 7.3)",
			 in->minor, cp->transport == RF_TRANSPORT_URING ? "io-uring" : "/dev/fuse");
		return -EOPNOTSUPP;
	}
	cp->bufpool = cp->bufpool_offered && p->bufpool != RF_FEATURE_OFF;
	/* zero copy comes with the pools (a zero-copy queue must have one);
	 * the worker's start-up, still privileged, asks for it per queue */
	if (p->zero_copy == RF_FEATURE_ON && !cp->bufpool) {
		snprintf(cp->why, sizeof(cp->why),
			 "zero_copy = on, but %s (protocol 7.%u over %s; zero copy needs them: "
			 "7.46, Linux 7.3)",
			 cp->bufpool_offered ? "bufpool is off"
					     : "the kernel offers no FUSE io-uring buffer pools",
			 in->minor, cp->transport == RF_TRANSPORT_URING ? "io-uring" : "/dev/fuse");
		return -EOPNOTSUPP;
	}
	cp->zero_copy = cp->bufpool && p->zero_copy != RF_FEATURE_OFF;

	flags = RF_WANTED_FLAGS;
	if (cp->transport == RF_TRANSPORT_URING)
		flags |= FUSE_OVER_IO_URING;
	if (p->handle_killpriv)
		flags |= FUSE_HANDLE_KILLPRIV_V2;
	/* The kernel's own request timeout (7.43, Linux 6.14) backs the
	 * watchdog, judging from the kernel's state alone, which a plugin
	 * cannot write: a request unanswered for its time aborts the whole
	 * connection (clients get an error, the broker gives the tenant up),
	 * so by default it is set well past anything a recovery takes: the
	 * watchdog's request_timeout, a successor's start_timeout, the
	 * heartbeat's, and a minute; none for a tenant in development (debug),
	 * whose plugin host may sit stopped in a debugger. */
	if (cp->minor >= 43) {
		uint64_t k = p->kernel_timeout;

		if (k == RF_KERNEL_TIMEOUT_AUTO)
			k = p->request_timeout && !p->debug
				    ? (uint64_t)p->request_timeout + p->start_timeout +
					      p->heartbeat_timeout + RF_KERNEL_TIMEOUT_SLACK
				    : 0;
		cp->kernel_timeout = (uint16_t)(k > UINT16_MAX ? UINT16_MAX : k);
		if (cp->kernel_timeout)
			flags |= FUSE_REQUEST_TIMEOUT;
	}
	flags &= offered;
	flags |= offered & FUSE_INIT_EXT;
	if (!(flags & FUSE_REQUEST_TIMEOUT))
		cp->kernel_timeout = 0;

	max_write = p->max_write;
	if (flags & FUSE_MAX_PAGES) {
		max_pages = (max_write + RF_PAGE_SIZE - 1) / RF_PAGE_SIZE;
		if (max_pages_limit && max_pages > max_pages_limit)
			max_pages = max_pages_limit;
		if (max_pages > UINT16_MAX)
			max_pages = UINT16_MAX;
	} else {
		max_pages = RF_KERNEL_DEFAULT_MAX_PAGES;
	}
	if (max_write > max_pages * RF_PAGE_SIZE)
		max_write = max_pages * RF_PAGE_SIZE;
	payload = max_write;
	if (payload < max_pages * RF_PAGE_SIZE)
		payload = max_pages * RF_PAGE_SIZE;
	if (payload < FUSE_MIN_READ_BUFFER)
		payload = FUSE_MIN_READ_BUFFER;
	payload = (uint32_t)rf_round_up(payload, RF_PAGE_SIZE);

	cp->flags = flags;
	cp->max_write = max_write;
	cp->max_pages = max_pages;
	cp->payload_size = payload;

	out->major = FUSE_KERNEL_VERSION;
	out->minor = cp->minor;
	out->max_readahead = in->max_readahead;
	out->flags = (uint32_t)flags;
	out->flags2 = (uint32_t)(flags >> 32);
	out->max_background = 64;
	out->congestion_threshold = 48;
	out->max_write = max_write;
	out->time_gran = 1;
	out->max_pages = (uint16_t)max_pages;
	out->request_timeout = cp->kernel_timeout;
	return 0;
}
