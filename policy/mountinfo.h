/* SPDX-License-Identifier: MIT */
/* The mount table as /proc/self/mountinfo gives it. */
#ifndef RINGFENCE_MOUNTINFO_H
#define RINGFENCE_MOUNTINFO_H

#include <stdint.h>

#define RF_FSTYPE "fuse.ringfence"

/* The newest mount of type @fstype on @mountpoint (a path as mountinfo
 * writes it, unescaped): 0 and its superblock's device number in *@devid
 * (major << 20 | minor, the id of its FUSE connection under
 * /sys/fs/fuse/connections; @devid may be NULL); -ENOENT if there is
 * none; -errno if mountinfo cannot be read. */
int rf_mountinfo_find(const char *mountpoint, const char *fstype, uint32_t *devid);

#endif /* RINGFENCE_MOUNTINFO_H */
