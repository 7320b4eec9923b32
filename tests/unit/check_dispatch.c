// SPDX-License-Identifier: MIT
/*
 * Request parsing and reply encoding, without a ring: the process's
 * rf_side.finish is a recorder. Malformed requests must be
 * answered without reaching the plugin.
 */
#include "check_main.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker.h"

static struct rf_worker w;
#define TAG (1ULL << 48) /* generation 0 */
static struct rf_queue q;
static struct rf_queue_stats stats;
static struct rf_req req;
static char slot[4096 + 65536];
static int finished;

/* the recorder standing in for the keeper */
static void record_finish(struct rf_req *r)
{
	finished++;
	r->state = RQ_WAIT;
}

static const struct rf_side test_side = { .name = "test", .finish = record_finish };

static struct {
	int calls;
	uint64_t a, b;
	char s1[256], s2[256];
	unsigned int flags;
	size_t size;
} seen;

static void p_lookup(struct rf_req *r, uint64_t parent, const char *name)
{
	struct rf_entry e = { .ino = 42, .attr_timeout = 1.5, .entry_timeout = 2 };

	seen.calls++;
	seen.a = parent;
	strcpy(seen.s1, name);
	e.attr.st_mode = S_IFREG | 0644;
	e.attr.st_size = 7;
	rf_reply_entry(r, &e);
	rf_reply_err(r, EIO); /* a second reply must be ignored */
}

static void p_rename(struct rf_req *r, uint64_t parent, const char *name, uint64_t np,
		     const char *nn, unsigned int flags)
{
	seen.calls++;
	seen.a = parent;
	seen.b = np;
	strcpy(seen.s1, name);
	strcpy(seen.s2, nn);
	seen.flags = flags;
	rf_reply_ok(r);
}

static void p_read(struct rf_req *r, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	(void)ino;
	seen.calls++;
	seen.a = fh;
	seen.b = (uint64_t)off;
	seen.size = size;
	rf_reply_data_fd(r, 5, off, size + 1000); /* asks for more than allowed */
}

static void p_write(struct rf_req *r, uint64_t ino, uint64_t fh, off_t off, const void *data,
		    size_t size)
{
	(void)ino;
	(void)fh;
	(void)off;
	seen.calls++;
	seen.size = size;
	memcpy(seen.s1, data, size < 255 ? size : 255);
	rf_reply_write(r, size);
}

static void p_readdir(struct rf_req *r, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	struct stat st = { .st_ino = 9, .st_mode = S_IFDIR };
	int i, n = 0;

	(void)ino;
	(void)fh;
	(void)off;
	(void)size;
	seen.calls++;
	for (i = 0; i < 1000; i++)
		if (rf_dirbuf_add(r, "entry-name", &st, i + 1) == 0)
			n++;
		else
			break;
	seen.size = (size_t)n;
	rf_reply_dirbuf(r);
}

static void p_setxattr(struct rf_req *r, uint64_t ino, const char *name, const void *value,
		       size_t size, int flags)
{
	(void)ino;
	(void)flags;
	seen.calls++;
	strcpy(seen.s1, name);
	memcpy(seen.s2, value, size);
	seen.size = size;
	rf_reply_err(r, 0); /* 0 is not an errno: becomes EIO */
}

static void p_forget(void *ud, uint64_t ino, uint64_t n)
{
	(void)ud;
	seen.calls++;
	seen.a += ino;
	seen.b += n;
}

static const struct rf_plugin plugin = {
	RF_PLUGIN_INIT,	  .lookup = p_lookup,	.rename = p_rename,	.read = p_read,
	.write = p_write, .readdir = p_readdir, .setxattr = p_setxattr, .forget = p_forget,
};

static void setup(void)
{
	memset(&seen, 0, sizeof(seen));
	memset(&req, 0, sizeof(req));
	memset(slot, 0, sizeof(slot));
	finished = 0;
	q.zc = false;
	w.plugin = &plugin;
	w.tag = rf_gen_tag(0);
	w.nqueues = 1;
	w.queues = &q;
	w.side = &test_side;
	q.w = &w;
	q.stats = &stats;
	q.reqs = &req;
	q.nreqs = 1;
	req.q = &q;
	req.hdr = slot;
	req.payload = slot + 4096;
	req.payload_cap = 65536;
}

