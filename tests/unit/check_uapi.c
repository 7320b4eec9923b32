// SPDX-License-Identifier: MIT
/* The FUSE/io_uring uapi layout, pool geometry and FUSE_INIT negotiation. */
#include "check_main.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "fuse_uapi.h"
#include "pool.h"
#include "uring_uapi.h"

START_TEST(test_uring_header_layout)
{
	ck_assert_uint_eq(sizeof(struct fuse_uring_req_header), 288);
	ck_assert_uint_eq(offsetof(struct fuse_uring_req_header, in_out), 0);
	ck_assert_uint_eq(offsetof(struct fuse_uring_req_header, op_in), 128);
	ck_assert_uint_eq(offsetof(struct fuse_uring_req_header, ring_ent_in_out), 256);
	ck_assert_uint_eq(offsetof(struct fuse_uring_ent_in_out, commit_id), 8);
	ck_assert_uint_eq(offsetof(struct fuse_uring_ent_in_out, payload_sz), 16);
	ck_assert_uint_eq(offsetof(struct fuse_uring_cmd_req, commit_id), 8);
	ck_assert_uint_eq(offsetof(struct fuse_uring_cmd_req, qid), 16);
	/* 7.46 */
	ck_assert_uint_eq(offsetof(struct fuse_uring_ent_in_out, offset), 20);
	ck_assert_uint_eq(sizeof(struct fuse_uring_ent_in_out), 32);
	ck_assert_uint_eq(offsetof(struct fuse_uring_cmd_req, bufpool.uaddr), 24);
	ck_assert_uint_eq(offsetof(struct fuse_uring_cmd_req, bufpool.len), 32);
	ck_assert_uint_eq(offsetof(struct fuse_uring_cmd_req, ent_zero_copy_buf_index), 24);
	ck_assert_uint_eq(sizeof(struct fuse_uring_cmd_req), 40);
}
END_TEST

START_TEST(test_protocol_layout)
{
	ck_assert_uint_eq(sizeof(struct fuse_in_header), 40);
	ck_assert_uint_eq(offsetof(struct fuse_in_header, unique), 8);
	ck_assert_uint_eq(offsetof(struct fuse_in_header, nodeid), 16);
	ck_assert_uint_eq(offsetof(struct fuse_in_header, pid), 32);
	ck_assert_uint_eq(sizeof(struct fuse_out_header), 16);
	ck_assert_uint_eq(sizeof(struct fuse_init_out), 64);
	ck_assert_uint_eq(offsetof(struct fuse_init_out, max_write), 20);
	ck_assert_uint_eq(offsetof(struct fuse_init_out, max_pages), 28);
	ck_assert_uint_eq(offsetof(struct fuse_init_out, flags2), 32);
	ck_assert_uint_eq(offsetof(struct fuse_init_out, request_timeout), 40);
	ck_assert_uint_eq(offsetof(struct fuse_init_in, flags2), 16);
	ck_assert_uint_eq(sizeof(struct fuse_entry_out), 128);
	ck_assert_uint_eq(offsetof(struct fuse_entry_out, attr), 40);
	ck_assert_uint_eq(sizeof(struct fuse_setattr_in), 88);
	ck_assert_uint_eq(offsetof(struct fuse_setattr_in, mode), 68);
	ck_assert_uint_eq(offsetof(struct fuse_setattr_in, uid), 76);
	ck_assert_uint_eq(sizeof(struct fuse_write_in), 40);
	ck_assert_uint_eq(offsetof(struct fuse_write_in, size), 16);
	ck_assert_uint_eq(sizeof(struct fuse_dirent), 24);
	ck_assert_uint_eq(FUSE_DIRENT_SIZE(1), 32);
	ck_assert_uint_eq(FUSE_DIRENT_SIZE(8), 32);
	ck_assert_uint_eq(FUSE_DIRENT_SIZE(9), 40);
	ck_assert_uint_eq(FUSE_OVER_IO_URING, 1ULL << 41);
	ck_assert_uint_eq(FUSE_DEV_IOC_CLONE, 0x8004e500);
	ck_assert_uint_eq(RF_CLASSIC_PREFIX, 80);
}
END_TEST

