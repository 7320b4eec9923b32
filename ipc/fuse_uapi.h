/* SPDX-License-Identifier: MIT */
/*
 * The FUSE kernel protocol (7.46, Linux 7.3) as ringfence uses it; Linux
 * 6.18 speaks 7.45, which is 7.46 without buffer pools and zero copy.
 *
 * Debian 12 ships protocol 7.38 in <linux/fuse.h>, without io-uring, so the
 * project carries its own definitions, written from the protocol as checked
 * on that kernel (docs/design.md says what the code relies on). Never
 * include <linux/fuse.h> together with this header. Every struct size is
 * checked by a static assert below and by tests/unit/check_uapi.c.
 */
#ifndef RINGFENCE_FUSE_UAPI_H
#define RINGFENCE_FUSE_UAPI_H

#include <stdint.h>
#include <sys/ioctl.h>

#define FUSE_KERNEL_VERSION 7
#define FUSE_KERNEL_MINOR_VERSION 46
#define FUSE_ROOT_ID 1

/* The smallest buffer a classic /dev/fuse read accepts. */
#define FUSE_MIN_READ_BUFFER 8192

/* INIT flags (the low 32 bits in flags, the high 32 bits in flags2). */
#define FUSE_ASYNC_READ (1ULL << 0)
#define FUSE_POSIX_LOCKS (1ULL << 1)
#define FUSE_FILE_OPS (1ULL << 2)
#define FUSE_ATOMIC_O_TRUNC (1ULL << 3)
#define FUSE_EXPORT_SUPPORT (1ULL << 4)
#define FUSE_BIG_WRITES (1ULL << 5)
#define FUSE_DONT_MASK (1ULL << 6)
#define FUSE_SPLICE_WRITE (1ULL << 7)
#define FUSE_SPLICE_MOVE (1ULL << 8)
#define FUSE_SPLICE_READ (1ULL << 9)
#define FUSE_FLOCK_LOCKS (1ULL << 10)
#define FUSE_HAS_IOCTL_DIR (1ULL << 11)
#define FUSE_AUTO_INVAL_DATA (1ULL << 12)
#define FUSE_DO_READDIRPLUS (1ULL << 13)
#define FUSE_READDIRPLUS_AUTO (1ULL << 14)
#define FUSE_ASYNC_DIO (1ULL << 15)
#define FUSE_WRITEBACK_CACHE (1ULL << 16)
#define FUSE_NO_OPEN_SUPPORT (1ULL << 17)
#define FUSE_PARALLEL_DIROPS (1ULL << 18)
#define FUSE_HANDLE_KILLPRIV (1ULL << 19)
#define FUSE_POSIX_ACL (1ULL << 20)
#define FUSE_ABORT_ERROR (1ULL << 21)
#define FUSE_MAX_PAGES (1ULL << 22)
#define FUSE_CACHE_SYMLINKS (1ULL << 23)
#define FUSE_NO_OPENDIR_SUPPORT (1ULL << 24)
#define FUSE_EXPLICIT_INVAL_DATA (1ULL << 25)
#define FUSE_MAP_ALIGNMENT (1ULL << 26)
#define FUSE_SUBMOUNTS (1ULL << 27)
#define FUSE_HANDLE_KILLPRIV_V2 (1ULL << 28)
#define FUSE_SETXATTR_EXT (1ULL << 29)
#define FUSE_INIT_EXT (1ULL << 30)
#define FUSE_INIT_RESERVED (1ULL << 31)
#define FUSE_SECURITY_CTX (1ULL << 32)
#define FUSE_HAS_INODE_DAX (1ULL << 33)
#define FUSE_CREATE_SUPP_GROUP (1ULL << 34)
#define FUSE_HAS_EXPIRE_ONLY (1ULL << 35)
#define FUSE_DIRECT_IO_ALLOW_MMAP (1ULL << 36)
#define FUSE_PASSTHROUGH (1ULL << 37)
#define FUSE_NO_EXPORT_SUPPORT (1ULL << 38)
#define FUSE_HAS_RESEND (1ULL << 39)
#define FUSE_ALLOW_IDMAP (1ULL << 40)
#define FUSE_OVER_IO_URING (1ULL << 41)
#define FUSE_REQUEST_TIMEOUT (1ULL << 42)
/* 7.46: the kernel takes io-uring buffer pools (ADD_QUEUE, ADD_BUFPOOL) */
#define FUSE_HAS_IO_URING_BUFPOOL (1ULL << 43)

