// SPDX-License-Identifier: MIT
/*
 * ringfencectl upgrade-broker and SIGUSR2: the broker re-executes its own
 * binary (the file now at the path it was started from, a new build after
 * a package upgrade) in the same process. What it holds stays open across
 * the exec: each tenant's /dev/fuse, pool and state memfds, the worker
 * sockets, the control socket, and the connection of the peer that asked;
 * its records go in a sealed memfd as text (handover.c). The workers are
 * children of the process, not of the image, so they stay ours: their
 * PDEATHSIG (which follows the thread, not the image) does not fire, and
 * they serve on without noticing, their queues never touched by the
 * broker. Signals that would end or confuse the broker are blocked across
 * the exec and delivered to the new image once it listens.
 *
 * Before it lets go, the old image asks the new binary whether it can take
 * the state over (--resume-check): a build that cannot read it, speaks
 * another IPC to the workers or lays out pools differently is refused, and
 * the old image serves on. The exec happens only when no tenant is between
 * states (a worker starting, a successor due, a plugin upgrade, a kick)
 * and no other control connection is open; a broker upgrade waits up to
 * RF_REEXEC_WAIT seconds for that, accepting no connection meanwhile.
 *
 * A broker that crashes still takes its workers with it: the exec is the
 * one way across, and only this code takes it.
 */
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"
#include "msg.h"

#define RF_REEXEC_WAIT 30 /* seconds for the tenants to settle */
#define RF_REEXEC_TICK_MS 20
#define RF_REEXEC_CHECK_MS 10000 /* for the new binary to say it can */
#define RF_REEXEC_STATE_MAX (64U << 20)

/* blocked across the exec: they would end the process, or be lost */
static const int held[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR2 };

