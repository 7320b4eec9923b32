// SPDX-License-Identifier: MIT
/*
 * The worker's way into its sandbox, all before any plugin code runs.
 *
 * The broker has already created the worker in new mount, network, IPC,
 * UTS and PID namespaces (it is PID 1 of its own). Here, still root and
 * trusted, the worker
 *   1. builds a minimal root: a read-only tmpfs holding /source (a
 *      nosuid,nodev bind of the tenant's source) and /proc (a procfs of its
 *      own PID namespace, process entries only), and pivots into it;
 *   2. sets rlimits (no core dumps, bounded descriptors and private memory);
 *   3. becomes the tenant's uid/gid with no supplementary groups, clears
 *      every capability including the bounding set, sets no_new_privs, and
 *      makes itself non-dumpable; then asks for SIGKILL when the broker
 *      dies (the credential change has just cleared the setting the
 *      broker's child made);
 *   4. installs the first seccomp stage: a deny list that stops exec,
 *      process creation, ptrace, sockets, mounts, namespaces, new rings,
 *      bpf, keys, memory no rlimit bounds (shared anonymous, memfd, SysV)
 *      and other kernel attack surface. Denied calls trap; the
 *      SIGSYS handler reports the call to the broker and then dies of SIGSYS.
 * Only then is the plugin loaded; the seccomp.policy stage stacks on top.
 */
#include <cap-ng.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "log.h"
#include "pool.h"
#include "sandbox.h"
#include "host/runtime.h"

#define NEWROOT "/tmp"

static int sandbox_ipc_fd = -1;

static int build_root(const char *source, int read_only, unsigned long bind_flags,
		      const char *cores, const char *libdir);