/* fuse_setattr_in.valid */
#define FATTR_MODE (1U << 0)
#define FATTR_UID (1U << 1)
#define FATTR_GID (1U << 2)
#define FATTR_SIZE (1U << 3)
#define FATTR_ATIME (1U << 4)
#define FATTR_MTIME (1U << 5)
#define FATTR_FH (1U << 6)
#define FATTR_ATIME_NOW (1U << 7)
#define FATTR_MTIME_NOW (1U << 8)
#define FATTR_LOCKOWNER (1U << 9)
#define FATTR_CTIME (1U << 10)
#define FATTR_KILL_SUIDGID (1U << 11)

/* fuse_open_out.open_flags */
#define FOPEN_DIRECT_IO (1U << 0)
#define FOPEN_KEEP_CACHE (1U << 1)
#define FOPEN_NONSEEKABLE (1U << 2)
#define FOPEN_CACHE_DIR (1U << 3)
#define FOPEN_STREAM (1U << 4)
#define FOPEN_NOFLUSH (1U << 5)
#define FOPEN_PARALLEL_DIRECT_WRITES (1U << 6)
#define FOPEN_PASSTHROUGH (1U << 7)
/* 7.46: move this file's READ/WRITE data through the client's own pages,
 * when its queue is a zero-copy one and the request's data is in pages */
#define FOPEN_IO_URING_ZERO_COPY (1U << 8)

/* fuse_getattr_in.getattr_flags */
#define FUSE_GETATTR_FH (1U << 0)
/* fuse_write_in.write_flags */
#define FUSE_WRITE_CACHE (1U << 0)
#define FUSE_WRITE_LOCKOWNER (1U << 1)
#define FUSE_WRITE_KILL_SUIDGID (1U << 2)
/* fuse_open_in.open_flags, fuse_create_in.open_flags */
#define FUSE_OPEN_KILL_SUIDGID (1U << 0)
/* fuse_read_in.read_flags */
#define FUSE_READ_LOCKOWNER (1U << 1)
/* fuse_fsync_in.fsync_flags */
#define FUSE_FSYNC_FDATASYNC (1U << 0)
/* fuse_release_in.release_flags */
#define FUSE_RELEASE_FLUSH (1U << 0)

enum fuse_opcode {
	FUSE_LOOKUP = 1,
	FUSE_FORGET = 2,
	FUSE_GETATTR = 3,
	FUSE_SETATTR = 4,
	FUSE_READLINK = 5,
	FUSE_SYMLINK = 6,
	FUSE_MKNOD = 8,
	FUSE_MKDIR = 9,
	FUSE_UNLINK = 10,
	FUSE_RMDIR = 11,
	FUSE_RENAME = 12,
	FUSE_LINK = 13,
	FUSE_OPEN = 14,
	FUSE_READ = 15,
	FUSE_WRITE = 16,
	FUSE_STATFS = 17,
	FUSE_RELEASE = 18,
	FUSE_FSYNC = 20,
	FUSE_SETXATTR = 21,
	FUSE_GETXATTR = 22,
	FUSE_LISTXATTR = 23,
	FUSE_REMOVEXATTR = 24,
	FUSE_FLUSH = 25,
	FUSE_INIT = 26,
	FUSE_OPENDIR = 27,
	FUSE_READDIR = 28,
	FUSE_RELEASEDIR = 29,
	FUSE_FSYNCDIR = 30,
	FUSE_GETLK = 31,
	FUSE_SETLK = 32,
	FUSE_SETLKW = 33,
	FUSE_ACCESS = 34,
	FUSE_CREATE = 35,
	FUSE_INTERRUPT = 36,
	FUSE_BMAP = 37,
	FUSE_DESTROY = 38,
	FUSE_IOCTL = 39,
	FUSE_POLL = 40,
	FUSE_NOTIFY_REPLY = 41,
	FUSE_BATCH_FORGET = 42,
	FUSE_FALLOCATE = 43,
	FUSE_READDIRPLUS = 44,
	FUSE_RENAME2 = 45,
	FUSE_LSEEK = 46,
	FUSE_COPY_FILE_RANGE = 47,
	FUSE_SETUPMAPPING = 48,
	FUSE_REMOVEMAPPING = 49,
	FUSE_SYNCFS = 50,
	FUSE_TMPFILE = 51,
	FUSE_STATX = 52,
	FUSE_COPY_FILE_RANGE_64 = 53,
	FUSE_OPCODE_MAX = 54,
};

