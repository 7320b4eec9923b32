// SPDX-License-Identifier: MIT
/*
 * hostile: a test plugin that attacks its sandbox, one attack per lookup of
 * "attack-NAME" in the root. An attack that the kernel merely refuses is
 * answered with the errno it got; one that unexpectedly succeeds is answered
 * ENOTRECOVERABLE; one that seccomp traps never returns (its process dies).
 *
 * It knows the worker's internals, as an attacker who reads the source
 * would, and uses them to submit on its queue's ring directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ringfence/plugin.h"
#include "testlog.h"
#include "uring_uapi.h"
#include "worker.h" /* the attacker has read our source */

#define SUCCEEDED ENOTRECOVERABLE

static char every_lookup[32]; /* options = every_lookup=NAME */
static int source_fd = -1;

static int result(long r)
{
	return r < 0 ? errno : SUCCEEDED;
}

static int open_result(int fd)
{
	if (fd >= 0) {
		close(fd);
		return SUCCEEDED;
	}
	return errno;
}

static int a_execve(void)
{
	char *const argv[] = { (char *)"sh", NULL };

	return result(execve("/bin/sh", argv, NULL));
}

static int a_shadow(void)
{
	return open_result(open("/etc/shadow", O_RDONLY));
}

static int a_abs(void)
{
	return open_result(open("/etc/passwd", O_RDONLY));
}

static int a_dotdot(void)
{
	return open_result(openat(source_fd, "../../../../etc/passwd", O_RDONLY));
}

static int a_symlink(void)
{
	int r;

	if (symlinkat("/etc/passwd", source_fd, ".evil") < 0 && errno != EEXIST)
		return errno;
	r = open_result(openat(source_fd, ".evil", O_RDONLY));
	unlinkat(source_fd, ".evil", 0);
	return r;
}

static int a_procroot(void)
{
	return open_result(open("/proc/self/root/etc/passwd", O_RDONLY));
}

/* look for any other process (the broker, another tenant) in /proc */
static int a_procscan(void)
{
	char p[64], own[32], self[16] = "";
	int pid;

	/* our pid as the namespace's /proc says (getpid is no call the
	 * shipped policy allows) */
	if (readlinkat(AT_FDCWD, "/proc/self", self, sizeof(self) - 1) < 0)
		return errno;
	snprintf(own, sizeof(own), "\nTgid:\t%s\n", self);
	for (pid = 2; pid < 1 << 16; pid++) {
		char st[2048];
		ssize_t n;
		int fd;

		snprintf(p, sizeof(p), "/proc/%d/status", pid);
		fd = open(p, O_RDONLY);
		if (fd < 0) {
			if (errno != ENOENT)
				return errno;
			continue;
		}
		n = read(fd, st, sizeof(st) - 1);
		close(fd);
		st[n > 0 ? n : 0] = '\0';
		/* our own threads are there, and the keeper's (PID 1 of the
		 * namespace, whose child we are); anything else is a leak */
		if (!strstr(st, "\nTgid:\t1\n") && !strstr(st, own))
			return SUCCEEDED;
	}
	return ENOENT;
}

/* Not an attack: the time calls glibc makes where the vDSO cannot serve
 * it, made as system calls, are allowed (any failure is the errno) */
static int a_clocks(void)
{
	struct timespec ts;
	struct timeval tv;

	if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) < 0 ||
	    syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) < 0 ||
	    syscall(SYS_clock_gettime, CLOCK_MONOTONIC_COARSE, &ts) < 0 ||
	    syscall(SYS_clock_gettime, CLOCK_BOOTTIME, &ts) < 0 ||
	    syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts) < 0 ||
	    syscall(SYS_clock_getres, CLOCK_MONOTONIC, &ts) < 0 ||
	    syscall(SYS_gettimeofday, &tv, NULL) < 0 || syscall(SYS_time, NULL) < 0)
		return errno;
	return SUCCEEDED;
}

/* a clock of a device (a dynamic clock: a negative id naming fd 0) */
static int a_clock_fd(void)
{
	struct timespec ts;

	return result(syscall(SYS_clock_gettime, (long)(int)((~0U << 3) | 3), &ts));
}

static int a_killall(void)
{
	return result(kill(-1, SIGKILL));
}

static int a_ptrace(void)
{
	return result(ptrace(PTRACE_ATTACH, 1, NULL, NULL));
}

static int a_vmwrite(void)
{
	char buf[8] = { 0 };
	struct iovec l = { buf, sizeof(buf) }, r = { buf, sizeof(buf) };

	return result(process_vm_writev(1, &l, 1, &r, 1, 0));
}

static int a_socket(void)
{
	return open_result(socket(AF_INET, SOCK_STREAM, 0));
}

static int a_uring_setup(void)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	return open_result((int)syscall(SYS_io_uring_setup, 4, &p));
}

static int a_mount(void)
{
	return result(mount("none", "/proc", "tmpfs", 0, NULL));
}

static int a_unshare(void)
{
	return result(unshare(CLONE_NEWUSER));
}