/* Lay a request out as the io-uring transport does: arg0 in the header's
 * op_in, everything else at the payload. */
static void make(uint32_t opcode, const void *arg0, size_t a0len, const void *rest, size_t rlen)
{
	struct fuse_uring_req_header *h = (void *)req.hdr;

	req.payload = slot + 4096; /* a zero-copied READ before had none */
	req.in.opcode = opcode;
	req.in.unique = 2;
	req.in.nodeid = 1;
	req.in.uid = 1000;
	memcpy(h->op_in, arg0, a0len);
	memcpy(req.payload, rest, rlen);
	req.arg0 = h->op_in;
	req.rest = req.payload;
	req.rest_len = (uint32_t)rlen;
}

START_TEST(test_lookup_and_entry_reply)
{
	const struct fuse_entry_out *o = (const void *)req.payload;

	make(FUSE_LOOKUP, "", 0, "file.txt", 9);
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_str_eq(seen.s1, "file.txt");
	ck_assert_uint_eq(seen.a, 1);
	ck_assert_int_eq(finished, 1); /* the second reply was ignored */
	ck_assert_int_eq(req.error, 0);
	ck_assert_uint_eq(req.reply_len, sizeof(struct fuse_entry_out));
	ck_assert_uint_eq(o->nodeid, TAG | 42); /* tagged with the generation */
	ck_assert_uint_eq(o->attr.size, 7);
	ck_assert_uint_eq(o->attr.mode, S_IFREG | 0644);
	ck_assert_uint_eq(o->attr_valid, 1);
	ck_assert_uint_eq(o->attr_valid_nsec, 500000000);
	ck_assert_uint_eq(o->entry_valid, 2);
	ck_assert_uint_eq(req.ctx.uid, 1000);
}
END_TEST

START_TEST(test_unterminated_name)
{
	make(FUSE_LOOKUP, "", 0, "abc", 3);
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 0);
	ck_assert_int_eq(req.error, EINVAL);
	make(FUSE_LOOKUP, "", 0, "", 0);
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 0);
	ck_assert_int_eq(req.error, EINVAL);
}
END_TEST

START_TEST(test_missing_op_is_enosys)
{
	struct fuse_mkdir_in mi = { .mode = 0755 };

	make(FUSE_MKDIR, &mi, sizeof(mi), "d", 2);
	rf_dispatch(&req);
	ck_assert_int_eq(req.error, ENOSYS);
	make(9999, "", 0, "", 0);
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(req.error, ENOSYS);
	make(FUSE_INIT, "", 0, "", 0); /* INIT belongs to the broker */
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(req.error, ENOSYS);
	ck_assert_str_eq(rf_op_name(FUSE_RENAME2), "RENAME2");
	ck_assert_str_eq(rf_op_name(12345), "UNKNOWN");
}
END_TEST

START_TEST(test_rename2)
{
	struct fuse_rename2_in ri = { .newdir = TAG | 7, .flags = 1 };

	make(FUSE_RENAME2, &ri, sizeof(ri), "old\0new", 8);
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_str_eq(seen.s1, "old");
	ck_assert_str_eq(seen.s2, "new");
	ck_assert_uint_eq(seen.b, 7);
	ck_assert_uint_eq(seen.flags, 1);
	ck_assert_int_eq(req.error, 0);
	ck_assert_uint_eq(req.reply_len, 0);
	/* only one name: refused */
	make(FUSE_RENAME2, &ri, sizeof(ri), "old", 4);
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_int_eq(req.error, EINVAL);
}
END_TEST