int rf_sandbox_fs(const char *source, int read_only, const char *core_dir, const char *libdir)
{
	unsigned long bind_flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV;
	char src_path[64], core_path[64], lib_path[64];
	int src_fd = -1, core_fd = -1, lib_fd = -1, r = 0;

	/* Hold the source (and core_dir) before anything is mounted over it
	 * (it may live under NEWROOT), and bind it through its /proc link. */
	if (source && source[0]) {
		src_fd = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (src_fd < 0)
			return -errno;
		snprintf(src_path, sizeof(src_path), "/proc/self/fd/%d", src_fd);
	}
	if (core_dir && core_dir[0]) {
		core_fd = open(core_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (core_fd < 0)
			r = -errno;
		snprintf(core_path, sizeof(core_path), "/proc/self/fd/%d", core_fd);
	}
	if (!r && libdir && libdir[0]) {
		lib_fd = open(libdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (lib_fd < 0)
			r = -errno;
		snprintf(lib_path, sizeof(lib_path), "/proc/self/fd/%d", lib_fd);
	}
	if (!r)
		r = build_root(src_fd >= 0 ? src_path : NULL, read_only, bind_flags,
			       core_fd >= 0 ? core_path : NULL, lib_fd >= 0 ? lib_path : NULL);
	if (src_fd >= 0)
		close(src_fd);
	if (core_fd >= 0)
		close(core_fd);
	if (lib_fd >= 0)
		close(lib_fd);
	return r;
}

/* @from at @to (a directory made for it), read-only, nosuid, nodev */
static int bind_ro(const char *from, const char *to)
{
	if (mkdir(to, 0755) < 0 || mount(from, to, NULL, MS_BIND | MS_REC, NULL) < 0 ||
	    mount(NULL, to, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
		    0)
		return -errno;
	return 0;
}

/*
 * A program's: the system's programs and libraries read-only (/usr, and
 * /lib*, /bin, /sbin as the host has them: links into /usr, or
 * directories), the loader's cache, and ringfence's libfuse directory at
 * RF_SANDBOX_LIBDIR, which the program's loader searches first.
 */
static int bind_system(const char *libdir)
{
	static const char *const dirs[] = {
		"usr", "lib", "lib64", "lib32", "libx32", "bin", "sbin"
	};
	char from[32], to[48], target[256];
	struct stat st;
	size_t i;
	ssize_t n;
	int fd;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(from, sizeof(from), "/%s", dirs[i]);
		snprintf(to, sizeof(to), NEWROOT "/%s", dirs[i]);
		if (lstat(from, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(from, target, sizeof(target) - 1);
			if (n < 0)
				return -errno;
			target[n] = '\0';
			if (symlink(target, to) < 0)
				return -errno;
		} else if (S_ISDIR(st.st_mode)) {
			int r = bind_ro(from, to);

			if (r < 0)
				return r;
		}
	}
	if (mkdir(NEWROOT "/etc", 0755) < 0)
		return -errno;
	if (stat("/etc/ld.so.cache", &st) == 0) {
		fd = open(NEWROOT "/etc/ld.so.cache", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
			  0644);
		if (fd < 0)
			return -errno;
		close(fd);
		if (mount("/etc/ld.so.cache", NEWROOT "/etc/ld.so.cache", NULL, MS_BIND, NULL) <
			    0 ||
		    mount(NULL, NEWROOT "/etc/ld.so.cache", NULL,
			  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
			return -errno;
	}
	return bind_ro(libdir, NEWROOT RF_SANDBOX_LIBDIR);
}

static int build_root(const char *source, int read_only, unsigned long bind_flags,
		      const char *cores, const char *libdir)
{
	/* nothing we mount may leak back to the host */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	if (mount("ringfence", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "size=64k,nr_inodes=32,mode=0755") < 0)
		return -errno;
	if (mkdir(NEWROOT "/proc", 0555) < 0 || mkdir(NEWROOT "/old", 0700) < 0)
		return -errno;
	if (source) {
		if (mkdir(NEWROOT "/source", 0755) < 0 ||
		    mount(source, NEWROOT "/source", NULL, MS_BIND | MS_REC, NULL) < 0)
			return -errno;
		if (read_only)
			bind_flags |= MS_RDONLY;
		if (mount(NULL, NEWROOT "/source", NULL, bind_flags, NULL) < 0)
			return -errno;
	}
	/* a tenant in development: where its plugin host dumps core */
	if (cores && (mkdir(NEWROOT "/cores", 0755) < 0 ||
		      mount(cores, NEWROOT "/cores", NULL, MS_BIND, NULL) < 0 ||
		      mount(NULL, NEWROOT "/cores", NULL,
			    MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0))
		return -errno;
	if (libdir) {
		int r = bind_system(libdir);

		if (r < 0)
			return r;
	}
	/* a procfs of this PID namespace: /proc/self/fd is how the plugin is
	 * loaded and how passthrough reaches xattrs of O_PATH files */
	if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "subset=pid,hidepid=invisible") < 0)
		return -errno;
	if (chdir(NEWROOT) < 0 || syscall(SYS_pivot_root, ".", "old") < 0)
		return -errno;
	if (umount2("/old", MNT_DETACH) < 0 || rmdir("/old") < 0 || chdir("/") < 0)
		return -errno;
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return -errno;
	if (sethostname("ringfence", 9) < 0)
		return -errno;
	return 0;
}

int rf_sandbox_limits(rlim_t nofile, rlim_t data, rlim_t fsize, rlim_t nproc, rlim_t core_max)
{
	struct rlimit core = { 0, 0 }, files, priv = { data, data };
	struct rlimit fsz = { fsize, fsize }, tasks = { nproc, nproc };

	/* raising the hard limit takes CAP_SYS_RESOURCE, which a host may
	 * not give the broker: then stay within the one inherited, and say
	 * so, for a plugin that keeps a descriptor per file (passthrough)
	 * fails with EMFILE past it */
	files.rlim_cur = files.rlim_max = nofile;
	if (setrlimit(RLIMIT_NOFILE, &files) < 0) {
		if (errno != EPERM || getrlimit(RLIMIT_NOFILE, &files) < 0)
			return -errno;
		log_warnx("descriptors: at most %llu, the broker's hard RLIMIT_NOFILE (%llu "
			  "needs CAP_SYS_RESOURCE)",
			  (unsigned long long)files.rlim_max, (unsigned long long)nofile);
		files.rlim_cur = files.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &files) < 0)
			return -errno;
	}
	/* no core, and none to ask for past @core_max (a debug tenant's
	 * plugin host asks, rf_sandbox_debuggable) */
	if (core_max && getrlimit(RLIMIT_CORE, &core) < 0)
		return -errno;
	core.rlim_cur = 0;
	if (core.rlim_max > core_max)
		core.rlim_max = core_max;
	if (setrlimit(RLIMIT_CORE, &core) < 0 || setrlimit(RLIMIT_DATA, &priv) < 0 ||
	    setrlimit(RLIMIT_FSIZE, &fsz) < 0 || (nproc && setrlimit(RLIMIT_NPROC, &tasks) < 0))
		return -errno;
	return 0;
}

int rf_sandbox_drop(uid_t uid, gid_t gid)
{
	capng_clear(CAPNG_SELECT_BOTH);
	if (capng_change_id((int)uid, (int)gid, CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING) < 0)
		return -EPERM;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	/* ambient capabilities need a permitted set: there is none, but say so */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -errno;
	if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid ||
	    capng_have_capabilities(CAPNG_SELECT_BOTH) != CAPNG_NONE)
		return -EPERM;
	return 0;
}

int rf_sandbox_drop_thread(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	int cap;

	/* the bounding set while CAP_SETPCAP is still ours: up to the first
	 * number the kernel does not know */
	for (cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = (1u << CAP_SETUID) | (1u << CAP_SETGID);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}

/* "Key:\tvalue" of a /proc status text, up to the line's end, or NULL. */
static const char *status_field(const char *status, const char *key, char *val, size_t len)
{
	size_t klen = strlen(key), n;
	const char *p = status;

	for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, klen) || p[klen] != ':')
			continue;
		p += klen + 1;
		p += strspn(p, " \t");
		n = strcspn(p, "\n");
		if (n >= len)
			n = len - 1;
		memcpy(val, p, n);
		val[n] = '\0';
		return val;
	}
	return NULL;
}

