// SPDX-License-Identifier: MIT
/* ringfencectl: talk to a running ringfenced through its control socket. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "policy.h"
#include "status.h"

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
		"  debug TENANT      for a tenant with debug = yes: its plugin host's pid and\n"
		"                    the gdb and strace commands that attach to it (run as\n"
		"                    root on the broker's host)\n"
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

/* The pid of @parent's child (a worker's keeper has one: its plugin
 * host); 0 if none. */
static long child_of(long parent)
{
	char path[64];
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", parent, parent);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return pid;
}

/* ringfencectl debug TENANT: from its status line, the commands that
 * attach a debugger to its plugin host. */
static int debug_tenant(const char *tenant, const char *status)
{
	char worker[24], debug[8], exe[64], path[4096];
	ssize_t n;
	long host;

	if (rf_status_field(status, "worker", " \n", worker, sizeof(worker)) < 0 ||
	    rf_status_field(status, "debug", " \n", debug, sizeof(debug)) < 0) {
		fprintf(stderr, "ringfencectl: debug %s: the broker's status names no worker\n",
			tenant);
		return 1;
	}
	if (strcmp(debug, "yes")) {
		fprintf(stderr,
			"ringfencectl: debug %s: the tenant has debug = no: its plugin host does "
			"not dump core, and the watchdog ends it while a debugger holds it "
			"stopped; say debug = yes in its [mount] section (a tenant in "
			"development)\n",
			tenant);
		return 1;
	}
	host = atol(worker);
	host = host > 0 ? child_of(host) : 0;
	if (!host) {
		fprintf(stderr, "ringfencectl: debug %s: worker %s has no plugin host now\n",
			tenant, worker);
		return 1;
	}
	snprintf(exe, sizeof(exe), "/proc/%ld/exe", host);
	n = readlink(exe, path, sizeof(path) - 1);
	if (n < 0) {
		fprintf(stderr, "ringfencectl: debug %s: %s: %s\n", tenant, exe, strerror(errno));
		return 1;
	}
	path[n] = 0;
	/* its files are the host's (its own root holds none of them): the
	 * sysroot is /, set before gdb attaches */
	printf("tenant %s: plugin host %ld of worker %s\n"
	       "  gdb -iex 'set sysroot /' -p %ld %s\n"
	       "  strace -f -p %ld\n"
	       "a core it dumped: gdb %s CORE\n",
	       tenant, host, worker, host, path, host, path);
	return 0;
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
	char cmd[1280], buf[4096], line[8192];
	int c, fd, json = 0, err = 0, saw_error = 0, nargs, debug;
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
	    !((!strcmp(verb, "restart") || !strcmp(verb, "umount") || !strcmp(verb, "debug")) &&
	      nargs == 2) &&
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
	debug = !strcmp(verb, "debug");
	if (debug)
		verb = "status"; /* whose line says where to look */
	snprintf(cmd, sizeof(cmd), "%s%s%s%s%s%s\n", verb, nargs >= 2 ? " " : "",
		 nargs >= 2 ? argv[optind + 1] : "", nargs == 3 ? " " : "",
		 nargs == 3 ? argv[optind + 2] : "", json && !debug ? " json" : "");
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
		if (debug && !saw_error) {
			/* the status line, kept to read (one tenant's fits) */
			if (got + (size_t)n < sizeof(line)) {
				memcpy(line + got, buf, (size_t)n);
				line[got + (size_t)n] = 0;
			}
		} else if (fwrite(buf, 1, (size_t)n, saw_error ? stderr : stdout) != (size_t)n) {
			err = 1;
		}
		got += (size_t)n;
	}
	if (n < 0)
		fprintf(stderr, "ringfencectl: %s: %s\n", sock, strerror(errno));
	else if (!got)
		fprintf(stderr,
			"ringfencectl: %s: the broker closed the connection without an "
			"answer (too many connections open?)\n",
			sock);
	close(fd);
	if (debug && !saw_error && n >= 0 && got)
		return got < sizeof(line)
			       ? debug_tenant(argv[optind + 1], line)
			       : (fprintf(stderr, "ringfencectl: a status line of %zu bytes\n",
					  got),
				  1);
	return err || saw_error || n < 0 || !got ? 1 : 0;
}