START_TEST(test_prep_fuse_cmd)
{
	struct io_uring_sqe sqe[2];
	const struct fuse_uring_cmd_req *c;

	memset(sqe, 0xff, sizeof(sqe));
	rf_prep_fuse_cmd(sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, 3, 0x1234);
	ck_assert_uint_eq(sqe[0].opcode, IORING_OP_URING_CMD);
	ck_assert_uint_eq(sqe[0].flags, IOSQE_FIXED_FILE);
	ck_assert_int_eq(sqe[0].fd, RF_FILE_SLOT_FUSE);
	ck_assert_uint_eq(sqe[0].cmd_op, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
	ck_assert_uint_eq(sqe[0].uring_cmd_flags, 0);
	c = (const void *)((const char *)sqe + 48);
	ck_assert_uint_eq(c->qid, 3);
	ck_assert_uint_eq(c->commit_id, 0x1234);
	ck_assert_uint_eq(c->flags, 0);
	/* the whole second half of the 128-byte SQE is cleared */
	ck_assert_uint_eq(sqe[1].user_data, 0);
}
END_TEST

START_TEST(test_pool_geometry)
{
	struct rf_pool_geom g;

	ck_assert_int_eq(rf_pool_geom_init(&g, 2, 8, 1 << 20, 0), 0);
	ck_assert_uint_eq(g.nslots, 17);
	ck_assert_uint_eq(g.slot_size, 4096 + (1 << 20));
	ck_assert_uint_eq(g.ctl_size % 4096, 0);
	ck_assert_uint_ge(g.ctl_size, sizeof(struct rf_pool_ctl) +
					      2 * sizeof(struct rf_queue_stats) +
					      17 * sizeof(struct rf_slot_state) +
					      RF_SEEN_IDS * sizeof(uint64_t));
	ck_assert_uint_eq(g.total_size, g.ctl_size + 17ULL * g.slot_size);
	ck_assert_uint_eq(rf_pool_slot_index(&g, 1, 3), 11);
	ck_assert_uint_eq(rf_pool_slot_offset(&g, 1) % 4096, 0);
	ck_assert_int_eq(rf_pool_geom_init(&g, 0, 8, 1 << 20, 0), -EINVAL);
	ck_assert_int_eq(rf_pool_geom_init(&g, 2, 0, 1 << 20, 0), -EINVAL);
	ck_assert_int_eq(rf_pool_geom_init(&g, 2, 8, 4096, 0), -EINVAL);
	ck_assert_int_eq(rf_pool_geom_init(&g, 2, 8, 8192 + 1, 0), -EINVAL);
	/* a pool may not outgrow its address stride */
	ck_assert_int_eq(rf_pool_geom_init(&g, 4096, 1024, 1 << 20, 0), -EINVAL);
}
END_TEST

START_TEST(test_pool_geometry_with_buffer_pools)
{
	struct rf_pool_geom g, e;

	/* 2 queues of 8 entries, 4 buffers of 1 MiB per queue */
	ck_assert_int_eq(rf_pool_geom_init(&g, 2, 8, 1 << 20, 4 << 20), 0);
	ck_assert_uint_eq(g.slot_size, 4096);
	ck_assert_uint_eq(g.nslots, 17);
	/* the reader's slot keeps its payload, the pools follow it */
	ck_assert_uint_eq(g.qpool_offset, g.ctl_size + 17 * 4096 + (1 << 20));
	ck_assert_uint_eq(rf_pool_qpool(&g, 1), g.qpool_offset + (4 << 20));
	ck_assert_uint_eq(g.total_size, g.qpool_offset + 2 * (4 << 20));
	ck_assert_uint_eq(g.qpool_offset % 4096, 0);
	/* a pool is a whole number of buffers */
	ck_assert_int_eq(rf_pool_geom_init(&e, 2, 8, 1 << 20, (4 << 20) + 4096), -EINVAL);
	/* per-entry buffers as before */
	ck_assert_int_eq(rf_pool_geom_init(&e, 2, 8, 1 << 20, 0), 0);
	ck_assert_uint_eq(e.qpool_offset, 0);
	ck_assert_uint_eq(e.total_size, e.ctl_size + 17ULL * (4096 + (1 << 20)));
}
END_TEST

START_TEST(test_pool_buffers_fit_the_budget)
{
	struct rf_pool_geom g;
	uint32_t d, n;

	/* depth 128 on 2 CPUs with 1 MiB writes: per-entry buffers would pin
	 * over 256 MiB; a 32 MiB pool holds what fits besides the headers */
	n = rf_pool_buffers(32 << 20, 2, 128, 1 << 20);
	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(rf_pool_geom_init(&g, 2, 128, 1 << 20, n << 20), 0);
	ck_assert_uint_le(g.total_size, 32 << 20);
	ck_assert_int_eq(rf_pool_geom_init(&g, 2, 128, 1 << 20, (n + 1) << 20), 0);
	ck_assert_uint_gt(g.total_size, 32 << 20);
	/* automatic: what entries would pin, up to 32 MiB; never more
	 * buffers than entries */
	for (d = 1; d <= 256; d *= 2) {
		n = rf_pool_buffers(0, 2, d, 1 << 20);
		/* as many buffers as entries pins what entries would */
		if (d <= 8)
			ck_assert_uint_eq(n, d);
		else
			ck_assert_uint_ge(n, 14);
		ck_assert_int_eq(rf_pool_geom_init(&g, 2, d, 1 << 20, n << 20), 0);
		ck_assert_uint_le(g.total_size, 32 << 20);
	}
	ck_assert_uint_eq(rf_pool_buffers(1ULL << 40, 2, 8, 1 << 20), 8);
	/* too small for one buffer per queue */
	ck_assert_uint_eq(rf_pool_buffers(2 << 20, 2, 8, 1 << 20), 0);
}
END_TEST

static struct fuse_init_in kernel_init(int uring)
{
	struct fuse_init_in in = { .major = 7, .minor = 45, .max_readahead = 131072 };
	uint64_t f = 0x000007fd73fffffbULL; /* what 6.18 offers with enable_uring=Y */

	if (!uring)
		f &= ~FUSE_OVER_IO_URING;
	in.flags = (uint32_t)f;
	in.flags2 = (uint32_t)(f >> 32);
	return in;
}

static struct rf_mount_policy pol(enum rf_transport t, uint32_t max_write)
{
	struct rf_mount_policy p;

	memset(&p, 0, sizeof(p));
	strcpy(p.name, "t");
	p.transport = t;
	p.max_write = max_write;
	p.queue_depth = 8;
	return p;
}

START_TEST(test_init_auto_uring)
{
	struct fuse_init_in in = kernel_init(1);
	struct rf_mount_policy p = pol(RF_TRANSPORT_AUTO, 1 << 20);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_int_eq(cp.transport, RF_TRANSPORT_URING);
	ck_assert_uint_eq(out.major, 7);
	ck_assert_uint_eq(out.minor, 45);
	ck_assert(((uint64_t)out.flags2 << 32) & FUSE_OVER_IO_URING);
	/* passthrough answers O_DIRECT opens FOPEN_DIRECT_IO; a shared
	 * mapping of such a file must still work */
	ck_assert(((uint64_t)out.flags2 << 32) & FUSE_DIRECT_IO_ALLOW_MMAP);
	ck_assert(out.flags & FUSE_INIT_EXT);
	ck_assert(out.flags & FUSE_MAX_PAGES);
	ck_assert(!(out.flags & (FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS | FUSE_WRITEBACK_CACHE)));
	ck_assert_uint_eq(out.max_write, 1 << 20);
	ck_assert_uint_eq(out.max_pages, 256);
	ck_assert_uint_eq(out.max_readahead, 131072);
	ck_assert_uint_eq(cp.payload_size, 1 << 20);
}
END_TEST

START_TEST(test_init_handle_killpriv_follows_the_policy)
{
	struct fuse_init_in in = kernel_init(1);
	struct rf_mount_policy p = pol(RF_TRANSPORT_AUTO, 1 << 20);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	p.handle_killpriv = true;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(((uint64_t)out.flags2 << 32 | out.flags) & FUSE_HANDLE_KILLPRIV_V2);
	ck_assert(cp.flags & FUSE_HANDLE_KILLPRIV_V2);
	ck_assert(!(out.flags & FUSE_HANDLE_KILLPRIV)); /* v1 would still ask for xattrs */
	p.handle_killpriv = false;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!(((uint64_t)out.flags2 << 32 | out.flags) & FUSE_HANDLE_KILLPRIV_V2));
	/* not from a kernel that does not offer it */
	p.handle_killpriv = true;
	in.flags &= ~(uint32_t)FUSE_HANDLE_KILLPRIV_V2;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!(out.flags & FUSE_HANDLE_KILLPRIV_V2));
}
END_TEST