int rf_sandbox_status_ok(const char *status, uid_t uid, gid_t gid, bool seccomp, char *why,
			 size_t len)
{
	static const char zeros[] = "0...0"; /* a capability set: hex digits, all 0 */
	char uids[64], gids[64], val[128];
	const struct {
		const char *key, *want;
	} f[] = {
		{ "CapInh", zeros }, { "CapPrm", zeros }, { "CapEff", zeros },
		{ "CapBnd", zeros }, { "CapAmb", zeros }, { "Uid", uids },
		{ "Gid", gids },     { "Groups", "" },	  { "NoNewPrivs", "1" },
		{ "Seccomp", "2" },
	};
	size_t i, n = sizeof(f) / sizeof(f[0]) - (seccomp ? 0 : 1);
	bool ok;

	snprintf(uids, sizeof(uids), "%u\t%u\t%u\t%u", (unsigned int)uid, (unsigned int)uid,
		 (unsigned int)uid, (unsigned int)uid);
	snprintf(gids, sizeof(gids), "%u\t%u\t%u\t%u", (unsigned int)gid, (unsigned int)gid,
		 (unsigned int)gid, (unsigned int)gid);
	for (i = 0; i < n; i++) {
		if (!status_field(status, f[i].key, val, sizeof(val))) {
			snprintf(why, len, "no %s line", f[i].key);
			return -EPERM;
		}
		if (f[i].want == zeros)
			ok = val[0] && strspn(val, "0") == strlen(val);
		else
			ok = !strcmp(val, f[i].want);
		if (!ok) {
			snprintf(why, len, "%s %s", f[i].key, val);
			return -EPERM;
		}
	}
	return 0;
}

int rf_sandbox_check_threads(uid_t uid, gid_t gid, bool seccomp, char *why, size_t len)
{
	char path[64], status[4096], what[160];
	struct dirent *de;
	unsigned int n = 0;
	DIR *d = opendir("/proc/self/task");
	int r = 0;

	if (!d) {
		snprintf(why, len, "/proc/self/task: %s", strerror(errno));
		return -errno;
	}
	while (!r && (de = readdir(d))) {
		ssize_t got;
		int fd, err;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/status", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		got = fd < 0 ? -1 : read(fd, status, sizeof(status) - 1);
		err = errno; /* of the open or the read, before close */
		if (fd >= 0)
			close(fd);
		if (got <= 0) {
			/* a thread that ended meanwhile holds nothing */
			if (fd < 0 && err == ENOENT)
				continue;
			snprintf(why, len, "%s: %s", path, got < 0 ? strerror(err) : "empty");
			r = -EIO;
			break;
		}
		status[got] = '\0';
		r = rf_sandbox_status_ok(status, uid, gid, seccomp, what, sizeof(what));
		if (r < 0)
			snprintf(why, len, "thread %s keeps %s", de->d_name, what);
		n++;
	}
	closedir(d);
	if (!r && !n) {
		snprintf(why, len, "/proc/self/task lists no thread");
		r = -EIO;
	}
	return r;
}

