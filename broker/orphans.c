// SPDX-License-Identifier: MIT
/*
 * Workers a dead broker left behind. A worker dies with its broker
 * (PDEATHSIG, set after its credentials change and locked by seccomp) and
 * exits when the broker's end of its socket closes; this is the third
 * line: every worker this broker runs is recorded, by PID and start time,
 * in <control_socket>.workers, and a starting broker kills whatever is
 * left there before it mounts anything. The start time (from
 * /proc/PID/stat) and the boot id make sure that a PID reused since is
 * never hit.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"

#define RF_ORPHAN_WAIT_MS 3000

/* Field 3 (the state) and field 22 (the start time) of /proc/PID/stat. */
static int proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* PID (COMM) STATE ...: COMM may hold anything, so count fields from
	 * the last ')'; the start time is field 22 */
	p = strrchr(buf, ')');
	if (!p || sscanf(p, ") %c", state) != 1)
		return -EIO;
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", start) != 1)
		return -EIO;
	return 0;
}

int rf_proc_starttime(pid_t pid, unsigned long long *start)
{
	char state;

	return proc_stat(pid, &state, start);
}

static void boot_id(char *buf, size_t len)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

void rf_orphans_init(struct rf_broker *b)
{
	snprintf(b->workers_file, sizeof(b->workers_file), "%s.workers", b->policy->control_socket);
}

void rf_orphans_record(struct rf_broker *b)
{
	char tmp[sizeof(b->workers_file) + 8], id[64];
	size_t i;
	FILE *f;

	if (!b->workers_file[0])
		return;
	snprintf(tmp, sizeof(tmp), "%s.new", b->workers_file);
	f = fopen(tmp, "we");
	if (!f) {
		log_warn("record workers in %s", tmp);
		return;
	}
	boot_id(id, sizeof(id));
	fprintf(f,
		"# ringfenced %d: its workers (pid, start time, tenant); a new broker kills them\n",
		(int)getpid());
	fprintf(f, "boot %s\n", id);
	for (i = 0; i < b->ntenants; i++)
		if (b->tenants[i]->worker_pid > 0)
			fprintf(f, "%d %llu %s\n", (int)b->tenants[i]->worker_pid,
				b->tenants[i]->worker_start, b->tenants[i]->pol.name);
	if (fclose(f) != 0 || rename(tmp, b->workers_file) < 0)
		log_warn("record workers in %s", b->workers_file);
}

void rf_orphans_forget(struct rf_broker *b)
{
	if (b->workers_file[0] && unlink(b->workers_file) < 0 && errno != ENOENT)
		log_warn("remove %s", b->workers_file);
}

/* Whether @pid is still the process that started at @start, and not a
 * zombie waiting for its reaper. */
static bool running(pid_t pid, unsigned long long start)
{
	unsigned long long now;
	char state;

	return proc_stat(pid, &state, &now) == 0 && now == start && state != 'Z';
}

void rf_orphans_sweep(struct rf_broker *b)
{
	char line[512], id[64], name[RF_POLICY_NAME_MAX];
	unsigned long long start, starts[256];
	pid_t killed[256];
	size_t nkilled = 0, i;
	bool same_boot = false;
	int pid, ms;
	FILE *f;

	f = fopen(b->workers_file, "re");
	if (!f) {
		if (errno != ENOENT)
			log_warn("read %s", b->workers_file);
		return;
	}
	boot_id(id, sizeof(id));
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "boot ", 5)) {
			line[strcspn(line, "\n")] = '\0';
			same_boot = id[0] && !strcmp(line + 5, id);
			continue;
		}
		if (!same_boot || sscanf(line, "%d %llu %63s", &pid, &start, name) != 3 ||
		    pid <= 1 || pid == (int)getpid() || !running(pid, start))
			continue;
		log_warnx("%s: worker %d of a previous broker is still running; killing it", name,
			  pid);
		if (kill(pid, SIGKILL) == 0 && nkilled < sizeof(killed) / sizeof(killed[0])) {
			starts[nkilled] = start;
			killed[nkilled++] = pid;
		}
	}
	fclose(f);
	/* they are not our children: their reaper (init) takes them */
	for (ms = 0; ms < RF_ORPHAN_WAIT_MS; ms += 10) {
		for (i = 0; i < nkilled; i++)
			if (running(killed[i], starts[i]))
				break;
		if (i == nkilled)
			break;
		usleep(10000);
	}
	for (i = 0; i < nkilled; i++)
		if (running(killed[i], starts[i]))
			log_warnx("worker %d of a previous broker did not die within %d ms",
				  (int)killed[i], RF_ORPHAN_WAIT_MS);
	rf_orphans_forget(b);
}