/* request_timeout: the kernel's own timeout backs the watchdog, well past
 * what a recovery takes; the policy's kernel_timeout says otherwise; none
 * before 7.43 */
START_TEST(test_init_kernel_request_timeout)
{
	struct fuse_init_in in = kernel_init(1);
	struct rf_mount_policy p = pol(RF_TRANSPORT_AUTO, 1 << 20);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	p.start_timeout = 30;
	p.heartbeat_timeout = 10;
	p.kernel_timeout = RF_KERNEL_TIMEOUT_AUTO;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!(((uint64_t)out.flags2 << 32) & FUSE_REQUEST_TIMEOUT));
	ck_assert_uint_eq(out.request_timeout, 0);
	p.request_timeout = 5;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(((uint64_t)out.flags2 << 32) & FUSE_REQUEST_TIMEOUT);
	ck_assert_uint_eq(out.request_timeout, 5 + 30 + 10 + RF_KERNEL_TIMEOUT_SLACK);
	ck_assert_uint_eq(cp.kernel_timeout, out.request_timeout);
	p.request_timeout = 65535;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_uint_eq(out.request_timeout, UINT16_MAX);
	/* the policy's own, or none */
	p.kernel_timeout = 7;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_uint_eq(out.request_timeout, 7);
	p.kernel_timeout = 0;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!(((uint64_t)out.flags2 << 32) & FUSE_REQUEST_TIMEOUT));
	ck_assert_uint_eq(out.request_timeout, 0);
	p.kernel_timeout = 7;
	in.minor = 42;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!(((uint64_t)out.flags2 << 32) & FUSE_REQUEST_TIMEOUT));
	ck_assert_uint_eq(out.request_timeout, 0);
}
END_TEST

