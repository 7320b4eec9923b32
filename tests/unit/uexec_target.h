/* SPDX-License-Identifier: MIT */
/* What check_uexec leaves for uexec_target to find. */
#ifndef RINGFENCE_UEXEC_TARGET_H
#define RINGFENCE_UEXEC_TARGET_H

#define MARK_AT ((void *)0x7e5a00000000ULL)
#define MARK "a mapping made before"

#endif
