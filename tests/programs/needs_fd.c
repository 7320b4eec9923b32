// SPDX-License-Identifier: MIT
/*
 * needs_fd: a libfuse 3 program that reads the device itself
 * (fuse_session_fd), which ringfence's libfuse3.so.3 does not have: the
 * loader ends it at the call (exit 127), naming the function, and the
 * tenant's log says so.
 */
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdio.h>

int main(int argc, char *argv[])
{
	static const struct fuse_lowlevel_ops ops = { 0 };
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts o;
	struct fuse_session *se;

	if (fuse_parse_cmdline(&args, &o) != 0)
		return 1;
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		return 1;
	printf("the device: %d\n", fuse_session_fd(se));
	fuse_session_destroy(se);
	return 0;
}