START_TEST(test_init_7_46_offers_buffer_pools)
{
	struct fuse_init_in in = kernel_init(1);
	struct rf_mount_policy p = pol(RF_TRANSPORT_AUTO, 1 << 20);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	/* 6.18 (7.45) has no pools */
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!cp.bufpool_offered);
	/* 7.3 (7.46) offers them on io-uring */
	in.minor = 46;
	in.flags2 |= (uint32_t)(FUSE_HAS_IO_URING_BUFPOOL >> 32);
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_uint_eq(out.minor, 46);
	ck_assert(cp.bufpool_offered);
	/* a later kernel is answered at the protocol we speak */
	in.minor = 47;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_uint_eq(out.minor, 46);
	ck_assert(cp.bufpool_offered);
	ck_assert(cp.bufpool);
	/* the policy turns them off, or insists on them */
	p.bufpool = RF_FEATURE_OFF;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(cp.bufpool_offered && !cp.bufpool);
	p.bufpool = RF_FEATURE_ON;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(cp.bufpool);
	in.minor = 45;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(cp.why, "bufpool = on, but the kernel offers no FUSE io-uring "
					     "buffer pools (protocol 7.45 over io-uring"));
	in.minor = 47;
	p.bufpool = RF_FEATURE_AUTO;
	/* not on /dev/fuse, and not from a kernel that says 7.45 */
	p.transport = RF_TRANSPORT_CLASSIC;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!cp.bufpool_offered);
	p.transport = RF_TRANSPORT_AUTO;
	in.minor = 45;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!cp.bufpool_offered);
}
END_TEST

START_TEST(test_init_zero_copy_follows_the_pools)
{
	struct fuse_init_in in = kernel_init(1);
	struct rf_mount_policy p = pol(RF_TRANSPORT_AUTO, 1 << 20);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	/* 6.18: auto is off, on is refused, naming why */
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!cp.zero_copy);
	p.zero_copy = RF_FEATURE_ON;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(cp.why, "zero_copy = on, but the kernel offers no FUSE "
					     "io-uring buffer pools (protocol 7.45 over io-uring"));
	/* 7.3: auto and on use it with the pools */
	in.minor = 46;
	in.flags2 |= (uint32_t)(FUSE_HAS_IO_URING_BUFPOOL >> 32);
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(cp.bufpool && cp.zero_copy);
	p.zero_copy = RF_FEATURE_AUTO;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(cp.bufpool && cp.zero_copy);
	p.zero_copy = RF_FEATURE_OFF;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(cp.bufpool && !cp.zero_copy);
	/* without the pools there is none, and on says so */
	p.bufpool = RF_FEATURE_OFF;
	p.zero_copy = RF_FEATURE_AUTO;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert(!cp.bufpool && !cp.zero_copy);
	p.zero_copy = RF_FEATURE_ON;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(cp.why, "zero_copy = on, but bufpool is off"));
}
END_TEST