static int a_setns(void)
{
	return result(setns(0, 0));
}

static int a_chroot(void)
{
	return result(chroot("/"));
}

static int a_setuid0(void)
{
	return result(syscall(SYS_setuid, 0));
}

static int a_capset(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0xff, sizeof(d));
	return result(syscall(SYS_capset, &h, d));
}

static int a_ambient(void)
{
	return result(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0));
}

static int a_dumpable(void)
{
	return result(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
}

/* outlive the broker: no signal when it dies */
static int a_pdeath(void)
{
	return result(prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0));
}

/* a futex wait nobody ends */
static void *wait_forever(void *arg)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;

	pthread_mutex_lock(&m);
	for (;;)
		pthread_cond_wait(&c, &m);
	return arg;
}

/* hold this queue's thread for good */
static int a_block(void)
{
	wait_forever(NULL);
	return SUCCEEDED;
}

static int a_int80(void)
{
	long r;

	/* i386 getpid (20) through the 32-bit entry */
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	return r < 0 ? (int)-r : SUCCEEDED;
}

static int a_x32(void)
{
	return result(syscall(0x40000000L | SYS_getpid));
}

static int a_fork(void)
{
	pid_t p = fork();

	if (p == 0)
		_exit(0);
	return result(p);
}

/* the exit status with which a worker says its FUSE connection ended */
static int a_exit3(void)
{
	_exit(3);
}

/* 64 MiB of shared anonymous memory (shmem: RLIMIT_DATA does not count
 * it), touched */
static int a_shmanon(void)
{
	size_t n = 64 << 20;
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return errno;
	memset(p, 1, n);
	return SUCCEEDED;
}

/* the same through a memfd, and SysV shared memory */
static int a_memfd(void)
{
	return result(syscall(SYS_memfd_create, "x", 0));
}

static int a_shmget(void)
{
	return result(
		syscall(SYS_shmget, 0 /* IPC_PRIVATE */, 1 << 20, 01600 /* IPC_CREAT|0600 */));
}

static int a_membomb(void)
{
	void *chunks[4096];
	int n = 0, i;

	while (n < 4096 && (chunks[n] = malloc(64u << 20)))
		n++;
	for (i = 0; i < n; i++)
		free(chunks[i]);
	return n == 4096 ? SUCCEEDED : ENOMEM;
}

/* as many threads as it takes; each waits for good */
static int a_threadbomb(void)
{
	pthread_attr_t a;
	pthread_t th;
	int i, r = 0;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	for (i = 0; i < 2000 && !r; i++)
		r = pthread_create(&th, &a, wait_forever, NULL);
	pthread_attr_destroy(&a);
	return r ? r : SUCCEEDED;
}

static int a_fdbomb(void)
{
	static int fds[70000];
	int n = 0, err, i;

	while (n < 70000 && (fds[n] = dup(0)) >= 0)
		n++;
	err = n == 70000 ? SUCCEEDED : errno;
	for (i = 0; i < n; i++)
		close(fds[i]);
	return err;
}

static int a_ipc_garbage(void)
{
	return result(write(3, "garbage!", 8));
}

static int a_ipc_fd(void)
{
	struct {
		struct rf_msg_hdr h;
		uint32_t level;
		char s[4];
	} m = { { RF_MSG_LOG, 8, 0, 0 }, 6, "hi!" };
	int fd = 0;

	return result(rf_fdpass_send(3, &m, sizeof(m), &fd, 1));
}

/*
 * The rings within the plugin's reach: its process (the plugin host) has
 * one per queue, the host's own, for file data; the FUSE rings are the
 * keeper's, in another process. Each attack submits straight on it,
 * bypassing the framework: the ring's restrictions answer, and the
 * completion lands in the host's loop, which logs it as unexpected (the
 * test reads the verdict there). Replies EINPROGRESS.
 */
static struct io_uring *own_ring(struct rf_req *req)
{
	return &req->q->hring;
}

static int ring_submit(struct rf_req *req, int opcode, uint64_t tag)
{
	struct io_uring *ring = own_ring(req);
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	static char buf[64];

	if (!sqe)
		return EBUSY;
	io_uring_prep_rw(opcode, sqe, 0, buf, sizeof(buf), 0);
	if (opcode == IORING_OP_OPENAT) {
		sqe->addr = (uint64_t)(uintptr_t) "/etc/passwd";
		sqe->len = 0;
		sqe->fd = AT_FDCWD;
	}
	sqe->user_data = tag;
	io_uring_submit(ring);
	return EINPROGRESS;
}

static int a_ring_buffers(struct rf_req *req)
{
	struct iovec iov = {
		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), 4096
	};

	return result(syscall(SYS_io_uring_register, req->q->hring_fd, 0 /* BUFFERS */, &iov, 1));
}

/*
 * "zcfile": opened RF_OPEN_FD_IO, so that on a zero-copy queue its reads
 * arrive with the client's pages in the FUSE ring's buffer slot. The first
 * ZC_READ bytes are answered from memory, which the framework must refuse
 * (EIO); a read at ZC_READ reaches for the client's pages and the queue's
 * set-up from the plugin's own ring, each SQE tagged 0xbadN0 or 0xbadN8
 * for the test to find its result in the broker's log, and answers
 * EINPROGRESS.
 */
