// SPDX-License-Identifier: MIT
/* sd_notify without libsystemd: one datagram to $NOTIFY_SOCKET, if set
 * ('@' names an abstract socket). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"

void rf_notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sun.sun_path))
		return;
	strcpy(sun.sun_path, path);
	if (path[0] == '@')
		sun.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sun, len) < 0)
		log_debug("sd_notify: %s", strerror(errno));
	close(fd);
}