/* Server -> kernel notifications (fuse_out_header.error carries the code). */
enum fuse_notify_code {
	FUSE_NOTIFY_POLL = 1,
	FUSE_NOTIFY_INVAL_INODE = 2,
	FUSE_NOTIFY_INVAL_ENTRY = 3,
	FUSE_NOTIFY_STORE = 4,
	FUSE_NOTIFY_RETRIEVE = 5,
	FUSE_NOTIFY_DELETE = 6,
};

struct fuse_attr {
	uint64_t ino;
	uint64_t size;
	uint64_t blocks;
	uint64_t atime;
	uint64_t mtime;
	uint64_t ctime;
	uint32_t atimensec;
	uint32_t mtimensec;
	uint32_t ctimensec;
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint32_t rdev;
	uint32_t blksize;
	uint32_t flags;
};

struct fuse_kstatfs {
	uint64_t blocks;
	uint64_t bfree;
	uint64_t bavail;
	uint64_t files;
	uint64_t ffree;
	uint32_t bsize;
	uint32_t namelen;
	uint32_t frsize;
	uint32_t padding;
	uint32_t spare[6];
};

struct fuse_in_header {
	uint32_t len;
	uint32_t opcode;
	uint64_t unique;
	uint64_t nodeid;
	uint32_t uid;
	uint32_t gid;
	uint32_t pid;
	uint16_t total_extlen; /* in units of 8 bytes */
	uint16_t padding;
};