START_TEST(test_read_bounds_and_fd_reply)
{
	struct fuse_read_in ri = { .fh = TAG | 3, .offset = 4096, .size = 8192 };

	make(FUSE_READ, &ri, sizeof(ri), "", 0);
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_uint_eq(seen.a, 3);
	ck_assert_uint_eq(seen.b, 4096);
	ck_assert_int_eq(req.fd_op, RF_FDOP_READ);
	ck_assert_int_eq(req.fd, 5);
	ck_assert_uint_eq(req.len, 8192); /* clamped to what was asked */
	/* more than a slot holds: refused before the plugin */
	ri.size = 65536 + 1;
	make(FUSE_READ, &ri, sizeof(ri), "", 0);
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_int_eq(req.error, EINVAL);
	ri.size = 10;
	ri.offset = (uint64_t)-5;
	make(FUSE_READ, &ri, sizeof(ri), "", 0);
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(req.error, EINVAL);
}
END_TEST

START_TEST(test_write_size_must_match)
{
	struct fuse_write_in wi = { .fh = TAG, .size = 5 };
	const struct fuse_write_out *o = (const void *)req.payload;

	make(FUSE_WRITE, &wi, sizeof(wi), "hello", 5);
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_uint_eq(seen.size, 5);
	ck_assert_int_eq(memcmp(seen.s1, "hello", 5), 0);
	ck_assert_uint_eq(req.reply_len, sizeof(*o));
	ck_assert_uint_eq(o->size, 5);
	wi.size = 6;
	make(FUSE_WRITE, &wi, sizeof(wi), "hello", 5);
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_int_eq(req.error, EINVAL);
}
END_TEST

START_TEST(test_readdir_respects_size)
{
	struct fuse_read_in ri = { .fh = TAG, .size = 100 };
	const struct fuse_dirent *d = (const void *)req.payload;

	make(FUSE_READDIR, &ri, sizeof(ri), "", 0);
	rf_dispatch(&req);
	/* 24-byte header + 10-byte name = 40 bytes each: two fit in 100 */
	ck_assert_uint_eq(seen.size, 2);
	ck_assert_uint_eq(req.reply_len, 80);
	ck_assert_uint_eq(d->ino, 9);
	ck_assert_uint_eq(d->namelen, 10);
	ck_assert_uint_eq(d->type, S_IFDIR >> 12);
	ck_assert_int_eq(memcmp(d->name, "entry-name", 10), 0);
	ck_assert_uint_eq(d->off, 1);
}
END_TEST

START_TEST(test_readdirplus_emulated)
{
	struct fuse_read_in ri = { .fh = TAG, .size = 400 };
	const struct fuse_direntplus *d = (const void *)req.payload;

	make(FUSE_READDIRPLUS, &ri, sizeof(ri), "", 0);
	rf_dispatch(&req);
	/* 128-byte entry_out + 24-byte dirent + 10-byte name, padded: 168 */
	ck_assert_uint_eq(seen.size, 2);
	ck_assert_uint_eq(req.reply_len, 2 * 168);
	ck_assert_uint_eq(d->entry_out.nodeid, 0); /* listed, not cached */
	ck_assert_uint_eq(d->dirent.ino, 9);
	ck_assert_uint_eq(d->dirent.namelen, 10);
	ck_assert_int_eq(memcmp(d->dirent.name, "entry-name", 10), 0);
}
END_TEST

