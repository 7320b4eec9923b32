// SPDX-License-Identifier: MIT
/*
 * The ring fence, on a real kernel ring: what rf_ring_create() registers is
 * exactly what a worker can do once it enables the ring. Needs root
 * (buffer registration) and io_uring; exits 77 (skip) without them.
 */
#include "check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker.h"
#include "uring_uapi.h"

#define POOL_SIZE (64 * 1024)

static int sv[2];
static char *pool;
static struct io_uring ring;
static int ring_fd;

#define DEPTH 4

static void make_ring(bool zero_copy, bool fuse_cmds)
{
	struct io_uring_params p;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pool = mmap(NULL, POOL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(pool, MAP_FAILED);
	ring_fd = rf_ring_create(sv[0], pool, POOL_SIZE, DEPTH, zero_copy, fuse_cmds, &p);
	ck_assert_int_ge(ring_fd, 0);
	ck_assert_int_eq(io_uring_queue_mmap(ring_fd, &p, &ring), 0);
	rf_ring_fill_sq_array(&ring);
	ck_assert_int_eq(rf_io_uring_register(ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0), 0);
}

static void setup(void)
{
	make_ring(false, true);
}

static void setup_zero_copy(void)
{
	make_ring(true, true);
}

static void setup_classic(void)
{
	make_ring(false, false);
}

static void teardown(void)
{
	io_uring_queue_exit(&ring);
	munmap(pool, POOL_SIZE);
	close(sv[0]);
	close(sv[1]);
}

/* Submit one SQE and return its CQE result. */
static int run(struct io_uring_sqe *sqe)
{
	struct io_uring_cqe *cqe;
	int res;

	(void)sqe;
	ck_assert_int_eq(io_uring_submit_and_wait(&ring, 1), 1);
	ck_assert_int_eq(io_uring_peek_cqe(&ring, &cqe), 0);
	res = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	return res;
}

START_TEST(test_read_fixed_file_allowed)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	char buf[8] = { 0 };

	ck_assert_int_eq(write(sv[1], "abc", 3), 3);
	io_uring_prep_read(sqe, RF_FILE_SLOT_FUSE, buf, sizeof(buf), 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	ck_assert_int_eq(run(sqe), 3);
	ck_assert_str_eq(buf, "abc");
}
END_TEST

START_TEST(test_plain_fd_refused)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	char buf[8];

	ck_assert_int_eq(write(sv[1], "abc", 3), 3);
	io_uring_prep_read(sqe, sv[0], buf, sizeof(buf), 0);
	ck_assert_int_eq(run(sqe), -EACCES);
}
END_TEST

START_TEST(test_ops_outside_allowlist_refused)
{
	static const uint8_t refused[] = { IORING_OP_NOP,     IORING_OP_OPENAT, IORING_OP_SOCKET,
					   IORING_OP_CLOSE,   IORING_OP_FSYNC,	IORING_OP_READV,
					   IORING_OP_MSG_RING };
	size_t i;

	for (i = 0; i < sizeof(refused); i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		ck_assert_ptr_nonnull(sqe);
		io_uring_prep_rw(refused[i], sqe, RF_FILE_SLOT_FUSE, NULL, 0, 0);
		sqe->flags = IOSQE_FIXED_FILE;
		ck_assert_msg(run(sqe) == -EACCES, "opcode %u was not refused", refused[i]);
	}
}
END_TEST

START_TEST(test_extra_sqe_flags_refused)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	char buf[8];

	io_uring_prep_read(sqe, RF_FILE_SLOT_FUSE, buf, sizeof(buf), 0);
	sqe->flags |= IOSQE_FIXED_FILE | IOSQE_ASYNC;
	ck_assert_int_eq(run(sqe), -EACCES);
}
END_TEST

START_TEST(test_register_ops_fenced)
{
	struct iovec iov = { .iov_base = pool, .iov_len = 4096 };
	int fd = memfd_create("data", MFD_CLOEXEC);
	struct io_uring_files_update up = { .offset = RF_FILE_SLOT_DATA,
					    .fds = (uint64_t)(uintptr_t)&fd };
	struct io_uring_sqe *sqe;

	/* no new buffers, no new restrictions, no probe */
	ck_assert_int_eq(rf_io_uring_register(ring_fd, IORING_REGISTER_BUFFERS, &iov, 1), -EACCES);
	ck_assert_int_eq(rf_io_uring_register(ring_fd, IORING_UNREGISTER_FILES, NULL, 0), -EACCES);
	ck_assert_int_eq(rf_io_uring_register(ring_fd, IORING_REGISTER_PROBE, NULL, 0), -EACCES);
	/* but a worker may install its own files in the data slots ... */
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "fixed!", 6, 0), 6);
	ck_assert_int_eq(rf_io_uring_register(ring_fd, IORING_REGISTER_FILES_UPDATE, &up, 1), 1);
	/* ... and move their data into the registered pool */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read_fixed(sqe, RF_FILE_SLOT_DATA, pool + 100, 6, 0, RF_BUF_INDEX_POOL);
	sqe->flags |= IOSQE_FIXED_FILE;
	ck_assert_int_eq(run(sqe), 6);
	ck_assert_int_eq(memcmp(pool + 100, "fixed!", 6), 0);
	/* outside the registered pool: refused by the kernel */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read_fixed(sqe, RF_FILE_SLOT_DATA, pool + POOL_SIZE, 6, 0, RF_BUF_INDEX_POOL);
	sqe->flags |= IOSQE_FIXED_FILE;
	ck_assert_int_eq(run(sqe), -EFAULT);
	close(fd);
}
END_TEST