struct fuse_out_header {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

struct fuse_init_in {
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint32_t flags2;
	uint32_t unused[11];
};

struct fuse_init_out {
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint16_t max_background;
	uint16_t congestion_threshold;
	uint32_t max_write;
	uint32_t time_gran;
	uint16_t max_pages;
	uint16_t map_alignment;
	uint32_t flags2;
	uint32_t max_stack_depth;
	uint16_t request_timeout;
	uint16_t unused[11];
};

struct fuse_entry_out {
	uint64_t nodeid;
	uint64_t generation;
	uint64_t entry_valid;
	uint64_t attr_valid;
	uint32_t entry_valid_nsec;
	uint32_t attr_valid_nsec;
	struct fuse_attr attr;
};

struct fuse_forget_in {
	uint64_t nlookup;
};

struct fuse_forget_one {
	uint64_t nodeid;
	uint64_t nlookup;
};

struct fuse_batch_forget_in {
	uint32_t count;
	uint32_t dummy;
};

struct fuse_getattr_in {
	uint32_t getattr_flags;
	uint32_t dummy;
	uint64_t fh;
};

struct fuse_attr_out {
	uint64_t attr_valid;
	uint32_t attr_valid_nsec;
	uint32_t dummy;
	struct fuse_attr attr;
};

struct fuse_setattr_in {
	uint32_t valid;
	uint32_t padding;
	uint64_t fh;
	uint64_t size;
	uint64_t lock_owner;
	uint64_t atime;
	uint64_t mtime;
	uint64_t ctime;
	uint32_t atimensec;
	uint32_t mtimensec;
	uint32_t ctimensec;
	uint32_t mode;
	uint32_t unused4;
	uint32_t uid;
	uint32_t gid;
	uint32_t unused5;
};

struct fuse_mknod_in {
	uint32_t mode;
	uint32_t rdev;
	uint32_t umask;
	uint32_t padding;
};

struct fuse_mkdir_in {
	uint32_t mode;
	uint32_t umask;
};

struct fuse_rename_in {
	uint64_t newdir;
};

struct fuse_rename2_in {
	uint64_t newdir;
	uint32_t flags;
	uint32_t padding;
};

struct fuse_link_in {
	uint64_t oldnodeid;
};

struct fuse_open_in {
	uint32_t flags;
	uint32_t open_flags;
};

struct fuse_create_in {
	uint32_t flags;
	uint32_t mode;
	uint32_t umask;
	uint32_t open_flags;
};

struct fuse_open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

struct fuse_release_in {
	uint64_t fh;
	uint32_t flags;
	uint32_t release_flags;
	uint64_t lock_owner;
};

struct fuse_flush_in {
	uint64_t fh;
	uint32_t unused;
	uint32_t padding;
	uint64_t lock_owner;
};

struct fuse_read_in {
	uint64_t fh;
	uint64_t offset;
	uint32_t size;
	uint32_t read_flags;
	uint64_t lock_owner;
	uint32_t flags;
	uint32_t padding;
};

struct fuse_write_in {
	uint64_t fh;
	uint64_t offset;
	uint32_t size;
	uint32_t write_flags;
	uint64_t lock_owner;
	uint32_t flags;
	uint32_t padding;
};

struct fuse_write_out {
	uint32_t size;
	uint32_t padding;
};

struct fuse_statfs_out {
	struct fuse_kstatfs st;
};

struct fuse_fsync_in {
	uint64_t fh;
	uint32_t fsync_flags;
	uint32_t padding;
};

/* Without FUSE_SETXATTR_EXT (which ringfence does not negotiate) the
 * setxattr header is the 8-byte compat form. */
struct fuse_setxattr_in {
	uint32_t size;
	uint32_t flags;
};

struct fuse_getxattr_in {
	uint32_t size;
	uint32_t padding;
};

struct fuse_getxattr_out {
	uint32_t size;
	uint32_t padding;
};

struct fuse_access_in {
	uint32_t mask;
	uint32_t padding;
};

struct fuse_interrupt_in {
	uint64_t unique;
};

struct fuse_fallocate_in {
	uint64_t fh;
	uint64_t offset;
	uint64_t length;
	uint32_t mode;
	uint32_t padding;
};

struct fuse_lseek_in {
	uint64_t fh;
	uint64_t offset;
	uint32_t whence;
	uint32_t padding;
};

struct fuse_lseek_out {
	uint64_t offset;
};

struct fuse_dirent {
	uint64_t ino;
	uint64_t off;
	uint32_t namelen;
	uint32_t type;
	char name[];
};

struct fuse_direntplus {
	struct fuse_entry_out entry_out;
	struct fuse_dirent dirent;
};

/* Each dirent is padded to 8 bytes. */
#define FUSE_DIRENT_ALIGN(x) (((x) + sizeof(uint64_t) - 1) & ~(sizeof(uint64_t) - 1))
#define FUSE_DIRENT_SIZE(namelen) FUSE_DIRENT_ALIGN(sizeof(struct fuse_dirent) + (namelen))
#define FUSE_DIRENTPLUS_SIZE(namelen) \
	FUSE_DIRENT_ALIGN(sizeof(struct fuse_entry_out) + sizeof(struct fuse_dirent) + (namelen))

struct fuse_notify_inval_entry_out {
	uint64_t parent;
	uint32_t namelen;
	uint32_t flags;
};

/* ioctls on /dev/fuse: type 229 ('\xe5'). */
#define FUSE_DEV_IOC_MAGIC 229
#define FUSE_DEV_IOC_CLONE _IOR(FUSE_DEV_IOC_MAGIC, 0, uint32_t)

/*
 * FUSE over io-uring (protocol 7.42+). Commands go as IORING_OP_URING_CMD on
 * an SQE128 ring; struct fuse_uring_cmd_req sits in the SQE's command area.
 */
#define FUSE_URING_IN_OUT_HEADER_SZ 128
#define FUSE_URING_OP_IN_OUT_SZ 128

/* fuse_uring_ent_in_out.flags (7.46): the request's data is in the
 * client's pages, at the entry's zero-copy buffer index */
#define FUSE_URING_ENT_ZERO_COPY (1ULL << 0)

struct fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id; /* the request's unique; echoed in the commit */
	uint32_t payload_sz; /* bytes of payload, both directions */
	uint32_t offset; /* 7.46: where the payload starts within the buffer pool */
	uint64_t reserved;
};

struct fuse_uring_req_header {
	char in_out[FUSE_URING_IN_OUT_HEADER_SZ]; /* fuse_in_header / fuse_out_header */
	char op_in[FUSE_URING_OP_IN_OUT_SZ]; /* the request's first argument */
	struct fuse_uring_ent_in_out ring_ent_in_out;
};

