// SPDX-License-Identifier: MIT
/* ringfenced: the privileged broker. One process, one libevent loop. */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"
#include "msg.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ringfenced [-f] [-d] [-c POLICY]\n"
		   "       ringfenced --check POLICY\n"
		   "       ringfenced --check-seccomp FILE\n"
		   "\n"
		   "Run untrusted FUSE filesystem plugins, one sandboxed worker per mount,\n"
		   "as the deployment policy file POLICY describes.\n"
		   "\n"
		   "  -c, --config FILE   the deployment policy to serve (default:\n"
		   "                      " RF_POLICY_PATH ")\n"
		   "      --check FILE    validate FILE, print every error as FILE:LINE: ...,\n"
		   "                      and exit 0 (valid) or 1; also warns of a source\n"
		   "                      the tenant's user could not write (or read), which\n"
		   "                      does not change the status; touches nothing\n"
		   "      --check-seccomp FILE\n"
		   "                      validate a seccomp.policy file and print the rules\n"
		   "                      it makes, or its errors as FILE:LINE:COLUMN: ...;\n"
		   "                      exit 0 (valid) or 1\n"
		   "  -f, --foreground    stay in the foreground and log to stderr\n"
		   "  -d, --debug         log debug messages too\n"
		   "  -h, --help          this text\n"
		   "      --version       print the version and the paths built in\n"
		   "      --bench-unsafe LIST\n"
		   "                      for make bench only, to measure what the defaults\n"
		   "                      cost: no-sandbox (workers get no namespaces, no new\n"
		   "                      root and no seccomp), plain-io (file data by\n"
		   "                      pread/pwrite instead of fixed-buffer ops),\n"
		   "                      eager-forget (each FORGET read as it comes, not\n"
		   "                      batched), no-pin (queue threads not bound to their\n"
		   "                      CPUs), private-payload (request payloads in the\n"
		   "                      worker's own memory, not the pool, where entries\n"
		   "                      have buffers of their own; file data by\n"
		   "                      pread/pwrite), spin (each plugin host queue thread\n"
		   "                      on the next CPU, keeper and host polling each other\n"
		   "                      before they sleep), one-process (no plugin host:\n"
		   "                      the keeper runs the plugin itself), comma-separated.\n"
		   "                      Never in production.\n"
		   "      --resume FD, --resume-check FD\n"
		   "                      for upgrade-broker only: take over (or say whether\n"
		   "                      this build could take over) the broker state a\n"
		   "                      running ringfenced handed to its next image in FD\n"
		   "      --learn-seccomp for ringfence-plugin-check --learn: each worker lets\n"
		   "                      through and logs (learn: SYSCALL during OPERATION)\n"
		   "                      every call its seccomp policy refuses. Never in\n"
		   "                      production.\n"
		   "\n"
		   "Signals: SIGTERM and SIGINT unmount every mount and exit; SIGHUP reloads\n"
		   "the policy; SIGUSR2 re-executes the binary at this path keeping every\n"
		   "mount and worker (ringfencectl upgrade-broker says how it went).\n"
		   "Status: ringfencectl status (through the policy's control_socket).\n");
}

static int check_policy(const char *path, struct rf_policy **out)
{
	static char err[16384];
	struct rf_policy *p;

	err[0] = '\0';
	if (rf_config_load(path, &p, err, sizeof(err)) < 0) {
		fputs(err, stderr);
		return -EINVAL;
	}
	if (out)
		*out = p;
	else
		rf_policy_free(p);
	return 0;
}

/*
 * --check: the policy and its seccomp policies; a tenant that could fill a
 * file system another's source is on (an error: it would not start); then
 * what would go wrong at start without being an error of the text: a
 * source the tenant's user could not write (or read). Those are warnings.
 */