int rf_sandbox_tie_to_broker(int ipc_fd)
{
	struct pollfd pfd = { .fd = ipc_fd, .events = POLLRDHUP };

	/* the kernel delivers it whatever the worker does; stage 1 of seccomp
	 * denies changing it, and the credential changes that would clear it */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	/* a broker that died before the line above sent no signal */
	if (poll(&pfd, 1, 0) < 0)
		return -errno;
	if (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR))
		_exit(1);
	return 0;
}

/* Report a trapped system call to the broker, then die of SIGSYS: the
 * rt_sigaction(SIGSYS) call below is itself killed by the filter, so nobody
 * (not even this handler) can keep the process alive. */
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 /* si_code of a seccomp trap (asm-generic/siginfo.h) */
#endif

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	static int reported;
	const ucontext_t *uc = ctx;
	struct rf_msg_seccomp m;

	(void)sig;
	/* a SIGSYS some process sent (kill -SYS) is no verdict of ours: it
	 * neither ends the worker nor reaches the broker as one (a sender
	 * cannot forge SYS_SECCOMP: the kernel keeps codes >= 0 for itself) */
	if (si->si_code != SYS_SECCOMP)
		return;
	/* one report per worker, the broker allows no more: a second thread
	 * trapped at the same time only dies */
	if (__atomic_exchange_n(&reported, 1, __ATOMIC_SEQ_CST))
		syscall(SYS_rt_sigaction, SIGSYS, NULL, NULL, sizeof(sigset_t));
	memset(&m, 0, sizeof(m));
	m.nr = si->si_syscall;
	m.arch = si->si_arch;
	m.args[0] = (uint64_t)uc->uc_mcontext.gregs[REG_RDI];
	m.args[1] = (uint64_t)uc->uc_mcontext.gregs[REG_RSI];
	m.args[2] = (uint64_t)uc->uc_mcontext.gregs[REG_RDX];
	m.args[3] = (uint64_t)uc->uc_mcontext.gregs[REG_R10];
	m.args[4] = (uint64_t)uc->uc_mcontext.gregs[REG_R8];
	m.args[5] = (uint64_t)uc->uc_mcontext.gregs[REG_R9];
	m.ip = (uint64_t)(uintptr_t)si->si_call_addr;
	if (sandbox_ipc_fd >= 0)
		rf_msg_send(sandbox_ipc_fd, RF_MSG_SECCOMP, 0, &m, sizeof(m), NULL, 0);
	syscall(SYS_rt_sigaction, SIGSYS, NULL, NULL, sizeof(sigset_t));
	_exit(159); /* not reached */
}