#define ZC_READ 4096

/* A FUSE io-uring command on the plugin's own ring */
static void ring_cmd(struct rf_req *req, uint32_t op, uint64_t flags, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(own_ring(req));
	struct fuse_uring_cmd_req *c;
	static char own[1 << 20] __attribute__((aligned(4096)));

	if (!sqe)
		return;
	c = rf_prep_fuse_cmd(sqe, op, (uint16_t)req->q->qid, 0);
	c->flags = flags;
	if (op == FUSE_IO_URING_CMD_ADD_BUFPOOL) {
		c->bufpool.uaddr = (uint64_t)(uintptr_t)own;
		c->bufpool.len = sizeof(own);
	}
	sqe->flags = 0; /* the host's ring allows no SQE flag, and has no fixed file */
	sqe->user_data = tag;
}

/* A fresh FUSE entry, whose payload is a zero-copy slot, from the
 * plugin's own ring. */
static int register_foreign(struct rf_req *req)
{
	static char hdr[sizeof(struct fuse_uring_req_header)];
	static struct iovec iov[2] = { { hdr, sizeof(hdr) }, { NULL, 0 } };
	struct io_uring_sqe *sqe = io_uring_get_sqe(own_ring(req));

	if (!sqe)
		return EBUSY;
	rf_prep_fuse_cmd(sqe, FUSE_IO_URING_CMD_REGISTER, (uint16_t)req->q->qid, 0);
	sqe->flags = 0;
	sqe->addr = (uint64_t)(uintptr_t)iov;
	sqe->len = 2;
	sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	sqe->buf_index = RF_BUF_INDEX_ZC + req->idx;
	sqe->user_data = 0xbad50;
	io_uring_submit(own_ring(req));
	return EINPROGRESS;
}

/* FUSE commands in a loop on the plugin's ring: REGISTER (each one a FUSE
 * entry the kernel would allocate) or COMMIT_AND_FETCH with ids that do
 * not exist (each one a kernel log line). The
 * count comes from the option register_bomb=N (default 100000). */
static unsigned long bomb_count = 100000;

static int cmd_bomb(struct rf_req *req, uint32_t op)
{
	static char hdr[sizeof(struct fuse_uring_req_header)];
	static struct iovec iov[2] = { { hdr, sizeof(hdr) }, { NULL, 0 } };
	struct io_uring *ring = own_ring(req);
	unsigned long i, sent = 0;

	iov[1].iov_base = req->payload;
	iov[1].iov_len = req->payload_cap;
	for (i = 0; i < bomb_count; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

		if (!sqe) {
			int r = io_uring_submit(ring);

			if (r < 0)
				break;
			sent += (unsigned long)r;
			sqe = io_uring_get_sqe(ring);
			if (!sqe)
				break;
		}
		rf_prep_fuse_cmd(sqe, op, (uint16_t)req->q->qid, 2 * i + 1000000);
		sqe->flags = 0;
		sqe->addr = (uint64_t)(uintptr_t)iov;
		sqe->len = 2;
		sqe->user_data = 0xbad60;
	}
	sent += (unsigned long)io_uring_submit(ring);
	test_log("%s bomb: %lu commands submitted",
		 op == FUSE_IO_URING_CMD_REGISTER ? "REGISTER" : "COMMIT_AND_FETCH", sent);
	return EINPROGRESS;
}