static int check_only(const char *path)
{
	char msg[3 * RF_POLICY_PATH_MAX + 256];
	struct rf_policy *p;
	size_t i, warned = 0, errors = 0;

	if (check_policy(path, &p) < 0)
		return 1;
	for (i = 0; i < p->nmounts; i++)
		if (rf_quota_shared_problem(p, &p->mounts[i], msg, sizeof(msg))) {
			fprintf(stderr, "%s:%d: [mount %s]: %s\n", path, p->mounts[i].line,
				p->mounts[i].name, msg);
			errors++;
		}
	if (errors) {
		rf_policy_free(p);
		return 1;
	}
	for (i = 0; i < p->nmounts; i++)
		if (rf_users_check(p, &p->mounts[i], msg, sizeof(msg))) {
			fprintf(stderr, "%s:%d: [mount %s]: warning: %s\n", path, p->mounts[i].line,
				p->mounts[i].name, msg);
			warned++;
		}
	rf_policy_free(p);
	if (warned)
		printf("%s: ok, %zu warning%s\n", path, warned, warned == 1 ? "" : "s");
	else
		printf("%s: ok\n", path);
	return 0;
}

static void on_stop(int sig, short what, void *arg)
{
	struct rf_broker *b = arg;

	(void)what;
	log_info("signal %d (%s): unmounting and exiting", sig, strsignal(sig));
	b->stopping = true;
	event_base_loopbreak(b->base);
}

static void on_sigchld(int sig, short what, void *arg)
{
	struct rf_broker *b = arg;
	int status;
	pid_t pid;
	size_t i;

	(void)sig;
	(void)what;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (rf_recovery_reaped(b, pid))
			continue;
		for (i = 0; i < b->ntenants; i++)
			if (b->tenants[i]->worker_pid == pid) {
				rf_worker_reaped(b->tenants[i], status);
				break;
			}
	}
}

static void on_sigusr2(int sig, short what, void *arg)
{
	char why[512];

	(void)sig;
	(void)what;
	log_info("SIGUSR2: upgrading the broker");
	if (rf_reexec_request(arg, why, sizeof(why)) < 0)
		log_warnx("SIGUSR2: %s", why);
}

static void on_sighup(int sig, short what, void *arg)
{
	char msg[8192];

	(void)sig;
	(void)what;
	log_info("SIGHUP: reloading the policy");
	rf_tenant_reload(arg, msg, sizeof(msg));
}

/* --bench-unsafe's switches: name, flag, what the start-up warning says */
static const struct {
	const char *name;
	unsigned int flag;
	const char *warning;
} bench_switches[] = {
	{ "no-sandbox", RF_BENCH_NO_SANDBOX, "workers run WITHOUT their sandbox" },
	{ "plain-io", RF_BENCH_PLAIN_IO, "file data by pread/pwrite" },
	{ "eager-forget", RF_BENCH_EAGER_FORGET, "each FORGET read at once" },
	{ "no-pin", RF_BENCH_NO_PIN, "queue threads unbound" },
	{ "private-payload", RF_BENCH_PRIVATE_PAYLOAD,
	  "payloads outside the pool (no adoption of their requests)" },
	{ "spin", RF_BENCH_SPIN, "keeper and host poll each other, the host on the next CPU" },
	{ "one-process", RF_BENCH_ONE_PROCESS,
	  "no plugin host: the keeper runs the plugin, without the tenant's seccomp policy" },
};
#define NBENCH (sizeof(bench_switches) / sizeof(bench_switches[0]))

static int parse_bench(const char *arg, unsigned int *flags)
{
	char buf[64], *tok, *save = NULL;
	size_t i;

	if (strlen(arg) >= sizeof(buf)) {
		fprintf(stderr, "ringfenced: --bench-unsafe: '%s' is too long\n", arg);
		return -1;
	}
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NBENCH; i++)
			if (!strcmp(tok, bench_switches[i].name))
				break;
		if (i == NBENCH) {
			fprintf(stderr, "ringfenced: --bench-unsafe: unknown '%s' (expected", tok);
			for (i = 0; i < NBENCH; i++)
				fprintf(stderr, "%s %s", i ? "," : "", bench_switches[i].name);
			fprintf(stderr, ")\n");
			return -1;
		}
		*flags |= bench_switches[i].flag;
	}
	return 0;
}

static void warn_bench(unsigned int flags)
{
	size_t i;

	for (i = 0; i < NBENCH; i++)
		if (flags & bench_switches[i].flag)
			log_warnx("--bench-unsafe=%s: %s: for benchmarks only",
				  bench_switches[i].name, bench_switches[i].warning);
}