START_TEST(test_dirbuf_plus_entry)
{
	struct fuse_read_in ri = { .size = 4096 };
	struct rf_entry e = { .ino = 77, .attr_timeout = 3 };
	const struct fuse_direntplus *d = (const void *)req.payload;

	make(FUSE_READDIRPLUS, &ri, sizeof(ri), "", 0);
	req.state = RQ_PLUGIN;
	rf_req_reset(&req);
	e.attr.st_ino = 5;
	e.attr.st_mode = S_IFREG | 0600;
	e.attr.st_size = 12;
	ck_assert_int_eq(rf_dirbuf_add_plus(&req, "f", &e, 1), 0);
	ck_assert_uint_eq(d->entry_out.nodeid, TAG | 77);
	ck_assert_uint_eq(d->entry_out.attr.size, 12);
	ck_assert_uint_eq(d->entry_out.attr_valid, 3);
	ck_assert_uint_eq(d->dirent.ino, 5);
	ck_assert_uint_eq(d->dirent.type, S_IFREG >> 12);
	/* in a plain READDIR the same call writes a plain dirent */
	make(FUSE_READDIR, &ri, sizeof(ri), "", 0);
	req.state = RQ_PLUGIN;
	rf_req_reset(&req);
	ck_assert_int_eq(rf_dirbuf_add_plus(&req, "f", &e, 1), 0);
	ck_assert_uint_eq(req.reply_len, FUSE_DIRENT_SIZE(1));
	/* and nothing is added once the reply went out */
	rf_reply_dirbuf(&req);
	ck_assert_int_eq(rf_dirbuf_add_plus(&req, "g", &e, 2), -1);
}
END_TEST

START_TEST(test_setxattr_sizes)
{
	struct fuse_setxattr_in si = { .size = 3 };

	make(FUSE_SETXATTR, &si, sizeof(si), "user.k\0abc", 10);
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_str_eq(seen.s1, "user.k");
	ck_assert_int_eq(memcmp(seen.s2, "abc", 3), 0);
	ck_assert_int_eq(req.error, EIO);
	si.size = 4;
	make(FUSE_SETXATTR, &si, sizeof(si), "user.k\0abc", 10);
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_int_eq(req.error, EINVAL);
}
END_TEST

START_TEST(test_forgets)
{
	struct fuse_in_header in = { .opcode = FUSE_FORGET, .nodeid = TAG | 10 };
	struct fuse_forget_in f = { .nlookup = 3 };
	char batch[sizeof(struct fuse_batch_forget_in) + 2 * sizeof(struct fuse_forget_one)];
	struct fuse_batch_forget_in b = { .count = 1000 }; /* lies: only two follow */
	struct fuse_forget_one one[2] = { { TAG | 1, 1 }, { 1 /* root */, 2 } };

	ck_assert(rf_dispatch_noreply(&w, &in, (const char *)&f, sizeof(f)));
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_uint_eq(seen.a, 10);
	ck_assert_uint_eq(seen.b, 3);
	memcpy(batch, &b, sizeof(b));
	memcpy(batch + sizeof(b), one, sizeof(one));
	in.opcode = FUSE_BATCH_FORGET;
	ck_assert(rf_dispatch_noreply(&w, &in, batch, sizeof(batch)));
	ck_assert_int_eq(seen.calls, 3);
	ck_assert_uint_eq(seen.a, 12); /* 10, then 1 and the root (1) */
	ck_assert_uint_eq(seen.b, 6);
	in.opcode = FUSE_LOOKUP;
	ck_assert(!rf_dispatch_noreply(&w, &in, "", 0));
	/* the keeper counts them, from the same bytes: 1, then the two that
	 * follow the batch's header, not the 1000 it claims */
	in.opcode = FUSE_FORGET;
	ck_assert(rf_noreply_count(&q, &in, (const char *)&f, sizeof(f)));
	in.opcode = FUSE_BATCH_FORGET;
	ck_assert(rf_noreply_count(&q, &in, batch, sizeof(batch)));
	ck_assert_uint_eq(stats.forgets, 3);
	in.opcode = FUSE_LOOKUP;
	ck_assert(!rf_noreply_count(&q, &in, "", 0));
}
END_TEST

/* RF_PLUGIN_SERIAL: operations one at a time. A forget waits (up to
 * 200 ms) for another to be in the plugin with it: two threads' forgets
 * meet without the flag, and never with it. */
static atomic_int inside, most;

static void p_forget_meet(void *ud, uint64_t ino, uint64_t n)
{
	int now = atomic_fetch_add(&inside, 1) + 1, i;

	(void)ud;
	(void)ino;
	(void)n;
	for (i = 0; i < 200 && atomic_load(&inside) < 2; i++)
		usleep(1000);
	if (atomic_load(&inside) > now)
		now = atomic_load(&inside);
	if (now > atomic_load(&most))
		atomic_store(&most, now);
	atomic_fetch_sub(&inside, 1);
}

