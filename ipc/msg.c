// SPDX-License-Identifier: MIT
#include "msg.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static const struct rf_msg_spec specs[RF_MSG_TYPE_MAX] = {
	[RF_MSG_HELLO] = { "HELLO", sizeof(struct rf_msg_hello), sizeof(struct rf_msg_hello), 0,
			   0 },
	[RF_MSG_CONFIG] = { "CONFIG", sizeof(struct rf_msg_config), sizeof(struct rf_msg_config), 4,
			    0 },
	[RF_MSG_RING] = { "RING", sizeof(struct rf_msg_ring), sizeof(struct rf_msg_ring), 0, 0 },
	[RF_MSG_READY] = { "READY", sizeof(struct rf_msg_ready), sizeof(struct rf_msg_ready), 0,
			   0 },
	[RF_MSG_LOG] = { "LOG", sizeof(struct rf_msg_log) + 1, RF_IPC_MAX_PAYLOAD, 0, 1 },
	[RF_MSG_SHUTDOWN] = { "SHUTDOWN", 0, 0, 0, 0 },
	[RF_MSG_SECCOMP] = { "SECCOMP", sizeof(struct rf_msg_seccomp),
			     sizeof(struct rf_msg_seccomp), 0, 0 },
	[RF_MSG_PING] = { "PING", sizeof(struct rf_msg_ping), sizeof(struct rf_msg_ping), 0, 0 },
	[RF_MSG_HOST_DIED] = { "HOST_DIED", sizeof(struct rf_msg_host_died),
			       sizeof(struct rf_msg_host_died), 0, 0 },
	[RF_MSG_HOST_START] = { "HOST_START", sizeof(struct rf_msg_host_start),
				sizeof(struct rf_msg_host_start), 1, 0 },
	[RF_MSG_HOST_REPLACE] = { "HOST_REPLACE", 0, 0, 0, 0 },
	[RF_MSG_FAILED] = { "FAILED", sizeof(struct rf_msg_failed) + 1, RF_IPC_MAX_PAYLOAD, 0, 1 },
};

const struct rf_msg_spec *rf_msg_spec(uint32_t type)
{
	if (type >= RF_MSG_TYPE_MAX || !specs[type].name)
		return NULL;
	return &specs[type];
}

const char *rf_msg_name(uint32_t type)
{
	const struct rf_msg_spec *s = rf_msg_spec(type);

	return s ? s->name : "UNKNOWN";
}

int rf_msg_send(int sock, uint32_t type, uint32_t id, const void *payload, size_t len,
		const int *fds, int nfds)
{
	const struct rf_msg_spec *s = rf_msg_spec(type);
	uint8_t buf[sizeof(struct rf_msg_hdr) + RF_IPC_MAX_PAYLOAD];
	struct rf_msg_hdr hdr = { .type = type, .len = (uint32_t)len, .flags = 0, .id = id };

	if (!s)
		return -EINVAL;
	if (len < s->min_len || len > s->max_len || len > RF_IPC_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (nfds < 0 || nfds > s->max_fds)
		return -EINVAL;
	if (s->string_tail && ((const char *)payload)[len - 1] != '\0')
		return -EINVAL;
	memcpy(buf, &hdr, sizeof(hdr));
	if (len)
		memcpy(buf + sizeof(hdr), payload, len);
	return rf_fdpass_send(sock, buf, sizeof(hdr) + len, fds, nfds);
}

void rf_msg_close_fds(struct rf_msg *m)
{
	int i;

	for (i = 0; i < m->nfds; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	m->nfds = 0;
}

int rf_msg_recv(int sock, struct rf_msg *m)
{
	uint8_t buf[sizeof(struct rf_msg_hdr) + RF_IPC_MAX_PAYLOAD];
	const struct rf_msg_spec *s;
	int truncated;
	ssize_t n;

	n = rf_fdpass_recv(sock, buf, sizeof(buf), m->fds, RF_IPC_MAX_FDS, &m->nfds, &truncated);
	if (n < 0)
		return (int)n;
	if (n == 0 && m->nfds == 0)
		return -ECONNRESET;
	if (truncated || (size_t)n < sizeof(m->hdr))
		goto bad;
	memcpy(&m->hdr, buf, sizeof(m->hdr));
	if (m->hdr.flags != 0 || m->hdr.len != (size_t)n - sizeof(m->hdr))
		goto bad;
	s = rf_msg_spec(m->hdr.type);
	if (!s || m->hdr.len < s->min_len || m->hdr.len > s->max_len || m->nfds > s->max_fds)
		goto bad;
	memcpy(m->payload, buf + sizeof(m->hdr), m->hdr.len);
	if (s->string_tail && m->payload[m->hdr.len - 1] != '\0')
		goto bad;
	return 0;
bad:
	rf_msg_close_fds(m);
	return -EBADMSG;
}