/* The worker is where the build put it (make: next to this broker in the
 * build tree; make install: $(libexecdir)/ringfence). */
static void find_worker(struct rf_broker *b)
{
	if (strlen(RF_WORKER_PATH) >= sizeof(b->worker_path))
		fatalx("path too long: %s", RF_WORKER_PATH);
	strcpy(b->worker_path, RF_WORKER_PATH);
	if (access(b->worker_path, X_OK) < 0)
		fatal("worker %s", b->worker_path);
}

/* The path this binary was started from: upgrade-broker runs whatever
 * file is there then. */
static void find_self(struct rf_broker *b)
{
	static const char deleted[] = " (deleted)";
	ssize_t n = readlink("/proc/self/exe", b->self, sizeof(b->self) - 1);
	size_t len;

	if (n < 0)
		fatal("readlink /proc/self/exe");
	b->self[n] = '\0';
	len = (size_t)n;
	if (len > sizeof(deleted) - 1 && !strcmp(b->self + len - (sizeof(deleted) - 1), deleted))
		b->self[len - (sizeof(deleted) - 1)] = '\0';
}

/* A descriptor number given on the command line. */
static int fd_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 3 || v > 65535) {
		fprintf(stderr, "ringfenced: '%s' is not a descriptor number\n", s);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", required_argument, NULL, 'C' },
		{ "check-seccomp", required_argument, NULL, 'S' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "bench-unsafe", required_argument, NULL, 'B' },
		{ "version", no_argument, NULL, 'V' },
		{ "learn-seccomp", no_argument, NULL, 'L' },
		{ "resume", required_argument, NULL, 'R' },
		{ "resume-check", required_argument, NULL, 'K' },
		{ NULL, 0, NULL, 0 },
	};
	struct rf_broker b = {
		.ctl_fd = -1,
		.events = &rf_tenant_events,
		.answer = rf_control_reply,
		.reexec_request = rf_reexec_request,
	};
	struct event *ev_term, *ev_int, *ev_chld, *ev_hup, *ev_usr2;
	const char *config = RF_POLICY_PATH;
	int c, started = 0, resume_fd = -1;
	struct rf_handover h = { 0 };
	char *config_copy = NULL;
	size_t i;

	while ((c = getopt_long(argc, argv, "c:fdh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'C':
			return check_only(optarg);
		case 'S': {
			static char err[16384];

			if (rf_config_seccomp(optarg, stdout, err, sizeof(err)) < 0) {
				fputs(err, stderr);
				return 1;
			}
			return 0;
		}
		case 'B':
			if (parse_bench(optarg, &b.bench) < 0)
				return 2;
			break;
		case 'f':
			b.foreground = 1;
			break;
		case 'd':
			b.debug = 1;
			break;
		case 'R':
			resume_fd = fd_arg(optarg);
			break;
		case 'K':
			return rf_reexec_check(fd_arg(optarg));
		case 'h':
			usage(stdout);
			return 0;
		case 'L':
			b.bench |= RF_UNSAFE_LEARN_SECCOMP;
			break;
		case 'V':
			printf("ringfenced %s\npolicy %s\nplugin_dir %s\nseccomp_policy %s\n"
			       "worker %s\n",
			       RF_VERSION, RF_POLICY_PATH, RF_PLUGIN_DIR, RF_SECCOMP_POLICY,
			       RF_WORKER_PATH);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	b.pid = getpid();
	if (resume_fd >= 0) {
		static char err[8192];

		/* the image before us handed over: its policy, its flags */
		if (rf_reexec_load(resume_fd, &h, err, sizeof(err)) < 0 || h.pid != b.pid) {
			fprintf(stderr, "ringfenced: --resume: %s\n",
				err[0] ? err : "the state is another process's");
			return 1;
		}
		close(resume_fd);
		b.policy = h.policy;
		h.policy = NULL;
		b.foreground = h.foreground;
		b.debug = h.debug;
		b.bench = h.bench;
		config = config_copy = strdup(h.config);
		if (!config)
			return 1;
	} else if (check_policy(config, &b.policy) < 0) {
		return 1;
	}
	/* -f, or "log = stderr" (e.g. under systemd, which keeps stderr): stderr */
	log_init("ringfenced", b.foreground || !strcmp(b.policy->log_target, "stderr"),
		 b.debug ? RF_LOG_DEBUG : RF_LOG_INFO);
	if (geteuid() != 0)
		fatalx("ringfenced must run as root (it mounts and builds rings)");
	find_self(&b);
	find_worker(&b);
	warn_bench(b.bench);
	if (b.bench & RF_UNSAFE_LEARN_SECCOMP)
		log_warnx("--learn-seccomp: workers allow every system call and log those their "
			  "seccomp policy refuses: for ringfence-plugin-check --learn only");
	b.nqueues = rf_possible_cpus();
	/* a resumed image is the daemon it was */
	if (resume_fd < 0 && !b.foreground &&
	    daemon(0, !strcmp(b.policy->log_target, "stderr")) < 0)
		fatal("daemon");
	signal(SIGPIPE, SIG_IGN);

	b.base = event_base_new();
	if (!b.base)
		fatalx("event_base_new");
	ev_term = evsignal_new(b.base, SIGTERM, on_stop, &b);
	ev_int = evsignal_new(b.base, SIGINT, on_stop, &b);
	ev_chld = evsignal_new(b.base, SIGCHLD, on_sigchld, &b);
	ev_hup = evsignal_new(b.base, SIGHUP, on_sighup, &b);
	ev_usr2 = evsignal_new(b.base, SIGUSR2, on_sigusr2, &b);
	b.config = config;
	if (!ev_term || !ev_int || !ev_chld || !ev_hup || !ev_usr2 || evsignal_add(ev_term, NULL) ||
	    evsignal_add(ev_int, NULL) || evsignal_add(ev_chld, NULL) ||
	    evsignal_add(ev_hup, NULL) || evsignal_add(ev_usr2, NULL))
		fatalx("cannot install signal events");
	rf_watchdog_start(&b);
	if (resume_fd >= 0) {
		rf_reexec_adopt(&b, &h);
		rf_handover_free(&h);
		/* a worker that died while the images changed */
		on_sigchld(SIGCHLD, 0, &b);
		rf_notify("READY=1");
		goto serve;
	}
	if (rf_control_open(&b) < 0)
		fatalx("cannot open the control socket %s", b.policy->control_socket);

	/* no worker of a broker before us may keep serving (or holding) a mount */
	rf_orphans_init(&b);
	rf_orphans_sweep(&b);
	log_info("policy %s: %zu mount%s, %u queue%s per mount", config, b.policy->nmounts,
		 b.policy->nmounts == 1 ? "" : "s", b.nqueues, b.nqueues == 1 ? "" : "s");
	for (i = 0; i < b.policy->nmounts; i++) {
		struct rf_tenant *t = rf_tenant_add(&b, &b.policy->mounts[i]);

		if (!t)
			fatal("out of memory");
		if (rf_tenant_start(t) == 0)
			started++;
		else
			log_warnx("%s: not started: %s", t->pol.name, t->fail_reason);
	}
	if (!started) {
		log_warnx("no mount could be started; exiting");
		rf_orphans_forget(&b);
		rf_control_close(&b);
		return 1;
	}

	{
		char st[96];

		snprintf(st, sizeof(st), "READY=1\nSTATUS=serving %d of %zu tenants", started,
			 b.ntenants);
		rf_notify(st);
	}
serve:
	event_base_dispatch(b.base);
	rf_notify("STOPPING=1");

	while (b.ntenants)
		rf_tenant_remove(b.tenants[b.ntenants - 1]);
	rf_orphans_forget(&b);
	rf_control_close(&b);
	event_free(b.watchdog_ev);
	event_free(ev_term);
	event_free(ev_int);
	event_free(ev_chld);
	event_free(ev_hup);
	event_free(ev_usr2);
	if (b.hov_ev)
		event_free(b.hov_ev);
	event_base_free(b.base);
	free(b.tenants);
	rf_policy_free(b.policy);
	free(config_copy);
	log_info("stopped");
	return b.exit_status;
}