/* Denied outright, trapped and reported. */
static const int denied[] = {
	SCMP_SYS(execve),
	SCMP_SYS(execveat),
	SCMP_SYS(fork),
	SCMP_SYS(vfork),
	SCMP_SYS(ptrace),
	SCMP_SYS(process_vm_readv),
	SCMP_SYS(process_vm_writev),
	SCMP_SYS(pidfd_open),
	SCMP_SYS(pidfd_getfd),
	SCMP_SYS(socket),
	SCMP_SYS(socketpair),
	SCMP_SYS(connect),
	SCMP_SYS(bind),
	SCMP_SYS(listen),
	SCMP_SYS(accept),
	SCMP_SYS(accept4),
	SCMP_SYS(mount),
	SCMP_SYS(umount2),
	SCMP_SYS(pivot_root),
	SCMP_SYS(chroot),
	SCMP_SYS(unshare),
	SCMP_SYS(setns),
	SCMP_SYS(open_tree),
	SCMP_SYS(move_mount),
	SCMP_SYS(fsopen),
	SCMP_SYS(fsconfig),
	SCMP_SYS(fsmount),
	SCMP_SYS(fspick),
	SCMP_SYS(mount_setattr),
	SCMP_SYS(io_uring_setup),
	SCMP_SYS(bpf),
	SCMP_SYS(keyctl),
	SCMP_SYS(add_key),
	SCMP_SYS(request_key),
	SCMP_SYS(perf_event_open),
	SCMP_SYS(kexec_load),
	SCMP_SYS(kexec_file_load),
	SCMP_SYS(init_module),
	SCMP_SYS(finit_module),
	SCMP_SYS(delete_module),
	SCMP_SYS(reboot),
	SCMP_SYS(swapon),
	SCMP_SYS(swapoff),
	SCMP_SYS(acct),
	SCMP_SYS(quotactl),
	SCMP_SYS(userfaultfd),
	SCMP_SYS(personality),
	SCMP_SYS(setuid),
	SCMP_SYS(setgid),
	SCMP_SYS(setreuid),
	SCMP_SYS(setregid),
	SCMP_SYS(setresuid),
	SCMP_SYS(setresgid),
	SCMP_SYS(setgroups),
	SCMP_SYS(setfsuid),
	SCMP_SYS(setfsgid),
	SCMP_SYS(capset),
	SCMP_SYS(open_by_handle_at),
	SCMP_SYS(name_to_handle_at),
	SCMP_SYS(fanotify_init),
	SCMP_SYS(ioperm),
	SCMP_SYS(iopl),
	SCMP_SYS(modify_ldt),
	SCMP_SYS(syslog),
	SCMP_SYS(vhangup),
	SCMP_SYS(uselib),
	SCMP_SYS(process_madvise),
	SCMP_SYS(move_pages),
	SCMP_SYS(migrate_pages),
	SCMP_SYS(settimeofday),
	SCMP_SYS(clock_settime),
	SCMP_SYS(adjtimex),
	SCMP_SYS(clock_adjtime),
	SCMP_SYS(sethostname),
	SCMP_SYS(setdomainname),
	SCMP_SYS(lookup_dcookie),
	SCMP_SYS(kcmp),
	/* memory no rlimit counts (shmem): a memfd, SysV shared memory; and
	 * shared anonymous mappings, below */
	SCMP_SYS(memfd_create),
	SCMP_SYS(memfd_secret),
	SCMP_SYS(shmget),
};

/*
 * The plugin host and its keeper share a uid, so the kernel would let the
 * host signal, re-limit, re-prioritise and move its keeper (and, with a
 * pid of 0 meaning its process group, or -1 everyone, all of them at
 * once). Whatever a tenant's policy allows, the host's calls that name a
 * process may name only itself: its own pid (signals: glibc's raise,
 * abort and pthread_kill name it), or 0, the calling thread (limits,
 * priorities, affinity, scheduling, I/O priority; glibc's setrlimit, nice
 * and sched_setaffinity pass 0). Anything else fails with EPERM, as the
 * kernel answers a process it may not touch. tkill names a thread of any
 * process, and a pidfd any process (one opened from /proc needs no
 * pidfd_open): neither is allowed.
 */