static void *forget_once(void *arg)
{
	struct fuse_in_header in = { .opcode = FUSE_FORGET, .nodeid = TAG | 10 };
	struct fuse_forget_in f = { .nlookup = 1 };

	rf_dispatch_noreply(arg, &in, (const char *)&f, sizeof(f));
	return NULL;
}

static int most_at_once(unsigned int flags)
{
	struct rf_plugin p = { RF_PLUGIN_INIT, .forget = p_forget_meet, .flags = flags };
	pthread_t t[2];
	int i;

	w.plugin = &p;
	atomic_store(&most, 0);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, forget_once, &w), 0);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	w.plugin = &plugin;
	return atomic_load(&most);
}

START_TEST(test_serial_plugin)
{
	ck_assert_int_eq(most_at_once(0), 2);
	ck_assert_int_eq(most_at_once(RF_PLUGIN_SERIAL), 1);
}
END_TEST

START_TEST(test_dead_generation_ids)
{
	struct fuse_read_in ri = { .fh = (2ULL << 48) | 3, .size = 10 };
	struct fuse_release_in rel = { .fh = (2ULL << 48) | 3 };
	struct fuse_in_header in = { .opcode = FUSE_FORGET, .nodeid = (2ULL << 48) | 10 };
	struct fuse_forget_in f = { .nlookup = 3 };

	/* a node id of generation 1 reaches a generation-0 worker: ESTALE */
	make(FUSE_LOOKUP, "", 0, "x", 2);
	req.in.nodeid = (2ULL << 48) | 5;
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 0);
	ck_assert_int_eq(req.error, ESTALE);
	/* a file handle of another generation: EIO, and the plugin never sees it */
	make(FUSE_READ, &ri, sizeof(ri), "", 0);
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 0);
	ck_assert_int_eq(req.error, EIO);
	/* releasing it is fine: there is nothing left to release */
	make(FUSE_RELEASE, &rel, sizeof(rel), "", 0);
	req.state = RQ_IDLE;
	rf_dispatch(&req);
	ck_assert_int_eq(req.error, 0);
	/* and its forgets are dropped */
	ck_assert(rf_dispatch_noreply(&w, &in, (const char *)&f, sizeof(f)));
	ck_assert_int_eq(seen.calls, 0);
}
END_TEST

START_TEST(test_id_too_big_for_a_tag)
{
	struct rf_entry e = { .ino = 1ULL << 50 };

	make(FUSE_LOOKUP, "", 0, "x", 2);
	req.state = RQ_PLUGIN;
	rf_req_reset(&req);
	rf_reply_entry(&req, &e);
	ck_assert_int_eq(req.error, EIO);
	ck_assert_uint_eq(rf_id_out(&w, 1), 1); /* the root is the root everywhere */
	ck_assert_uint_eq(rf_id_out(&w, 0), 0);
}
END_TEST

START_TEST(test_interrupt_flags_request)
{
	struct fuse_in_header in = { .opcode = FUSE_INTERRUPT };
	struct fuse_interrupt_in ii = { .unique = 2 };

	req.state = RQ_PLUGIN;
	req.in.unique = 2;
	ck_assert(rf_dispatch_noreply(&w, &in, (const char *)&ii, sizeof(ii)));
	ck_assert_int_eq(rf_req_interrupted(&req), 1);
}
END_TEST

/* A zero-copied request as rf_queue_fetched() leaves it: a READ has no
 * pool buffer and no data in the pool, a WRITE a buffer for its reply. */
static void make_zc(uint32_t opcode, const void *arg0, size_t a0len, size_t data)
{
	make(opcode, arg0, a0len, "", 0);
	q.zc = true;
	req.zc = true;
	if (opcode == FUSE_READ)
		req.payload = NULL;
	req.rest = NULL;
	req.rest_len = (uint32_t)data;
}

