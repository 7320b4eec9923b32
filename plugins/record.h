/* SPDX-License-Identifier: MIT */
/*
 * The ownership record of `ownership = xattr`: the bytes of the
 * "user.ringfence.stat" xattr, as the passthrough plugin and
 * ringfence-fsck read and write them (docs/backing-store.md is the
 * format). The encoding is pure; rf_record_read/write touch the xattr.
 */
#ifndef RINGFENCE_RECORD_H
#define RINGFENCE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define RF_RECORD_XATTR "user.ringfence.stat"
#define RF_RECORD_TMP_PREFIX ".ringfence.tmp."
#define RF_RECORD_MAGIC 0x74734652u /* "RFst" as a little-endian u32 */
#define RF_RECORD_VERSION 2 /* the one written */
#define RF_RECORD_V1_SIZE 16
#define RF_RECORD_V2_SIZE 32
#define RF_RECORD_MAX 64 /* read this much, to tell a longer record from ours */

/* An object's owner, group, mode (type included) and device number. */
struct rf_record {
	uint32_t uid;
	uint32_t gid;
	uint32_t mode;
	uint32_t rdev_major, rdev_minor; /* character and block devices; else 0 */
};

/* What rf_record_decode() found besides a version it reads (positive, so
 * that rf_record_read() keeps negative numbers for -errno). */
enum {
	RF_RECORD_NEWER = 0x100, /* our magic, a version above RF_RECORD_VERSION */
	RF_RECORD_DAMAGED = 0x101, /* no version of ours, or a wrong size for one */
};

/* @n bytes of a record as @r: its version (1 or 2), or RF_RECORD_NEWER or
 * RF_RECORD_DAMAGED (then @r is zeroed: never guessed at). */
int rf_record_decode(const unsigned char *b, size_t n, struct rf_record *r);

/* The current version's record of @r into @b (RF_RECORD_V2_SIZE bytes). */
void rf_record_encode(const struct rf_record *r, unsigned char *b);

/* The record of the file behind @fd (O_PATH or open, through its
 * /proc/self/fd link): its version, RF_RECORD_NEWER or RF_RECORD_DAMAGED
 * (a record longer than RF_RECORD_MAX too), 0 when it has none, or -errno
 * when it cannot be read. *@size (may be NULL): the record's length. */
int rf_record_read(int fd, struct rf_record *r, size_t *size);

/* Write @r as the record of the file behind @fd: 0 or errno. */
int rf_record_write(int fd, const struct rf_record *r);

/* A file type a record may hold (S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO,
 * S_IFSOCK, S_IFCHR, S_IFBLK): 1, else 0. */
int rf_record_type_ok(uint32_t mode);

/* Whether @name is one make_dir() builds a directory under (or a worker
 * that died doing so left). */
int rf_record_is_tmp_name(const char *name);

#endif /* RINGFENCE_RECORD_H */
