// SPDX-License-Identifier: MIT
/* Reading the text of a policy file, without ever waiting on it. */
#include "policy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rf_read_policy_file(const char *path, size_t max, char **text, size_t *len)
{
	struct stat st;
	size_t got = 0;
	char *buf;
	ssize_t n;
	int fd, r;

	/* O_NONBLOCK: a FIFO put where a policy was expected must not hold
	 * the open until someone writes it (nor may a terminal become ours) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -ENOTSUP;
		goto close_fd;
	}
	if ((uint64_t)st.st_size > max) {
		r = -EFBIG;
		goto close_fd;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		r = -ENOMEM;
		goto close_fd;
	}
	/* a file that grows meanwhile is read up to the size it had */
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			free(buf);
			goto close_fd;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	*text = buf;
	*len = got;
	return 0;
close_fd:
	close(fd);
	return r;
}

const char *rf_read_policy_error(int r)
{
	switch (r) {
	case -ENOTSUP:
		return "not a regular file";
	case -EFBIG:
		return "too large";
	default:
		return strerror(-r);
	}
}