START_TEST(test_zero_copy_read_takes_no_body)
{
	struct fuse_read_in ri = { .fh = TAG | 3, .size = 8192 };
	struct stat st = { .st_mode = S_IFREG };
	static const char data[16];

	/* by descriptor: a fixed-buffer op on the entry's slot */
	make_zc(FUSE_READ, &ri, sizeof(ri), 0);
	rf_dispatch(&req);
	ck_assert_int_eq(req.fd_op, RF_FDOP_READ);
	ck_assert_uint_eq(req.len, 8192);
	/* from memory, or with a body of the wrong kind: EIO, nothing written */
	make_zc(FUSE_READ, &ri, sizeof(ri), 0);
	req.state = RQ_PLUGIN;
	rf_req_reset(&req);
	rf_reply_data(&req, data, sizeof(data));
	ck_assert_int_eq(req.error, EIO);
	ck_assert_uint_eq(req.reply_len, 0);
	make_zc(FUSE_READ, &ri, sizeof(ri), 0);
	req.state = RQ_PLUGIN;
	rf_req_reset(&req);
	rf_reply_attr(&req, &st, 0);
	ck_assert_int_eq(req.error, EIO);
	/* end of file needs no body */
	make_zc(FUSE_READ, &ri, sizeof(ri), 0);
	req.state = RQ_PLUGIN;
	rf_req_reset(&req);
	rf_reply_data(&req, NULL, 0);
	ck_assert_int_eq(req.error, 0);
}
END_TEST

static void p_write_zc(struct rf_req *r, uint64_t ino, uint64_t fh, off_t off, const void *data,
		       size_t size)
{
	(void)ino;
	(void)fh;
	seen.calls++;
	seen.size = size;
	seen.a = data == NULL;
	rf_reply_write_fd(r, 7, off);
}

START_TEST(test_zero_copy_write_has_no_data_pointer)
{
	static struct rf_plugin zp;
	struct fuse_write_in wi = { .fh = TAG | 3, .offset = 100, .size = 65536 };

	zp = plugin;
	zp.write = p_write_zc;
	w.plugin = &zp;
	make_zc(FUSE_WRITE, &wi, sizeof(wi), 65536);
	rf_dispatch(&req);
	ck_assert_int_eq(seen.calls, 1);
	ck_assert_uint_eq(seen.size, 65536);
	ck_assert_uint_eq(seen.a, 1); /* data NULL: the bytes are in the client's pages */
	ck_assert_int_eq(req.fd_op, RF_FDOP_WRITE);
	ck_assert_uint_eq(req.len, 65536);
	ck_assert_uint_eq(req.off, 100);
}
END_TEST

START_TEST(test_open_by_descriptor_asks_for_zero_copy)
{
	const struct fuse_open_out *o = (const void *)req.payload;
	struct fuse_open_in oi = { 0 };

	make(FUSE_OPEN, &oi, sizeof(oi), "", 0);
	req.state = RQ_PLUGIN;
	rf_req_reset(&req);
	rf_reply_open(&req, 9, RF_OPEN_FD_IO | RF_OPEN_KEEP_CACHE);
	ck_assert_uint_eq(o->open_flags, FOPEN_KEEP_CACHE); /* not a zero-copy queue */
	q.zc = true;
	make(FUSE_OPEN, &oi, sizeof(oi), "", 0);
	req.state = RQ_PLUGIN;
	rf_req_reset(&req);
	rf_reply_open(&req, 9, RF_OPEN_FD_IO | RF_OPEN_KEEP_CACHE);
	ck_assert_uint_eq(o->open_flags, FOPEN_KEEP_CACHE | FOPEN_IO_URING_ZERO_COPY);
	make(FUSE_OPEN, &oi, sizeof(oi), "", 0);
	req.state = RQ_PLUGIN;
	rf_req_reset(&req);
	rf_reply_open(&req, 9, 0); /* served from memory: never zero-copied */
	ck_assert_uint_eq(o->open_flags, 0);
}
END_TEST