static int zc_attack(struct rf_req *req)
{
	struct io_uring_sqe *sqe;
	int fd = openat(source_fd, "zcdata", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	static char data[2 * ZC_READ];

	if (fd < 0 || pwrite(fd, data, sizeof(data), 0) < 0)
		return errno;
	/* the client's pages are in the FUSE ring's buffer table, not in
	 * this one's: a slot past its table */
	sqe = io_uring_get_sqe(own_ring(req));
	if (sqe) {
		io_uring_prep_read_fixed(sqe, fd, data, ZC_READ, 0, 1000);
		sqe->user_data = 0xbad10;
	}
	/* the queue again, a zero-copy one, or plain; a pool of its own */
	ring_cmd(req, FUSE_IO_URING_CMD_ADD_QUEUE, FUSE_URING_ZERO_COPY, 0xbad30);
	ring_cmd(req, FUSE_IO_URING_CMD_ADD_QUEUE, 0, 0xbad38);
	ring_cmd(req, FUSE_IO_URING_CMD_ADD_BUFPOOL, 0, 0xbad40);
	io_uring_submit(own_ring(req));
	close(fd);
	return EINPROGRESS;
}

/* What the plugin claims: a directory root, /dev/mem as "devnode" and a
 * setuid-root file as "suid" (what nodev and nosuid must defuse). */
static void attrs(uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_nlink = 1;
	st->st_size = 16;
	if (ino == 100) {
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = makedev(1, 1);
	} else if (ino == 101) {
		st->st_mode = S_IFREG | 04755;
	} else if (ino == 102) {
		st->st_mode = S_IFREG | 0644;
		st->st_size = 2 * ZC_READ;
	} else if (ino == 105 || ino == 106) { /* dirbacked, backed */
		st->st_mode = S_IFREG | 0644;
	} else {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	}
}

static void reply_entry(struct rf_req *req, uint64_t ino)
{
	struct rf_entry e = { .ino = ino, .attr_timeout = 0, .entry_timeout = 0 };

	attrs(ino, &e.attr);
	rf_reply_entry(req, &e);
}

/* a log line that would forge a broker line of its own and clear the
 * terminal of whoever reads the log */
static int a_logforge(void)
{
	char buf[sizeof(struct rf_msg_log) + 64];
	struct rf_msg_log *l = (struct rf_msg_log *)buf;
	static const char line[] = "x\nringfenced[1]: FORGED line\x1b[2J";

	l->level = 6;
	memcpy(l->line, line, sizeof(line));
	return result(rf_msg_send(3, RF_MSG_LOG, 0, l, sizeof(*l) + sizeof(line), NULL, 0));
}

static int flood(long n, time_t until)
{
	char buf[sizeof(struct rf_msg_log) + 16];
	struct rf_msg_log *l = (struct rf_msg_log *)buf;
	long i;

	l->level = 3;
	memcpy(l->line, "FLOOD", 6);
	for (i = 0; i < n && (!until || time(NULL) < until); i++)
		if (rf_msg_send(3, RF_MSG_LOG, 0, l, sizeof(*l) + 6, NULL, 0) < 0)
			return errno;
	return SUCCEEDED;
}

/* 3000 log lines as fast as the socket takes them */
static int a_logflood(void)
{
	return flood(3000, 0);
}

/* @n detached threads running @fn until *@until, which is set to ten
 * seconds from now; the attack answers at once */
static int for_ten_seconds(int n, void *(*fn)(void *), time_t *until)
{
	pthread_attr_t a;
	pthread_t th;
	int i, r = 0;

	*until = time(NULL) + 10;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 << 10);
	for (i = 0; i < n && !r; i++)
		r = pthread_create(&th, &a, fn, until);
	pthread_attr_destroy(&a);
	return r ? r : SUCCEEDED;
}

static void *flood_thread(void *arg)
{
	flood(1L << 40, *(time_t *)arg);
	return NULL;
}

/* four threads that send log lines for ten seconds */
static int a_logflood_threads(void)
{
	static time_t until;

	return for_ten_seconds(4, flood_thread, &until);
}

/* what an ordinary plugin's libc calls: sleeps, randomness, its ids */
static int a_harmless(void)
{
	struct timespec ts = { 0, 1000 };
	char rnd[16];

	if (usleep(1000) < 0 || nanosleep(&ts, NULL) < 0 ||
	    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) != 0 ||
	    syscall(SYS_getrandom, rnd, sizeof(rnd), 0) != (long)sizeof(rnd))
		return errno ? errno : EIO;
	if (getpid() <= 0 || getppid() < 0 || getuid() == 0 || geteuid() == 0 || getgid() == 0 ||
	    getegid() == 0)
		return EPERM; /* root would be a finding of its own */
	return SUCCEEDED;
}

static void *spin_thread(void *arg)
{
	volatile unsigned long n = 0;

	while (time(NULL) < *(time_t *)arg)
		n++;
	return NULL;
}

/* eight threads that spin for ten seconds */
static int a_spin(void)
{
	static time_t until;

	return for_ten_seconds(8, spin_thread, &until);
}

/* the keeper's word that its plugin host died, from the host */
static int a_hostdied(void)
{
	struct rf_msg_host_died d = { .status = 0 };

	return result(rf_msg_send(3, RF_MSG_HOST_DIED, 0, &d, sizeof(d), NULL, 0));
}

/* straight to the descriptors a process inherits as stdout and stderr:
 * once the broker's own log */
static int a_stdio(void)
{
	static const char line[] = "ringfenced[1]: STDIO-FORGED line\x1b[2J\n";
	int i;

	for (i = 0; i < 1000; i++)
		if (write(1, line, sizeof(line) - 1) < 0 || write(2, line, sizeof(line) - 1) < 0)
			return errno;
	return SUCCEEDED;
}

/* a report of a trapped call, twice, from a worker that does not die */
static int a_seccomp_twice(void)
{
	struct rf_msg_seccomp m = { .nr = 0, .arch = AUDIT_ARCH_X86_64 };

	rf_msg_send(3, RF_MSG_SECCOMP, 0, &m, sizeof(m), NULL, 0);
	return result(rf_msg_send(3, RF_MSG_SECCOMP, 0, &m, sizeof(m), NULL, 0));
}

/* a well-formed message at the wrong time: a second HELLO */
static int a_ipc_hello(void)
{
	struct rf_msg_hello h = { .version = RF_IPC_VERSION, .pid = 1 };

	return result(rf_msg_send(3, RF_MSG_HELLO, 0, &h, sizeof(h), NULL, 0));
}