static void held_set(sigset_t *s)
{
	size_t i;

	sigemptyset(s);
	for (i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		sigaddset(s, held[i]);
}

/* Why the broker cannot be handed over now, or NULL. */
static const char *busy(const struct rf_broker *b, char *buf, size_t len)
{
	size_t i;
	uint32_t q;

	for (i = 0; i < b->ntenants; i++) {
		const struct rf_tenant *t = b->tenants[i];
		const char *what = NULL;

		if (rf_tenant_upgrading(t))
			what = "a plugin upgrade is under way";
		else if (t->respawn_ev)
			what = "a successor worker is due";
		else if (t->start_ev || rf_tenant_state_shown(t->state) == RF_TENANT_STARTING)
			what = "its worker is starting";
		else if (!rf_tenant_settled(t->state))
			what = "it is between two states";
		else if (t->proc.host_killed)
			what = "its plugin host is being ended";
		for (q = 0; !what && t->kicks && q < t->geom.nqueues; q++)
			if (t->kicks[q].pid > 0)
				what = "a queue is being kicked";
		if (what) {
			snprintf(buf, len, "%s: %s", t->pol.name, what);
			return buf;
		}
	}
	if (b->ctl_conns > (b->hov_conn ? 1U : 0U)) {
		unsigned int n = b->ctl_conns - (b->hov_conn ? 1U : 0U);

		snprintf(buf, len, "%u other control connection%s open", n, n == 1 ? "" : "s");
		return buf;
	}
	return NULL;
}

static void finish(struct rf_broker *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The request ends here (in this image): say why, serve on. */
static void finish(struct rf_broker *b, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "error: upgrade-broker: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	log_warnx("%s; the broker serves on", msg + 7);
	strcat(msg, "\n");
	rf_control_reply(b, &b->hov_conn, msg);
	if (b->hov_ev) {
		event_free(b->hov_ev);
		b->hov_ev = NULL;
	}
	b->hov_pending = false;
	rf_control_pause(b, false);
}

/* The state, as text, in a sealed memfd: the fd or -errno. */
static int state_memfd(const struct rf_broker *b, int reply_fd, size_t *size)
{
	char *text = NULL;
	size_t len = 0, off = 0;
	FILE *f = open_memstream(&text, &len);
	int fd, r;

	if (!f)
		return -errno;
	r = rf_handover_write(b, reply_fd, f);
	if (fclose(f) && !r)
		r = -EIO;
	if (r < 0) {
		free(text);
		return r;
	}
	fd = memfd_create("ringfence-broker-state", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		free(text);
		return -errno;
	}
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(text);
	if (off < len ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		r = off < len ? -EIO : -errno;
		close(fd);
		return r;
	}
	*size = len;
	return fd;
}

/* Run "SELF --resume-check FD" and take what it says (one line, escaped)
 * into @out: 0 when it can take over. The loop waits meanwhile, at most
 * RF_REEXEC_CHECK_MS; the workers do not. */
static int run_check(const struct rf_broker *b, int fd, char *out, size_t outlen)
{
	char fdstr[16], raw[1024];
	size_t got = 0;
	int p[2], status, left = RF_REEXEC_CHECK_MS;
	pid_t pid;

	snprintf(fdstr, sizeof(fdstr), "%d", fd);
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(out, outlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(out, outlen, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char *const argv[] = { (char *)b->self, (char *)"--resume-check", fdstr, NULL };
		sigset_t none;
		int nul = open("/dev/null", O_RDONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0 ||
		    fcntl(fd, F_SETFD, 0) < 0)
			_exit(126);
		execv(b->self, argv);
		dprintf(2, "cannot execute: %s", strerror(errno));
		_exit(127);
	}
	close(p[1]);
	while (left > 0) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		uint64_t t0 = rf_now_ns();
		ssize_t n;
		int r = poll(&pfd, 1, left);

		left -= (int)((rf_now_ns() - t0) / 1000000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n = read(p[0], raw + got, sizeof(raw) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(raw) - 1)
			break;
	}
	close(p[0]);
	if (left <= 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	raw[got] = '\0';
	while (got && raw[got - 1] == '\n')
		raw[--got] = '\0';
	log_escape(raw, out, outlen);
	if (left <= 0) {
		snprintf(out, outlen, "no answer within %d ms", RF_REEXEC_CHECK_MS);
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		if (!got)
			snprintf(out, outlen, "it ended with status 0x%x and said nothing", status);
		return -1;
	}
	return 0;
}

/* Every descriptor the new image takes over, to be kept (@keep) across
 * the exec or closed on it again. */
static void mark_kept(const struct rf_broker *b, int state_fd, int reply_fd, bool keep)
{
	int flag = keep ? 0 : FD_CLOEXEC;
	size_t i;

	fcntl(state_fd, F_SETFD, flag);
	fcntl(b->ctl_fd, F_SETFD, flag);
	if (reply_fd >= 0)
		fcntl(reply_fd, F_SETFD, flag);
	for (i = 0; i < b->ntenants; i++) {
		const struct rf_tenant *t = b->tenants[i];
		int fds[] = { t->fuse_fd, t->pool_fd, t->state_fd, t->ipc_ev ? t->ipc_fd : -1,
			      t->host_ipc_ev ? t->host_ipc_fd : -1 };

		for (size_t k = 0; k < sizeof(fds) / sizeof(fds[0]); k++)
			if (fds[k] >= 0)
				fcntl(fds[k], F_SETFD, flag);
	}
}

static void reexec(struct rf_broker *b)
{
	int reply_fd = b->hov_conn ? bufferevent_getfd(b->hov_conn) : -1;
	char said[1024], fdstr[16];
	sigset_t hold, old;
	size_t size = 0;
	int fd, err;

	fd = state_memfd(b, reply_fd, &size);
	if (fd < 0) {
		finish(b, "cannot write the broker's state: %s", strerror(-fd));
		return;
	}
	if (run_check(b, fd, said, sizeof(said)) < 0) {
		close(fd);
		finish(b, "%s cannot take over: %s", b->self, said);
		return;
	}
	log_info("upgrade-broker: %s: %s", b->self, said);
	log_info("upgrade-broker: re-executing %s (state: %zu bytes, %zu tenants)", b->self, size,
		 b->ntenants);
	rf_notify("RELOADING=1");
	held_set(&hold);
	sigprocmask(SIG_BLOCK, &hold, &old);
	mark_kept(b, fd, reply_fd, true);
	snprintf(fdstr, sizeof(fdstr), "%d", fd);
	{
		char *const argv[] = { b->self, (char *)"--resume", fdstr, NULL };

		execv(b->self, argv);
	}
	err = errno;
	mark_kept(b, fd, reply_fd, false);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(fd);
	rf_notify("READY=1");
	finish(b, "exec %s: %s", b->self, strerror(err));
}

static void tick(int fd, short what, void *arg)
{
	struct rf_broker *b = arg;
	char why[256];

	(void)fd;
	(void)what;
	if (!busy(b, why, sizeof(why))) {
		event_free(b->hov_ev);
		b->hov_ev = NULL;
		reexec(b);
		return;
	}
	/* said at the first tick, not at the request: by now the asking
	 * peer is known (b->hov_conn) and not counted as another */
	if (!b->hov_waited) {
		log_info("upgrade-broker: waiting until no tenant is between states (%s)", why);
		b->hov_waited = true;
	}
	if (rf_now_ns() > b->hov_deadline_ns)
		finish(b, "gave up after %d s: %s", RF_REEXEC_WAIT, why);
}

int rf_reexec_request(struct rf_broker *b, char *why, size_t len)
{
	struct timeval tv = { .tv_usec = RF_REEXEC_TICK_MS * 1000 };

	if (b->hov_pending) {
		snprintf(why, len, "a broker upgrade is under way");
		return -EBUSY;
	}
	b->hov_pending = true;
	b->hov_waited = false;
	b->hov_deadline_ns = rf_now_ns() + RF_REEXEC_WAIT * 1000000000ULL;
	rf_control_pause(b, true);
	b->hov_ev = event_new(b->base, -1, EV_PERSIST, tick, b);
	if (!b->hov_ev || event_add(b->hov_ev, &tv) < 0)
		fatalx("event_new");
	return 0;
}

int rf_reexec_load(int fd, struct rf_handover *h, char *err, size_t errlen)
{
	struct stat st;
	size_t off = 0;
	char *text;
	int r;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > RF_REEXEC_STATE_MAX) {
		snprintf(err, errlen, "fd %d is no broker state", fd);
		return -EINVAL;
	}
	text = malloc((size_t)st.st_size);
	if (!text)
		return -ENOMEM;
	while (off < (size_t)st.st_size) {
		ssize_t n = pread(fd, text + off, (size_t)st.st_size - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "read the broker state: %s",
				 n < 0 ? strerror(errno) : "short");
			free(text);
			return -EIO;
		}
		off += (size_t)n;
	}
	r = rf_handover_parse(text, off, h, err, errlen);
	free(text);
	if (r == 0 && h->nqueues != rf_possible_cpus()) {
		snprintf(err, errlen, "the state has %u queues per mount, this machine %u CPUs",
			 h->nqueues, rf_possible_cpus());
		rf_handover_free(h);
		r = -EINVAL;
	}
	return r;
}

int rf_reexec_check(int fd)
{
	struct rf_handover h;
	char err[4096];

	if (rf_reexec_load(fd, &h, err, sizeof(err)) < 0) {
		printf("%s\n", err);
		return 1;
	}
	printf("ringfenced %s takes over %zu tenant%s from ringfenced %s\n", RF_VERSION, h.ntenants,
	       h.ntenants == 1 ? "" : "s", h.writer);
	rf_handover_free(&h);
	return 0;
}

/* A descriptor handed over as @what: of the kind the records say, kept
 * from the next exec; else -1 (not the tenant's: never closed as its). */
static int take_fd(int fd, const char *what, mode_t type, off_t size, char *why, size_t len)
{
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || (st.st_mode & S_IFMT) != type ||
	    (size >= 0 && st.st_size != size) ||
	    (type == S_IFCHR && st.st_rdev != makedev(10, 229)) ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		if (!why[0])
			snprintf(why, len, "its %s (fd %d) was not handed over", what, fd);
		return -1;
	}
	return fd;
}

/* One tenant of the state; NULL, or why it cannot be served on. */
static const char *adopt_tenant(struct rf_tenant *t, char *why, size_t len)
{
	int r;

	why[0] = '\0';
	t->fuse_fd = take_fd(t->fuse_fd, "/dev/fuse", S_IFCHR, -1, why, len);
	t->pool_fd = take_fd(t->pool_fd, "pool", S_IFREG, (off_t)t->geom.total_size, why, len);
	t->state_fd =
		take_fd(t->state_fd, "state", S_IFREG, (off_t)rf_pool_state_bytes(t), why, len);
	t->ipc_fd = take_fd(t->ipc_fd, "worker socket", S_IFSOCK, -1, why, len);
	t->host_ipc_fd = take_fd(t->host_ipc_fd, "plugin host's socket", S_IFSOCK, -1, why, len);
	if (why[0])
		return why;
	if (t->pool_fd >= 0 && (r = rf_pool_map(t)) < 0) {
		snprintf(why, len, "map its pool at %p: %s", rf_pool_addr(t),
			 r == -EEXIST ? "placed elsewhere" : strerror(-r));
		return why;
	}
	if (t->ipc_fd >= 0) {
		t->ipc_ev =
			event_new(t->b->base, t->ipc_fd, EV_READ | EV_PERSIST, rf_worker_ipc_cb, t);
		if (!t->ipc_ev || event_add(t->ipc_ev, NULL) < 0)
			fatalx("event_new");
	}
	if (t->host_ipc_fd >= 0) {
		t->host_ipc_ev = event_new(t->b->base, t->host_ipc_fd, EV_READ | EV_PERSIST,
					   rf_host_ipc_cb, t);
		if (!t->host_ipc_ev || event_add(t->host_ipc_ev, NULL) < 0)
			fatalx("event_new");
	}
	return NULL;
}

void rf_reexec_adopt(struct rf_broker *b, struct rf_handover *h)
{
	char msg[4096], failed[2048] = "", why[512];
	unsigned int workers = 0, lost = 0;
	sigset_t hold;
	size_t i, n;

	b->handovers = h->handovers;
	for (i = 0; i < h->ntenants; i++) {
		struct rf_tenant *t = rf_tenant_add(b, &h->tenants[i].pol);
		const char *bad;

		if (!t)
			fatal("out of memory");
		*t = h->tenants[i];
		t->b = b;
		bad = adopt_tenant(t, why, sizeof(why));
		if (!bad) {
			workers += t->worker_pid > 0;
			continue;
		}
		log_warnx("%s: not taken over: %s", t->pol.name, bad);
		snprintf(t->fail_reason, sizeof(t->fail_reason), "broker upgrade: %s", bad);
		n = strlen(failed);
		snprintf(failed + n, sizeof(failed) - n, "%s%s (%s)", n ? "; " : "", t->pol.name,
			 bad);
		lost++;
		/* failed: its worker, reaped later, has no successor */
		rf_worker_sigkill(t);
		rf_tenant_give_up(t);
	}
	rf_orphans_init(b);
	rf_orphans_record(b);
	if (lost)
		snprintf(msg, sizeof(msg),
			 "error: broker upgraded to ringfenced %s (from %.60s), pid %d, but %u "
			 "tenant%s could not be taken over: %.1800s\n",
			 RF_VERSION, h->writer, (int)b->pid, lost, lost == 1 ? "" : "s", failed);
	else
		snprintf(msg, sizeof(msg),
			 "broker upgraded to ringfenced %s (from %.60s), pid %d, upgrade %u: %zu "
			 "tenant%s taken over, %u worker%s serving on\n",
			 RF_VERSION, h->writer, (int)b->pid, b->handovers, h->ntenants,
			 h->ntenants == 1 ? "" : "s", workers, workers == 1 ? "" : "s");
	log_info("%.*s", (int)strcspn(msg, "\n"), msg);
	if (rf_control_adopt(b, h->ctl_fd, h->reply_fd, msg) < 0) {
		log_warnx("upgrade-broker: the control socket (fd %d) was not handed over; "
			  "opening it anew",
			  h->ctl_fd);
		if (rf_control_open(b) < 0)
			fatalx("cannot open the control socket %s", b->policy->control_socket);
	}
	/* what the old image held back is delivered now that we listen */
	held_set(&hold);
	sigprocmask(SIG_UNBLOCK, &hold, NULL);
}