START_TEST(test_init_auto_classic_when_not_offered)
{
	struct fuse_init_in in = kernel_init(0);
	struct rf_mount_policy p = pol(RF_TRANSPORT_AUTO, 128 << 10);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_int_eq(cp.transport, RF_TRANSPORT_CLASSIC);
	ck_assert(!(((uint64_t)out.flags2 << 32) & FUSE_OVER_IO_URING));
	ck_assert_ptr_nonnull(strstr(cp.why, "enable_uring"));
	ck_assert_uint_eq(out.max_pages, 32);
	ck_assert_uint_eq(cp.payload_size, 128 << 10);
}
END_TEST

START_TEST(test_init_uring_required_but_missing)
{
	struct fuse_init_in in = kernel_init(0);
	struct rf_mount_policy p = pol(RF_TRANSPORT_URING, 1 << 20);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(cp.why, "FUSE_OVER_IO_URING"));
}
END_TEST

START_TEST(test_init_classic_by_policy)
{
	struct fuse_init_in in = kernel_init(1);
	struct rf_mount_policy p = pol(RF_TRANSPORT_CLASSIC, 1 << 20);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_int_eq(cp.transport, RF_TRANSPORT_CLASSIC);
	ck_assert(!(((uint64_t)out.flags2 << 32) & FUSE_OVER_IO_URING));
}
END_TEST

START_TEST(test_init_limits)
{
	struct fuse_init_in in = kernel_init(1);
	struct rf_mount_policy p = pol(RF_TRANSPORT_AUTO, 1 << 20);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	/* max_pages_limit caps max_write */
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 64, &out, &cp), 0);
	ck_assert_uint_eq(out.max_pages, 64);
	ck_assert_uint_eq(out.max_write, 64 * 4096);
	ck_assert_uint_eq(cp.payload_size, 64 * 4096);
	/* without FUSE_MAX_PAGES the kernel uses 32 pages and the payload
	 * must still hold max(8192, max_write, 32 pages) */
	in.flags &= ~(uint32_t)FUSE_MAX_PAGES;
	p.max_write = 4096;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_uint_eq(cp.max_pages, 32);
	ck_assert_uint_eq(cp.payload_size, 32 * 4096);
}
END_TEST

START_TEST(test_init_bad_versions)
{
	struct fuse_init_in in = kernel_init(1);
	struct rf_mount_policy p = pol(RF_TRANSPORT_AUTO, 1 << 20);
	struct fuse_init_out out;
	struct rf_conn_params cp;

	in.major = 8;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), -EPROTO);
	in.major = 7;
	in.minor = 20;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), -EPROTO);
	/* a newer kernel is answered with our minor */
	in.minor = 99;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_uint_eq(out.minor, FUSE_KERNEL_MINOR_VERSION);
	/* 7.41 knows no io-uring even if a bit happens to be set */
	in.minor = 41;
	ck_assert_int_eq(rf_init_negotiate(&in, &p, 256, &out, &cp), 0);
	ck_assert_int_eq(cp.transport, RF_TRANSPORT_CLASSIC);
}
END_TEST

static Suite *uapi_suite(void)
{
	Suite *s = suite_create("uapi");
	TCase *tc = tcase_create("layout");
	TCase *ti = tcase_create("init");

	tcase_add_test(tc, test_uring_header_layout);
	tcase_add_test(tc, test_protocol_layout);
	tcase_add_test(tc, test_prep_fuse_cmd);
	tcase_add_test(tc, test_pool_geometry);
	tcase_add_test(tc, test_pool_geometry_with_buffer_pools);
	tcase_add_test(tc, test_pool_buffers_fit_the_budget);
	suite_add_tcase(s, tc);
	tcase_add_test(ti, test_init_auto_uring);
	tcase_add_test(ti, test_init_handle_killpriv_follows_the_policy);
	tcase_add_test(ti, test_init_kernel_request_timeout);
	tcase_add_test(ti, test_init_7_46_offers_buffer_pools);
	tcase_add_test(ti, test_init_zero_copy_follows_the_pools);
	tcase_add_test(ti, test_init_auto_classic_when_not_offered);
	tcase_add_test(ti, test_init_uring_required_but_missing);
	tcase_add_test(ti, test_init_classic_by_policy);
	tcase_add_test(ti, test_init_limits);
	tcase_add_test(ti, test_init_bad_versions);
	suite_add_tcase(s, ti);
	return s;
}

int main(void)
{
	return rf_check_run(uapi_suite());
}
