/* SPDX-License-Identifier: MIT */
/* A stat(2) result as the kernel's struct fuse_attr: for the worker's
 * replies and for libfuse/'s directory entries. */
#ifndef RINGFENCE_FUSE_ATTR_H
#define RINGFENCE_FUSE_ATTR_H

#include <sys/stat.h>

#include "fuse_uapi.h"

/* Times before 1970 as 1970 (the worker has always sent them so). */
void rf_fuse_attr(struct fuse_attr *a, const struct stat *st);

#endif /* RINGFENCE_FUSE_ATTR_H */