/* The shared pool, found as an attacker without our headers would: the
 * memfd mapping in /proc/self/maps. */
static int find_pool(char **base, size_t *len)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int r = ENOENT;

	if (!f)
		return errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (strstr(line, "memfd:ringfence-pool") &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			*base = (char *)lo;
			*len = hi - lo;
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

/* The broker once took the pool's geometry from the pool: claim a billion
 * queues and silence every heartbeat, as if the queues were gone. */
static int a_pool_nqueues(void)
{
	struct rf_pool_ctl *ctl;
	size_t len;
	char *base;
	int r = find_pool(&base, &len);

	if (r)
		return r;
	ctl = (struct rf_pool_ctl *)base;
	ctl->nqueues = 0x40000000;
	memset(ctl->q, 0, 2 * sizeof(ctl->q[0]));
	return SUCCEEDED;
}

/* What a dying worker leaves in the pool must not kill its successor: a
 * heartbeat answer to a PING never sent, a slot in no known state and one
 * of a generation not started yet. The broker kills this worker for them
 * and clears them before the next one starts. */
static int a_pool_poison(void)
{
	struct rf_pool_geom g;
	struct rf_pool_ctl *ctl;
	size_t len;
	char *base;
	int r = find_pool(&base, &len);

	if (r)
		return r;
	ctl = (struct rf_pool_ctl *)base;
	if (rf_pool_geom_init(&g, ctl->nqueues, ctl->depth, ctl->payload_size, ctl->qpool_size) <
		    0 ||
	    g.nslots < 2)
		return EINVAL;
	rf_pool_stats(base, 0)->heartbeat = UINT64_MAX;
	rf_pool_slot_state(base, &g, 0)->state = 7;
	rf_pool_slot_state(base, &g, 1)->state = RF_SLOT_FETCHED;
	rf_pool_slot_state(base, &g, 1)->generation = 1000000;
	return SUCCEEDED;
}

/* Random bytes over the control area (header, counters, slot records, the
 * seen table: all the broker reads) from a thread of its own, for as long
 * as the worker lives, from a seed the log names. Slot headers stay: what
 * the kernel reads there is the worker's own business. */
static void *pool_fuzz(void *arg)
{
	struct rf_pool_ctl *ctl = arg;
	unsigned int seed = (unsigned int)time(NULL) ^ (unsigned int)(uintptr_t)&arg;
	uint64_t *w = (uint64_t *)ctl;
	size_t n = ctl->ctl_size / sizeof(*w);

	test_log("pool fuzz: seed %u", seed);
	for (;;) {
		size_t i = (size_t)rand_r(&seed) % n;

		w[i] = (uint64_t)rand_r(&seed) << 33 ^ (uint64_t)rand_r(&seed) << 2 ^
		       (uint64_t)rand_r(&seed);
	}
	return NULL;
}

static int a_pool_fuzz(void)
{
	pthread_t th;
	size_t len;
	char *base;
	int r = find_pool(&base, &len);

	if (r)
		return r;
	r = pthread_create(&th, NULL, pool_fuzz, base);
	return r ? r : SUCCEEDED;
}

/* The control area zeroed: the magic, the counters, the slot records and
 * the seen table; or its pages taken from the pool's memfd altogether
 * (MADV_REMOVE punches a hole every mapping then reads as zeros). */
static int a_pool_zero(void)
{
	size_t len;
	char *base;
	int r = find_pool(&base, &len);

	if (r)
		return r;
	memset(base, 0, ((struct rf_pool_ctl *)base)->ctl_size);
	return SUCCEEDED;
}

static int a_pool_punch(void)
{
	size_t len;
	char *base;
	int r = find_pool(&base, &len);

	if (r)
		return r;
	return result(madvise(base, ((struct rf_pool_ctl *)base)->ctl_size, MADV_REMOVE));
}

/* The records are mapped read-only, from a read-only file; a writable
 * payload mapping of the same file, stretched, would reach them: the
 * first writable mapping of the pool, grown by a page and moved. */
static int a_pool_stretch(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	void *at = NULL, *q;
	unsigned long lo, hi;
	char perms[8];

	if (!f)
		return errno;
	while (!at && fgets(line, sizeof(line), f))
		if (strstr(line, "memfd:ringfence-pool") &&
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[1] == 'w')
			at = (void *)lo;
	fclose(f);
	if (!at)
		return ENOENT;
	q = mremap(at, hi - lo, hi - lo + 4096, MREMAP_MAYMOVE);
	return q == MAP_FAILED ? errno : SUCCEEDED;
}

/* Calls that name the keeper (pid 1 of the worker's namespace), which
 * shares the host's uid: its descriptor limit, nice value, CPUs and
 * scheduling, and a signal (the keeper has a SIGSYS handler). */
static int a_keeper_prlimit(void)
{
	struct rlimit none = { 0, 0 };

	return result(syscall(SYS_prlimit64, 1, RLIMIT_NOFILE, &none, NULL));
}

static int a_keeper_nice(void)
{
	return result(setpriority(PRIO_PROCESS, 1, 19));
}

static int a_keeper_group_nice(void)
{
	return result(setpriority(PRIO_PGRP, 0, 19));
}

static int a_keeper_affinity(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return result(sched_setaffinity(1, sizeof(set), &set));
}

static int a_keeper_sched(void)
{
	struct sched_param p = { 0 };

	return result(sched_setscheduler(1, SCHED_IDLE, &p));
}

static int a_keeper_signal(void)
{
	return result(kill(1, SIGSYS));
}

static const struct {
	const char *name;
	int (*fn)(void);
} attacks[] = {
	{ "execve", a_execve },
	{ "shadow", a_shadow },
	{ "abs", a_abs },
	{ "dotdot", a_dotdot },
	{ "symlink", a_symlink },
	{ "procroot", a_procroot },
	{ "procscan", a_procscan },
	{ "killall", a_killall },
	{ "ptrace", a_ptrace },
	{ "vmwrite", a_vmwrite },
	{ "socket", a_socket },
	{ "uring_setup", a_uring_setup },
	{ "mount", a_mount },
	{ "unshare", a_unshare },
	{ "setns", a_setns },
	{ "chroot", a_chroot },
	{ "setuid0", a_setuid0 },
	{ "capset", a_capset },
	{ "ambient", a_ambient },
	{ "dumpable", a_dumpable },
	{ "pdeath", a_pdeath },
	{ "block", a_block },
	{ "int80", a_int80 },
	{ "x32", a_x32 },
	{ "fork", a_fork },
	{ "membomb", a_membomb },
	{ "fdbomb", a_fdbomb },
	{ "threadbomb", a_threadbomb },
	{ "ipc_garbage", a_ipc_garbage },
	{ "ipc_fd", a_ipc_fd },
	{ "ipc_hello", a_ipc_hello },
	{ "logforge", a_logforge },
	{ "logflood", a_logflood },
	{ "logflood_threads", a_logflood_threads },
	{ "hostdied", a_hostdied },
	{ "harmless", a_harmless },
	{ "spin", a_spin },
	{ "stdio", a_stdio },
	{ "seccomp_twice", a_seccomp_twice },
	{ "pool_nqueues", a_pool_nqueues },
	{ "pool_fuzz", a_pool_fuzz },
	{ "clocks", a_clocks },
	{ "clock_fd", a_clock_fd },
	{ "pool_poison", a_pool_poison },
	{ "exit3", a_exit3 },
	{ "pool_zero", a_pool_zero },
	{ "pool_punch", a_pool_punch },
	{ "pool_stretch", a_pool_stretch },
	{ "shmanon", a_shmanon },
	{ "memfd", a_memfd },
	{ "shmget", a_shmget },
	{ "keeper_prlimit", a_keeper_prlimit },
	{ "keeper_nice", a_keeper_nice },
	{ "keeper_group_nice", a_keeper_group_nice },
	{ "keeper_affinity", a_keeper_affinity },
	{ "keeper_sched", a_keeper_sched },
	{ "keeper_signal", a_keeper_signal },
};

/* Records of the host's own making on queue 0's channel socket, each
 * with two descriptors the keeper did not ask for (a COUNT of no counter:
 * a record the keeper takes there). */
static int chan_files(struct rf_req *req)
{
	struct rf_chan_rec r = { .kind = RF_CH_COUNT, .idx = 99 };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} c;
	int fds[2] = { open("/", O_PATH | O_CLOEXEC), open("/", O_PATH | O_CLOEXEC) }, i, e = 0;

	for (i = 0; i < 1000 && !e; i++) {
		struct iovec iov = { &r, sizeof(r) };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = c.buf,
				    .msg_controllen = sizeof(c.buf) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(fds));
		memcpy(CMSG_DATA(cm), fds, sizeof(fds));
		if (sendmsg(req->q->w->queues[0].chan_fd, &m, 0) < 0)
			e = errno == EAGAIN ? (usleep(1000), 0) : errno;
	}
	close(fds[0]);
	close(fds[1]);
	return e ? e : SUCCEEDED;
}

