// SPDX-License-Identifier: MIT
/*
 * The ownership record's encoding (record.h; docs/backing-store.md).
 * Little-endian byte by byte, so the format is the same on any host.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "record.h"

static uint32_t le32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static unsigned int le16(const unsigned char *b)
{
	return (unsigned int)b[0] | (unsigned int)b[1] << 8;
}

static void put_le32(unsigned char *b, uint32_t v)
{
	b[0] = (unsigned char)v;
	b[1] = (unsigned char)(v >> 8);
	b[2] = (unsigned char)(v >> 16);
	b[3] = (unsigned char)(v >> 24);
}

int rf_record_decode(const unsigned char *b, size_t n, struct rf_record *r)
{
	memset(r, 0, sizeof(*r));
	/* version 1 has no magic: its size and first field say what it is */
	if (n == RF_RECORD_V1_SIZE && le32(b) == 1) {
		r->uid = le32(b + 4);
		r->gid = le32(b + 8);
		r->mode = le32(b + 12);
		return 1;
	}
	if (n < 8 || le32(b) != RF_RECORD_MAGIC || le16(b + 6) != n)
		return RF_RECORD_DAMAGED;
	if (le16(b + 4) > RF_RECORD_VERSION)
		return RF_RECORD_NEWER;
	if (le16(b + 4) != 2 || n != RF_RECORD_V2_SIZE)
		return RF_RECORD_DAMAGED;
	r->uid = le32(b + 8);
	r->gid = le32(b + 12);
	r->mode = le32(b + 16);
	r->rdev_major = le32(b + 20);
	r->rdev_minor = le32(b + 24);
	return 2;
}

void rf_record_encode(const struct rf_record *r, unsigned char *b)
{
	memset(b, 0, RF_RECORD_V2_SIZE);
	put_le32(b, RF_RECORD_MAGIC);
	b[4] = RF_RECORD_VERSION;
	b[6] = RF_RECORD_V2_SIZE;
	put_le32(b + 8, r->uid);
	put_le32(b + 12, r->gid);
	put_le32(b + 16, r->mode);
	put_le32(b + 20, r->rdev_major);
	put_le32(b + 24, r->rdev_minor);
}

int rf_record_read(int fd, struct rf_record *r, size_t *size)
{
	unsigned char b[RF_RECORD_MAX];
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = getxattr(path, RF_RECORD_XATTR, b, sizeof(b));
	if (size)
		*size = n > 0 ? (size_t)n : errno == ERANGE ? sizeof(b) : 0;
	memset(r, 0, sizeof(*r));
	if (n < 0)
		return errno == ENODATA ? 0 : errno == ERANGE ? RF_RECORD_DAMAGED : -errno;
	return rf_record_decode(b, (size_t)n, r);
}

int rf_record_write(int fd, const struct rf_record *r)
{
	unsigned char b[RF_RECORD_V2_SIZE];
	char path[64];

	rf_record_encode(r, b);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return setxattr(path, RF_RECORD_XATTR, b, sizeof(b), 0) < 0 ? errno : 0;
}

int rf_record_type_ok(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		return 1;
	}
	return 0;
}

int rf_record_is_tmp_name(const char *name)
{
	return !strncmp(name, RF_RECORD_TMP_PREFIX, sizeof(RF_RECORD_TMP_PREFIX) - 1);
}
