// SPDX-License-Identifier: MIT
/* ringfencectl: talk to a running ringfenced through its control socket. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "policy.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfencectl [-s SOCKET] status [TENANT]\n"
		"\n"
		"  -s, --socket PATH   the broker's control socket (default %s)\n"
		"  -h, --help          this text\n"
		"\n"
		"status prints one line per tenant: state, transport, queues, worker pid,\n"
		"and request counters (requests through io-uring and /dev/fuse, bytes moved\n"
		"with READ_FIXED / WRITE_FIXED). Exit status 1 if the broker is unreachable\n"
		"or answers with an error.\n",
		RF_DEFAULT_CONTROL_SOCKET);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = RF_DEFAULT_CONTROL_SOCKET;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char cmd[256], buf[4096];
	int c, fd, err = 0, saw_error = 0;
	ssize_t n;

	while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc || strcmp(argv[optind], "status") || argc - optind > 2) {
		usage(stderr);
		return 2;
	}
	snprintf(cmd, sizeof(cmd), "status%s%s\n", argc - optind == 2 ? " " : "",
		 argc - optind == 2 ? argv[optind + 1] : "");
	if (strlen(sock) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "ringfencectl: %s: path too long\n", sock);
		return 1;
	}
	strcpy(sun.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		fprintf(stderr, "ringfencectl: cannot reach ringfenced at %s: %s\n", sock,
			strerror(errno));
		return 1;
	}
	if (write(fd, cmd, strlen(cmd)) < 0) {
		fprintf(stderr, "ringfencectl: %s: %s\n", sock, strerror(errno));
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (!strncmp(buf, "error:", 6))
			saw_error = 1;
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			err = 1;
	}
	close(fd);
	return err || saw_error || n < 0 ? 1 : 0;
}