/* What the keeper counts and what the broker reads, forged: a PONG for a
 * PING never sent (on the ring, in the host's own outgoing batch), and a
 * restore's count of more nodes than the table holds, twice (on the
 * socket). */
static int send_rec(int sock, const struct rf_chan_rec *r)
{
	struct iovec iov = { (void *)r, sizeof(*r) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	return sendmsg(sock, &m, 0) < 0 ? errno : 0;
}

static int forge(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	int sock = q->w->queues[0].chan_fd, e = 0, i;
	struct rf_chan_rec c = {
		.kind = RF_CH_COUNT, .idx = RF_CNT_RESTORED, .a = 1ULL << 40, .len = 1u << 30
	};

	for (i = 0; i < 2 && q->ntx < RF_CHAN_BATCH; i++)
		q->tx[q->ntx++] = (struct rf_chan_rec){ .kind = RF_CH_PONG, .a = (1ULL << 40) + i };
	for (i = 0; i < 2 && !e; i++)
		e = send_rec(sock, &c);
	c.a = 1; /* ... and a second restore */
	c.len = 0;
	if (!e)
		e = send_rec(sock, &c);
	return e ? e : SUCCEEDED;
}

/* A message on queue 0's channel that is no whole number of records
 * (@big: one record more than the keeper's batch, else one and a bit):
 * the keeper ends its host for it. */
static int chan_bad(struct rf_req *req, bool big)
{
	static struct rf_chan_rec r[RF_CHAN_BATCH + 1];
	struct iovec iov = { r, big ? sizeof(r) : sizeof(r[0]) + 3 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	memset(r, 0, sizeof(r));
	r[0].kind = RF_CH_COUNT;
	r[0].idx = 99;

	return sendmsg(req->q->w->queues[0].chan_fd, &m, 0) < 0 ? errno : SUCCEEDED;
}

static void h_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	char buf[16] = { 0 };
	size_t i;

	if (every_lookup[0] && strncmp(name, "attack-", 7)) {
		/* options = every_lookup=NAME: the attack at every lookup */
		for (i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
			if (!strcmp(every_lookup, attacks[i].name)) {
				rf_reply_err(req, attacks[i].fn());
				return;
			}
	}
	if (parent != RF_ROOT_ID || strncmp(name, "attack-", 7)) {
		if (!strcmp(name, "devnode")) /* /dev/mem, if nodev did not hold */
			reply_entry(req, 100);
		else if (!strcmp(name, "suid")) /* setuid root, if nosuid did not hold */
			reply_entry(req, 101);
		else if (!strcmp(name, "zcfile"))
			reply_entry(req, 102);
		else if (!strcmp(name, "longdir")) /* lists a 300-byte name */
			reply_entry(req, 103);
		else if (!strcmp(name, "nuldir")) /* lists a name with a NUL in it */
			reply_entry(req, 104);
		else if (!strcmp(name, "dirbacked")) /* a directory as its backing file */
			reply_entry(req, 105);
		else if (!strcmp(name, "backed")) /* a real backing file */
			reply_entry(req, 106);
		else
			rf_reply_err(req, ENOENT);
		return;
	}
	name += 7;
	if (!strcmp(name, "ring_openat")) {
		rf_reply_err(req, ring_submit(req, IORING_OP_OPENAT, 0xbad0));
		return;
	}
	if (!strcmp(name, "ring_fuse")) {
		/* a FUSE command: REGISTER, on the ring the plugin has */
		ring_cmd(req, FUSE_IO_URING_CMD_REGISTER, 0, 0xbad8);
		io_uring_submit(own_ring(req));
		rf_reply_err(req, EINPROGRESS);
		return;
	}
	if (!strcmp(name, "ring_drain")) {
		/* IO_DRAIN on its ring: refused, and once that wedged the ring */
		struct io_uring_sqe *sqe = io_uring_get_sqe(own_ring(req));
		static char b[8];

		if (sqe) {
			io_uring_prep_read(sqe, 0, b, sizeof(b), 0);
			sqe->flags = IOSQE_IO_DRAIN;
			sqe->user_data = 0xbad70;
			io_uring_submit(own_ring(req));
		}
		rf_reply_err(req, EINPROGRESS);
		return;
	}
	if (!strcmp(name, "register_bomb")) {
		rf_reply_err(req, cmd_bomb(req, FUSE_IO_URING_CMD_REGISTER));
		return;
	}
	if (!strcmp(name, "commit_bomb")) {
		rf_reply_err(req, cmd_bomb(req, FUSE_IO_URING_CMD_COMMIT_AND_FETCH));
		return;
	}
	if (!strcmp(name, "register_foreign")) {
		rf_reply_err(req, register_foreign(req));
		return;
	}
	if (!strcmp(name, "ring_buffers")) {
		rf_reply_err(req, a_ring_buffers(req));
		return;
	}
	if (!strcmp(name, "ring_enable")) {
		/* the queue threads enabled their rings before the drop */
		rf_reply_err(req, result(syscall(SYS_io_uring_register, req->q->hring_fd,
						 IORING_REGISTER_ENABLE_RINGS, NULL, 0)));
		return;
	}
	if (!strcmp(name, "badunique")) {
		/* answer some other request: corrupt the id the commit used
		 * to take (the host's copy: the keeper commits by its own) */
		req->in.unique += 1000;
		rf_reply_err(req, ENOENT);
		return;
	}
	if (!strcmp(name, "intbit")) {
		/* the interrupt bit on the reply's id */
		req->in.unique |= 1;
		rf_reply_err(req, ENOENT);
		return;
	}
	if (!strcmp(name, "intbit2")) {
		/* ... and on the framework's record of it too */
		req->in.unique |= 1;
		req->ss->commit_id |= 1;
		rf_reply_err(req, ENOENT);
		return;
	}
	if (!strcmp(name, "fakeanswer")) {
		/* the slot's record says answered, and no answer ever comes */
		__atomic_store_n(&req->ss->state, RF_SLOT_ANSWERED, __ATOMIC_RELEASE);
		return;
	}
	if (!strcmp(name, "noanswer"))
		return; /* and never will */
	if (!strcmp(name, "chan_files")) {
		rf_reply_err(req, chan_files(req));
		return;
	}
	if (!strcmp(name, "forge")) {
		rf_reply_err(req, forge(req));
		return;
	}
	if (!strcmp(name, "chan_trunc") || !strcmp(name, "chan_big")) {
		rf_reply_err(req, chan_bad(req, !strcmp(name, "chan_big")));
		return;
	}
	if (!strcmp(name, "oversize")) {
		/* 16 bytes where the kernel expects a 128-byte entry */
		rf_reply_data(req, buf, sizeof(buf));
		return;
	}
	for (i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
		if (!strcmp(name, attacks[i].name)) {
			rf_reply_err(req, attacks[i].fn());
			return;
		}
	rf_reply_err(req, ENOENT);
}

static void h_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct stat st;

	(void)fh;
	attrs(ino, &st);
	rf_reply_attr(req, &st, 0);
}

/*
 * Backing files (rf_req_backing): "dirbacked" names a directory, which
 * the keeper must refuse (its reads then come here: the plugin's bytes);
 * "backed" names the source's file "bkdata", which holds other bytes than
 * the plugin's read answers: a client that reads those has been served
 * by the keeper.
 */
static const char plugin_bytes[16] = "plugin's bytes.\n";

static void h_open(struct rf_req *req, uint64_t ino, int flags)
{
	static const char backing_bytes[16] = "backing file...\n";
	int fd = -1;

	(void)flags;
	if (ino == 105)
		fd = openat(source_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ino == 106) {
		fd = openat(source_fd, "bkdata", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0 && pwrite(fd, backing_bytes, sizeof(backing_bytes), 0) < 0) {
			close(fd);
			fd = -1;
		}
	}
	if ((ino == 105 || ino == 106) && fd < 0) {
		rf_reply_err(req, errno);
		return;
	}
	/* (the descriptor is leaked: a test plugin's few opens) */
	if (fd >= 0)
		rf_req_backing(req, fd);
	rf_reply_open(req, ino, ino == 102 ? RF_OPEN_FD_IO | RF_OPEN_DIRECT_IO : 0);
}

static void h_read(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	static const char junk[ZC_READ];

	(void)fh;
	if ((ino == 105 || ino == 106) && off < (off_t)sizeof(plugin_bytes))
		rf_reply_data(req, plugin_bytes + off,
			      size < sizeof(plugin_bytes) - (size_t)off
				      ? size
				      : sizeof(plugin_bytes) - (size_t)off);
	else if (ino != 102 || off >= 2 * ZC_READ)
		rf_reply_data(req, NULL, 0);
	else if (off < ZC_READ)
		rf_reply_data(req, junk, size < sizeof(junk) ? size : sizeof(junk));
	else
		rf_reply_err(req, zc_attack(req));
}

/* Directories whose entries the plugin writes straight into the reply,
 * past rf_dirbuf_add's checks: names longer than NAME_MAX, or with a NUL. */
static void h_readdir(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	char name[300];
	bool plus = req->in.opcode == FUSE_READDIRPLUS;
	size_t skip = plus ? sizeof(struct fuse_entry_out) : 0;
	struct fuse_dirent *d = (struct fuse_dirent *)(req->payload + skip);
	uint32_t namelen = ino == 103 ? 300 : 3;
	size_t rec = plus ? FUSE_DIRENTPLUS_SIZE(namelen) : FUSE_DIRENT_SIZE(namelen);

	(void)fh;
	if ((ino != 103 && ino != 104) || off > 0 || size < rec) {
		rf_reply_dirbuf(req);
		return;
	}
	memset(name, 'a', sizeof(name));
	name[1] = ino == 104 ? '\0' : 'a';
	memset(req->payload, 0, rec);
	d->ino = 200;
	d->off = 1;
	d->namelen = namelen;
	d->type = S_IFREG >> 12;
	memcpy(d->name, name, namelen);
	req->reply_len = (uint32_t)rec;
	rf_reply_dirbuf(req);
}

static int h_init(const struct rf_init_args *a, void **ud)
{
	*ud = NULL;
	source_fd = a->source_fd;
	/* never let the main thread go: nothing of the framework runs after */
	if (!strcmp(a->options, "block_init"))
		a_block();
	if (!strncmp(a->options, "every_lookup=", 13))
		snprintf(every_lookup, sizeof(every_lookup), "%s", a->options + 13);
	if (!strncmp(a->options, "register_bomb=", 14))
		bomb_count = strtoul(a->options + 14, NULL, 10);
	/* options = init=NAME: the attack in init, in every generation */
	if (!strncmp(a->options, "init=", 5))
		for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
			if (!strcmp(a->options + 5, attacks[i].name))
				attacks[i].fn();
	return 0;
}

const struct rf_plugin ringfence_plugin = {
	RF_PLUGIN_INIT,	      .name = "hostile", .init = h_init, .lookup = h_lookup,
	.getattr = h_getattr, .open = h_open,	 .read = h_read, .readdir = h_readdir,
};
