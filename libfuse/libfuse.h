/* SPDX-License-Identifier: MIT */
/*
 * ringfence's libfuse 3 for unmodified libfuse programs, built twice from
 * these files:
 *
 * - libfuse3.so.3, for programs built against libfuse 3.1 to 3.16 (Debian
 *   12's libfuse3-3): Debian's libfuse3-dev headers are the contract (the
 *   structures' layout, the functions' names), libfuse3.map the symbol
 *   versions such a program asks for;
 * - libfuse3.so.4 (RF_LIBFUSE_ABI4), for programs built against libfuse
 *   3.17 or later (Debian's libfuse3-4): the same functions under the same
 *   versions, and libfuse3-4.map's besides. Its structures differ from
 *   those headers' in the four places below, which libfuse 3.17's
 *   headers define so, and which this file gives the library in their
 *   layout (each checked by an offset or a size).
 */
#ifndef RINGFENCE_LIBFUSE_H
#define RINGFENCE_LIBFUSE_H

#define FUSE_USE_VERSION 314
#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <fuse_opt.h>

/*
 * struct fuse_file_info: libfuse 3.17 has 24 more bytes at its end
 * (compat_flags, reserved) and backing_id (int32_t, a passthrough file of
 * fuse_passthrough_open) in what was padding before them. Every one the
 * library hands a program is an ll_fi, zeroed, with room for both.
 */
struct ll_fi {
	struct fuse_file_info fi;
	unsigned char tail[24];
};
#define LL_FI_BACKING_ID 36
static_assert(offsetof(struct fuse_file_info, poll_events) == 32 &&
		      sizeof(struct fuse_file_info) == 40,
	      "struct fuse_file_info is not libfuse 3.14's");

/* the program's fi->backing_id (only a libfuse3.so.4 program has one) */
static inline int32_t ll_fi_backing_id(const struct fuse_file_info *fi)
{
#ifdef RF_LIBFUSE_ABI4
	int32_t id;

	memcpy(&id, (const unsigned char *)fi + LL_FI_BACKING_ID, sizeof(id));
	return id;
#else
	(void)fi;
	return 0;
#endif
}

/*
 * struct fuse_buf: libfuse 3.17 appends size_t mem_size, so a vector's
 * buffers are 48 bytes apart, not 40. Every buffer of a program's vector
 * is reached through ll_buf().
 */
#ifdef RF_LIBFUSE_ABI4
#define LL_BUF_SIZE (sizeof(struct fuse_buf) + sizeof(size_t))
#else
#define LL_BUF_SIZE sizeof(struct fuse_buf)
#endif
static_assert(sizeof(struct fuse_buf) == 40, "struct fuse_buf is not libfuse 3.14's");

static inline struct fuse_buf *ll_buf(const struct fuse_bufvec *v, size_t i)
{
	return (struct fuse_buf *)((uintptr_t)v->buf + i * LL_BUF_SIZE);
}

/* a vector of one buffer, as a program of either ABI reads it */
struct ll_bufvec1 {
	struct fuse_bufvec v;
	size_t mem_size; /* libfuse 3.17's buf[0].mem_size: 0, ours */
};

/*
 * struct fuse_conn_info: libfuse 3.17 gives part of reserved[] names:
 * a bit no_interrupt at 44, uint64_t capable_ext at 48 and want_ext at 56
 * (the 64-bit capable and want; fuse_set_feature_flag() and its kin).
 */
#define LL_CONN_CAPABLE_EXT 48
#define LL_CONN_WANT_EXT 56
static_assert(offsetof(struct fuse_conn_info, reserved) == 40 &&
		      sizeof(struct fuse_conn_info) == 128,
	      "struct fuse_conn_info is not libfuse 3.14's");

static inline uint64_t ll_conn_get(const struct fuse_conn_info *c, size_t at)
{
	uint64_t v;

	memcpy(&v, (const unsigned char *)c + at, sizeof(v));
	return v;
}

static inline void ll_conn_set(struct fuse_conn_info *c, size_t at, uint64_t v)
{
	memcpy((unsigned char *)c + at, &v, sizeof(v));
}

/*
 * struct fuse_config (the high-level API's): libfuse 3.17 moves
 * no_rofd_flush after debug and adds fmask, dmask, parallel_direct_writes,
 * flags and reserved[48], which changes the offset of every field after
 * auto_cache. The library keeps its configuration as an ll_config.
 */
#ifdef RF_LIBFUSE_ABI4
struct ll_config {
	int32_t set_gid;
	uint32_t gid;
	int32_t set_uid;
	uint32_t uid;
	int32_t set_mode;
	uint32_t umask;
	double entry_timeout;
	double negative_timeout;
	double attr_timeout;
	int32_t intr;
	int32_t intr_signal;
	int32_t remember;
	int32_t hard_remove;
	int32_t use_ino;
	int32_t readdir_ino;
	int32_t direct_io;
	int32_t kernel_cache;
	int32_t auto_cache;
	int32_t ac_attr_timeout_set;
	double ac_attr_timeout;
	int32_t nullpath_ok;
	int32_t show_help;
	char *modules;
	int32_t debug;
	uint32_t fmask;
	uint32_t dmask;
	int32_t no_rofd_flush;
	int32_t parallel_direct_writes;
	uint32_t flags;
	uint64_t reserved[48];
};
static_assert(offsetof(struct ll_config, ac_attr_timeout_set) == 84 &&
		      offsetof(struct ll_config, modules) == 104 &&
		      offsetof(struct ll_config, no_rofd_flush) == 124 &&
		      sizeof(struct ll_config) == 520,
	      "struct ll_config is not libfuse 3.17's struct fuse_config");
#else
#define ll_config fuse_config
#endif

/* libfuse 3.17's functions (libfuse3.so.4 exports them; libfuse3.map
 * keeps them out of libfuse3.so.3), as its headers declare them */
struct libfuse_version {
	uint32_t major;
	uint32_t minor;
	uint32_t hotfix;
	uint32_t padding;
};
struct fuse_session *fuse_session_new_versioned(struct fuse_args *args,
						const struct fuse_lowlevel_ops *op, size_t op_size,
						struct libfuse_version *version, void *userdata);
int fuse_main_real_versioned(int argc, char *argv[], const struct fuse_operations *op,
			     size_t op_size, struct libfuse_version *version, void *user_data);
struct fuse *_fuse_new_30(struct fuse_args *args, const struct fuse_operations *op, size_t op_size,
			  struct libfuse_version *version, void *user_data);
struct fuse *_fuse_new_31(struct fuse_args *args, const struct fuse_operations *op, size_t op_size,
			  struct libfuse_version *version, void *user_data);
bool fuse_set_feature_flag(struct fuse_conn_info *conn, uint64_t flag);
void fuse_unset_feature_flag(struct fuse_conn_info *conn, uint64_t flag);
bool fuse_get_feature_flag(struct fuse_conn_info *conn, uint64_t flag);
int fuse_passthrough_open(fuse_req_t req, int fd);
int fuse_passthrough_close(fuse_req_t req, int backing_id);
bool fuse_req_is_uring(fuse_req_t req);
int fuse_req_get_payload(fuse_req_t req, char **payload, size_t *payload_sz, void **mr);
int fuse_set_fail_signal_handlers(struct fuse_session *se);
void fuse_log_enable_syslog(const char *ident, int option, int facility);
void fuse_log_close_syslog(void);

/* FUSE_CAP_PASSTHROUGH of libfuse 3.17's headers */
#define LL_CAP_PASSTHROUGH (1ULL << 29)

#endif /* RINGFENCE_LIBFUSE_H */
