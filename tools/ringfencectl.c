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
		"usage: ringfencectl [-s SOCKET] [--json] COMMAND\n"
		"\n"
		"commands:\n"
		"  status [TENANT]   one line per tenant: state, transport, queues, worker pid,\n"
		"                    uptime, restarts, request and byte counters, latency\n"
		"                    percentiles, the limits mechanism, and why it failed\n"
		"  stats [TENANT]    status plus requests by opcode and errors by errno\n"
		"  reload            re-read the policy file; a file with errors changes nothing\n"
		"  restart TENANT    stop and start a tenant (also one that failed)\n"
		"  umount TENANT     stop a tenant and unmount it\n"
		"  upgrade TENANT [PLUGIN]\n"
		"                    a new worker generation, of PLUGIN (a name or an absolute\n"
		"                    path) if given, keeping the mount, its node ids and open\n"
		"                    files (policy restore_nodes); answers once it serves, or\n"
		"                    with an error once the old plugin is back (rolled back)\n"
		"  upgrade-broker    re-execute the broker's binary (the file now at the path\n"
		"                    it was started from) keeping every mount and worker;\n"
		"                    answered by the new broker, or with why it did not start\n"
		"\n"
		"options:\n"
		"  -s, --socket PATH  the broker's control socket (default %s)\n"
		"  -j, --json         JSON output for status and stats\n"
		"  -h, --help         this text\n"
		"\n"
		"Exit status: 0, 1 when the broker is unreachable or answers with an error,\n"
		"2 for a usage error.\n",
		RF_DEFAULT_CONTROL_SOCKET);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = RF_DEFAULT_CONTROL_SOCKET;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char cmd[1280], buf[4096];
	int c, fd, json = 0, err = 0, saw_error = 0, nargs;
	const char *verb;
	ssize_t n;
	size_t got = 0;

	while ((c = getopt_long(argc, argv, "s:jh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	nargs = argc - optind;
	verb = nargs ? argv[optind] : "";
	if (!((!strcmp(verb, "status") || !strcmp(verb, "stats")) && nargs <= 2) &&
	    !((!strcmp(verb, "reload") || !strcmp(verb, "upgrade-broker")) && nargs == 1) &&
	    !((!strcmp(verb, "restart") || !strcmp(verb, "umount")) && nargs == 2) &&
	    !(!strcmp(verb, "upgrade") && (nargs == 2 || nargs == 3))) {
		usage(stderr);
		return 2;
	}
	if (nargs == 3 && (!argv[optind + 2][0] || strlen(argv[optind + 2]) > 1000 ||
			   strpbrk(argv[optind + 2], " \t\n"))) {
		fprintf(stderr, "ringfencectl: '%s' is not a plugin name or path\n",
			argv[optind + 2]);
		return 2;
	}
	if (nargs >= 2 && (strlen(argv[optind + 1]) > 64 || strpbrk(argv[optind + 1], " \t\n"))) {
		fprintf(stderr, "ringfencectl: '%s' is not a tenant name\n", argv[optind + 1]);
		return 2;
	}
	snprintf(cmd, sizeof(cmd), "%s%s%s%s%s%s\n", verb, nargs >= 2 ? " " : "",
		 nargs >= 2 ? argv[optind + 1] : "", nargs == 3 ? " " : "",
		 nargs == 3 ? argv[optind + 2] : "", json ? " json" : "");
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
		if (!got && !strncmp(buf, "error:", 6))
			saw_error = 1;
		got += (size_t)n;
		if (fwrite(buf, 1, (size_t)n, saw_error ? stderr : stdout) != (size_t)n)
			err = 1;
	}
	if (n < 0)
		fprintf(stderr, "ringfencectl: %s: %s\n", sock, strerror(errno));
	else if (!got)
		fprintf(stderr,
			"ringfencectl: %s: the broker closed the connection without an "
			"answer (too many connections open?)\n",
			sock);
	close(fd);
	return err || saw_error || n < 0 || !got ? 1 : 0;
}