static int deny_others(scmp_filter_ctx ctx)
{
	const uint64_t self = (uint64_t)getpid();
	const uint32_t no = SCMP_ACT_ERRNO(EPERM);
	static const int by_pid[] = {
		SCMP_SYS(kill),
		SCMP_SYS(tgkill),
		SCMP_SYS(rt_sigqueueinfo),
		SCMP_SYS(rt_tgsigqueueinfo),
	};
	static const int by_zero[] = {
		SCMP_SYS(prlimit64),	  SCMP_SYS(sched_setaffinity), SCMP_SYS(sched_setscheduler),
		SCMP_SYS(sched_setparam), SCMP_SYS(sched_setattr),
	};
	size_t i;
	int r = 0;

	for (i = 0; !r && i < sizeof(by_pid) / sizeof(by_pid[0]); i++)
		r = seccomp_rule_add(ctx, no, by_pid[i], 1, SCMP_A0(SCMP_CMP_NE, self));
	for (i = 0; !r && i < sizeof(by_zero) / sizeof(by_zero[0]); i++)
		r = seccomp_rule_add(ctx, no, by_zero[i], 1, SCMP_A0(SCMP_CMP_NE, 0));
	/* setpriority(which, who, ...) and ioprio_set(which, who, ...): the
	 * calling thread alone (PRIO_PROCESS 0, IOPRIO_WHO_PROCESS 1) */
	if (!r)
		r = seccomp_rule_add(ctx, no, SCMP_SYS(setpriority), 1,
				     SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS));
	if (!r)
		r = seccomp_rule_add(ctx, no, SCMP_SYS(setpriority), 1, SCMP_A1(SCMP_CMP_NE, 0));
	if (!r)
		r = seccomp_rule_add(ctx, no, SCMP_SYS(ioprio_set), 1,
				     SCMP_A0(SCMP_CMP_NE, 1 /* IOPRIO_WHO_PROCESS */));
	if (!r)
		r = seccomp_rule_add(ctx, no, SCMP_SYS(ioprio_set), 1, SCMP_A1(SCMP_CMP_NE, 0));
	if (!r)
		r = seccomp_rule_add(ctx, no, SCMP_SYS(tkill), 0);
	if (!r)
		r = seccomp_rule_add(ctx, no, SCMP_SYS(pidfd_send_signal), 0);
	return r;
}

int rf_sandbox_seccomp_base(int ipc_fd, unsigned int who, uint64_t pool_addr)
{
	bool debug = (who & RF_DENY_DEBUG) != 0;
	bool host = (who &= ~RF_DENY_DEBUG) != RF_DENY_KEEPER && who != RF_DENY_KEEPER_FORKS;
	scmp_filter_ctx ctx;
	size_t i;
	int r;

	if (who != RF_DENY_HOST_AGAIN) {
		struct sigaction sa;

		sandbox_ipc_fd = ipc_fd;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigsys;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSYS, &sa, NULL) < 0)
			return -errno;
	}
	/* else: a plugin host the keeper forked again has its handler, and
	 * the keeper's list, which kills whoever asks about SIGSYS */

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	/* x86-64 only: i386 (int 0x80) and x32 calls kill the process */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* every allowed call walks this list: a binary tree, not a line */
	if (!r)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	/* on every thread: the queue threads exist already */
	if (!r)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	for (i = 0; !r && i < sizeof(denied) / sizeof(denied[0]); i++)
		if (denied[i] != SCMP_SYS(socketpair) || who != RF_DENY_KEEPER_FORKS)
			r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, denied[i], 0);
	/* that keeper's channels to a next host: a pair of local sockets */
	if (!r && who == RF_DENY_KEEPER_FORKS)
		r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(socketpair), 1,
				     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	/* threads yes, processes no (but for a keeper that starts the next
	 * plugin host when one dies: host_restart) */
	if (!r && who != RF_DENY_KEEPER_FORKS)
		r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
	/* MAP_SHARED | MAP_ANONYMOUS (MAP_SHARED_VALIDATE too) is shmem,
	 * which RLIMIT_DATA does not count: without a memory cgroup nothing
	 * would bound it */
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(mmap), 1,
				     SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_SHARED | MAP_ANONYMOUS,
					     MAP_SHARED | MAP_ANONYMOUS));
	/* clone3's flags sit behind a pointer: make glibc fall back to clone */
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* the SIGSYS handler stays ours; asking about it at all is fatal */
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(rt_sigaction), 1,
				     SCMP_A0(SCMP_CMP_EQ, SIGSYS));
	/* the worker stays non-dumpable (but a debug tenant's keeper lets
	 * the plugin hosts it forks become dumpable before their own list,
	 * which refuses it again), and dies with its broker */
	if (!r && !(debug && !host))
		r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(prctl), 1,
				     SCMP_A0(SCMP_CMP_EQ, PR_SET_DUMPABLE));
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(prctl), 1,
				     SCMP_A0(SCMP_CMP_EQ, PR_SET_PDEATHSIG));
	/* rings: only the register call the keeper makes once it has
	 * dropped its privileges, installing files (its queue threads
	 * enabled their rings before); the plugin host none (it enabled its
	 * rings before); the rings' own restrictions apply too */
	if (!r && host)
		r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(io_uring_register), 0);
	else if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(io_uring_register), 1,
				     SCMP_A1(SCMP_CMP_NE, 6 /* IORING_REGISTER_FILES_UPDATE */));
	/* The pool's records are mapped read-only in the plugin host, from a
	 * read-only file: no mprotect() makes them writable. Stretching a
	 * writable payload mapping of the same file over them would
	 * (mremap), and so would remapping one's pages (remap_file_pages):
	 * no mremap of the pool's stride, no remap_file_pages at all. */
	if (!r && host && pool_addr)
		r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(mremap), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ~(uint64_t)(RF_POOL_STRIDE - 1),
					     pool_addr));
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(remap_file_pages), 0);
	if (!r && host)
		r = deny_others(ctx);
	if (!r)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int rf_sandbox_enter_root(struct rf_sandbox *sb)
{
	int err;

	sb->source_fd = -1;
	err = sb->sandboxed ? rf_sandbox_fs(sb->source, sb->read_only, sb->core_dir, sb->libdir)
			    : 0;
	if (err < 0) {
		snprintf(sb->failed, sizeof(sb->failed),
			 "build the sandbox root (source %s%s%s%s%s)",
			 sb->source[0] ? sb->source : "none", sb->core_dir[0] ? ", core_dir " : "",
			 sb->core_dir,
			 sb->libdir && sb->libdir[0] ? ", the system's /usr and " : "",
			 sb->libdir ? sb->libdir : "");
		return err;
	}
	if (sb->source[0]) {
		const char *path = sb->sandboxed ? "/source" : sb->source;

		sb->source_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (sb->source_fd < 0) {
			err = -errno;
			snprintf(sb->failed, sizeof(sb->failed), "open %s",
				 sb->sandboxed ? "/source in the sandbox" : sb->source);
			return err;
		}
	}
	err = rf_sandbox_limits(sb->nofile, sb->data, sb->fsize, sb->nproc,
				sb->debug ? RLIM_INFINITY : 0);
	if (err < 0) {
		snprintf(sb->failed, sizeof(sb->failed), "set rlimits");
		return err;
	}
	return 0;
}

