/* SPDX-License-Identifier: MIT */
/*
 * ringfence's libfuse 3 (libfuse3.so.3) for unmodified libfuse programs:
 * Debian's libfuse3-dev headers are the contract (the structures' layout,
 * the functions' names), libfuse3.map the symbol versions a program
 * built against Debian's libfuse3-3 asks for.
 */
#ifndef RINGFENCE_LIBFUSE_H
#define RINGFENCE_LIBFUSE_H

#define FUSE_USE_VERSION 314
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <fuse_opt.h>

#endif /* RINGFENCE_LIBFUSE_H */