enum fuse_uring_cmd {
	FUSE_IO_URING_CMD_INVALID = 0,
	FUSE_IO_URING_CMD_REGISTER = 1,
	FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,
	/* 7.46: make queue qid (before anything else on it) */
	FUSE_IO_URING_CMD_ADD_QUEUE = 3,
	/* 7.46: give queue qid its payload pool (after ADD_QUEUE, before any
	 * REGISTER); with IORING_URING_CMD_FIXED, a registered buffer */
	FUSE_IO_URING_CMD_ADD_BUFPOOL = 4,
};

/* fuse_uring_cmd_req.flags of ADD_QUEUE (7.46): a zero-copy queue, which
 * needs a buffer pool and CAP_SYS_ADMIN in the task that adds it */
#define FUSE_URING_ZERO_COPY (1ULL << 0)

struct fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
	union { /* 7.46 */
		struct {
			uint64_t uaddr; /* the pool's first byte */
			uint32_t len;
			uint32_t reserved;
		} bufpool; /* ADD_BUFPOOL */
		/* REGISTER on a zero-copy queue: the slot of the ring's buffer
		 * table the kernel fills with each request's pages; 0 elsewhere */
		uint16_t ent_zero_copy_buf_index;
	};
};

#define RF_UAPI_ASSERT_SIZE(type, size) \
	_Static_assert(sizeof(struct type) == (size), "sizeof(struct " #type ") != " #size)

RF_UAPI_ASSERT_SIZE(fuse_attr, 88);
RF_UAPI_ASSERT_SIZE(fuse_kstatfs, 80);
RF_UAPI_ASSERT_SIZE(fuse_in_header, 40);
RF_UAPI_ASSERT_SIZE(fuse_out_header, 16);
RF_UAPI_ASSERT_SIZE(fuse_init_in, 64);
RF_UAPI_ASSERT_SIZE(fuse_init_out, 64);
RF_UAPI_ASSERT_SIZE(fuse_entry_out, 128);
RF_UAPI_ASSERT_SIZE(fuse_forget_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_forget_one, 16);
RF_UAPI_ASSERT_SIZE(fuse_batch_forget_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_getattr_in, 16);
RF_UAPI_ASSERT_SIZE(fuse_attr_out, 104);
RF_UAPI_ASSERT_SIZE(fuse_setattr_in, 88);
RF_UAPI_ASSERT_SIZE(fuse_mknod_in, 16);
RF_UAPI_ASSERT_SIZE(fuse_mkdir_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_rename_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_rename2_in, 16);
RF_UAPI_ASSERT_SIZE(fuse_link_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_open_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_create_in, 16);
RF_UAPI_ASSERT_SIZE(fuse_open_out, 16);
RF_UAPI_ASSERT_SIZE(fuse_release_in, 24);
RF_UAPI_ASSERT_SIZE(fuse_flush_in, 24);
RF_UAPI_ASSERT_SIZE(fuse_read_in, 40);
RF_UAPI_ASSERT_SIZE(fuse_write_in, 40);
RF_UAPI_ASSERT_SIZE(fuse_write_out, 8);
RF_UAPI_ASSERT_SIZE(fuse_statfs_out, 80);
RF_UAPI_ASSERT_SIZE(fuse_fsync_in, 16);
RF_UAPI_ASSERT_SIZE(fuse_setxattr_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_getxattr_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_getxattr_out, 8);
RF_UAPI_ASSERT_SIZE(fuse_access_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_interrupt_in, 8);
RF_UAPI_ASSERT_SIZE(fuse_fallocate_in, 32);
RF_UAPI_ASSERT_SIZE(fuse_lseek_in, 24);
RF_UAPI_ASSERT_SIZE(fuse_lseek_out, 8);
RF_UAPI_ASSERT_SIZE(fuse_dirent, 24);
RF_UAPI_ASSERT_SIZE(fuse_direntplus, 152);
RF_UAPI_ASSERT_SIZE(fuse_notify_inval_entry_out, 16);
RF_UAPI_ASSERT_SIZE(fuse_uring_ent_in_out, 32);
RF_UAPI_ASSERT_SIZE(fuse_uring_req_header, 288);
RF_UAPI_ASSERT_SIZE(fuse_uring_cmd_req, 40);

#endif /* RINGFENCE_FUSE_UAPI_H */