/* one dirent (READDIRPLUS's if @plus) named @name of @namelen bytes at @at;
 * returns its size */
static size_t put_dirent(char *at, bool plus, const char *name, uint32_t namelen)
{
	size_t head = (plus ? sizeof(struct fuse_entry_out) : 0) + sizeof(struct fuse_dirent);
	struct fuse_dirent d = { .ino = 5, .off = 1, .namelen = namelen, .type = 8 };
	size_t rec = FUSE_DIRENT_ALIGN(head + namelen);

	memset(at, 0, rec);
	memcpy(at + head - sizeof(d), &d, sizeof(d));
	memcpy(at + head, name, namelen);
	return rec;
}

/* what a plugin wrote as directory entries is checked whole before it goes
 * out, however it was written */
START_TEST(test_dirents_checked)
{
	static char buf[8192], big[300];
	char why[96];
	size_t n;
	int plus;

	memset(big, 'a', sizeof(big));
	for (plus = 0; plus <= 1; plus++) {
		n = put_dirent(buf, plus, "one", 3);
		n += put_dirent(buf + n, plus, big, NAME_MAX);
		ck_assert(rf_dirents_ok(buf, (uint32_t)n, plus, why, sizeof(why)));
		ck_assert(rf_dirents_ok(buf, 0, plus, why, sizeof(why)));
		/* cut inside the second entry, or inside a header */
		ck_assert(!rf_dirents_ok(buf, (uint32_t)n - 8, plus, why, sizeof(why)));
		ck_assert_ptr_nonnull(strstr(why, "entry 1: 8 bytes past the reply"));
		ck_assert(!rf_dirents_ok(buf, 20, plus, why, sizeof(why)));
		ck_assert_ptr_nonnull(strstr(why, "entry 0: 20 bytes, short of a header"));
		n = put_dirent(buf, plus, big, NAME_MAX + 1);
		ck_assert(!rf_dirents_ok(buf, (uint32_t)n, plus, why, sizeof(why)));
		ck_assert_ptr_nonnull(strstr(why, "a name of 256 bytes"));
		n = put_dirent(buf, plus, "", 0);
		ck_assert(!rf_dirents_ok(buf, (uint32_t)n, plus, why, sizeof(why)));
		n = put_dirent(buf, plus, "a/b", 3);
		ck_assert(!rf_dirents_ok(buf, (uint32_t)n, plus, why, sizeof(why)));
		ck_assert_ptr_nonnull(strstr(why, "a '/' or a NUL"));
		n = put_dirent(buf, plus, "a\0b", 3);
		ck_assert(!rf_dirents_ok(buf, (uint32_t)n, plus, why, sizeof(why)));
	}
}
END_TEST

static Suite *dispatch_suite(void)
{
	Suite *s = suite_create("dispatch");
	TCase *tc = tcase_create("requests");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_lookup_and_entry_reply);
	tcase_add_test(tc, test_unterminated_name);
	tcase_add_test(tc, test_missing_op_is_enosys);
	tcase_add_test(tc, test_rename2);
	tcase_add_test(tc, test_read_bounds_and_fd_reply);
	tcase_add_test(tc, test_write_size_must_match);
	tcase_add_test(tc, test_readdir_respects_size);
	tcase_add_test(tc, test_readdirplus_emulated);
	tcase_add_test(tc, test_dirbuf_plus_entry);
	tcase_add_test(tc, test_setxattr_sizes);
	tcase_add_test(tc, test_forgets);
	tcase_add_test(tc, test_serial_plugin);
	tcase_add_test(tc, test_interrupt_flags_request);
	tcase_add_test(tc, test_dead_generation_ids);
	tcase_add_test(tc, test_id_too_big_for_a_tag);
	tcase_add_test(tc, test_zero_copy_read_takes_no_body);
	tcase_add_test(tc, test_zero_copy_write_has_no_data_pointer);
	tcase_add_test(tc, test_open_by_descriptor_asks_for_zero_copy);
	tcase_add_test(tc, test_dirents_checked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(dispatch_suite());
}