int rf_sandbox_enter_drop(struct rf_sandbox *sb)
{
	char what[200];
	int err;

	err = rf_sandbox_drop(sb->uid, sb->gid);
	if (err < 0) {
		snprintf(sb->failed, sizeof(sb->failed), "drop to uid %u gid %u",
			 (unsigned int)sb->uid, (unsigned int)sb->gid);
		return err;
	}
	err = rf_sandbox_tie_to_broker(sb->ipc_fd);
	if (err < 0) {
		snprintf(sb->failed, sizeof(sb->failed), "ask to die with the broker");
		return err;
	}
	if (sb->debug && sb->who == RF_DENY_HOST) {
		err = rf_sandbox_debuggable(sb);
		if (err < 0)
			return err;
	}
	err = sb->sandboxed ? rf_sandbox_seccomp_base(sb->ipc_fd,
						      sb->who | (sb->debug ? RF_DENY_DEBUG : 0),
						      sb->pool_addr)
			    : 0;
	if (err < 0) {
		snprintf(sb->failed, sizeof(sb->failed), "install the seccomp deny list");
		return err;
	}
	/* the queue threads dropped their part themselves: make sure no
	 * thread kept anything before any plugin code runs */
	err = rf_sandbox_check_threads(sb->uid, sb->gid, sb->sandboxed, what, sizeof(what));
	if (err < 0) {
		snprintf(sb->failed, sizeof(sb->failed), "drop every privilege: %s", what);
		return err;
	}
	return 0;
}

int rf_sandbox_debuggable(struct rf_sandbox *sb)
{
	struct rlimit core;

	if (getrlimit(RLIMIT_CORE, &core) < 0)
		goto fail;
	core.rlim_cur = core.rlim_max;
	if (setrlimit(RLIMIT_CORE, &core) < 0 || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		goto fail;
	if (sb->core_dir[0] && chdir(sb->sandboxed ? "/cores" : sb->core_dir) < 0) {
		snprintf(sb->failed, sizeof(sb->failed), "enter core_dir %s", sb->core_dir);
		return -errno;
	}
	return 0;
fail:
	snprintf(sb->failed, sizeof(sb->failed), "let the plugin host dump core (debug = yes)");
	return -errno;
}