/* A read of the data slot's file into buffer @index at @addr: its result. */
static int read_fixed_into(uint64_t addr, uint32_t len, int index)
{
	int fd = memfd_create("data", MFD_CLOEXEC);
	struct io_uring_files_update up = { .offset = RF_FILE_SLOT_DATA,
					    .fds = (uint64_t)(uintptr_t)&fd };
	struct io_uring_sqe *sqe;
	int r;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "fixed!", 6, 0), 6);
	ck_assert_int_eq(rf_io_uring_register(ring_fd, IORING_REGISTER_FILES_UPDATE, &up, 1), 1);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read_fixed(sqe, RF_FILE_SLOT_DATA, (void *)(uintptr_t)addr, len, 0, index);
	sqe->flags |= IOSQE_FIXED_FILE;
	r = run(sqe);
	close(fd);
	return r;
}

/* The zero-copy slots stay empty until the kernel fills one with a
 * request's pages: the pool still works, the empty slots and those past
 * the table give EFAULT, and the worker cannot fill any of them itself. */
START_TEST(test_zero_copy_slots_empty_and_fenced)
{
	struct iovec iov = { .iov_base = pool, .iov_len = 4096 };
	struct io_uring_rsrc_update2 up = { .offset = RF_BUF_INDEX_ZC,
					    .data = (uint64_t)(uintptr_t)&iov,
					    .nr = 1 };

	ck_assert_int_eq(read_fixed_into((uintptr_t)pool, 6, RF_BUF_INDEX_POOL), 6);
	ck_assert_int_eq(memcmp(pool, "fixed!", 6), 0);
	ck_assert_int_eq(read_fixed_into(0, 6, RF_BUF_INDEX_ZC), -EFAULT);
	ck_assert_int_eq(read_fixed_into(0, 6, RF_BUF_INDEX_ZC + DEPTH - 1), -EFAULT);
	ck_assert_int_eq(read_fixed_into(0, 6, RF_BUF_INDEX_ZC + DEPTH), -EFAULT);
	ck_assert_int_eq(read_fixed_into((uintptr_t)pool, 6, 1000), -EFAULT);
	ck_assert_int_eq(rf_io_uring_register(ring_fd, IORING_REGISTER_BUFFERS_UPDATE, &up,
					      sizeof(up)),
			 -EACCES);
	ck_assert_int_eq(rf_io_uring_register(ring_fd, IORING_UNREGISTER_BUFFERS, NULL, 0),
			 -EACCES);
}
END_TEST

/* a URING_CMD on the fixed file: the fence's answer (EACCES) or, let
 * through, the socket's (which knows no such command) */
static int uring_cmd(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, RF_FILE_SLOT_FUSE, NULL, 0, 0);
	sqe->flags = IOSQE_FIXED_FILE;
	return run(sqe);
}

START_TEST(test_uring_cmd_on_the_uring_transport)
{
	ck_assert_int_ne(uring_cmd(), -EACCES);
}
END_TEST

/* a classic ring takes no FUSE io-uring command at all */
START_TEST(test_classic_ring_refuses_uring_cmd)
{
	char buf[8] = { 0 };
	struct io_uring_sqe *sqe;

	ck_assert_int_eq(uring_cmd(), -EACCES);
	/* and does what the classic transport needs */
	ck_assert_int_eq(write(sv[1], "abc", 3), 3);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, RF_FILE_SLOT_FUSE, buf, sizeof(buf), 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	ck_assert_int_eq(run(sqe), 3);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("fence");
	TCase *tz = tcase_create("zero-copy slots");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_read_fixed_file_allowed);
	tcase_add_test(tc, test_plain_fd_refused);
	tcase_add_test(tc, test_ops_outside_allowlist_refused);
	tcase_add_test(tc, test_extra_sqe_flags_refused);
	tcase_add_test(tc, test_register_ops_fenced);
	tcase_add_test(tc, test_uring_cmd_on_the_uring_transport);
	suite_add_tcase(s, tc);
	tc = tcase_create("classic");
	tcase_add_checked_fixture(tc, setup_classic, teardown);
	tcase_add_test(tc, test_classic_ring_refuses_uring_cmd);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tz, setup_zero_copy, teardown);
	tcase_add_test(tz, test_zero_copy_slots_empty_and_fenced);
	suite_add_tcase(s, tz);
	return s;
}

int main(void)
{
	struct io_uring_params p;
	int fd;

	if (geteuid() != 0) {
		fprintf(stderr, "check_ring: SKIP: needs root\n");
		return 77;
	}
	memset(&p, 0, sizeof(p));
	fd = rf_io_uring_setup(4, &p);
	if (fd < 0) {
		fprintf(stderr, "check_ring: SKIP: io_uring_setup: %s\n", strerror(-fd));
		return 77;
	}
	close(fd);
	return rf_check_run(ring_suite());
}
