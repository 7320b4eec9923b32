/* SPDX-License-Identifier: MIT */
/*
 * seccomp.policy: the worker's syscall allowlist, in a small language close
 * to minijail's policy files.
 *
 *   # comment
 *   @default kill | trap | log       what any call not listed gets (once)
 *   @include other.policy            relative to the including file
 *   read: 1                          allow
 *   ioctl: return ENOTTY             fail with an errno
 *   fcntl: arg1 == F_GETFL || arg1 == F_SETFL
 *   mmap: arg2 in {PROT_READ, PROT_READ|PROT_WRITE} && arg3 & MAP_SHARED
 *   futex: arg1 & FUTEX_CMD_MASK == FUTEX_WAIT     (masked compare)
 *
 * Conditions compare argN (0..5) with ==, !=, <, <=, >, >=, "& MASK"
 * (all MASK bits set) or "& MASK == VALUE", and "in {A, B, ...}"
 * (membership). Values are numbers (decimal, 0x hex, 0 octal), named
 * constants (O_*, PROT_*, MAP_*, F_*, FUTEX_*, ...) and '|' of those.
 * && binds tighter than ||. A call whose conditions all fail gets the
 * default action. x86-64 only; i386 and x32 calls are killed.
 *
 * Every error names FILE:LINE:COLUMN and what was expected. Unknown and
 * duplicate syscall names are errors.
 */
#ifndef RINGFENCE_SECCOMP_POLICY_H
#define RINGFENCE_SECCOMP_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RF_SC_MAX_ARGS 6

enum rf_sc_op {
	RF_SC_EQ,
	RF_SC_NE,
	RF_SC_LT,
	RF_SC_LE,
	RF_SC_GT,
	RF_SC_GE,
	RF_SC_MASKED_EQ, /* (arg & mask) == value */
};

struct rf_sc_cond {
	uint8_t arg;
	uint8_t op; /* enum rf_sc_op */
	uint64_t value;
	uint64_t mask;
};

/* A conjunction of conditions; "in {..}" has been expanded already. */
struct rf_sc_clause {
	size_t nconds;
	struct rf_sc_cond conds[RF_SC_MAX_ARGS * 2];
};

enum rf_sc_action {
	RF_SC_ALLOW,
	RF_SC_ERRNO,
	RF_SC_KILL,
	RF_SC_TRAP,
	RF_SC_LOG,
};

struct rf_sc_rule {
	char name[64];
	int nr;
	enum rf_sc_action action; /* ALLOW (if any clause holds) or ERRNO */
	int errno_value;
	size_t nclauses; /* 0 with ALLOW: unconditional */
	struct rf_sc_clause *clauses;
	char where[300]; /* FILE:LINE of the rule, for listings */
	int depth; /* the include depth of its file (0: the policy's own) */
};

struct rf_sc_policy {
	enum rf_sc_action default_action;
	size_t nrules;
	struct rf_sc_rule *rules;
};

/* Parse @path (and its includes). Returns 0 and a policy to free with
 * rf_sc_policy_free(), or -EINVAL with every error in @err ("FILE:LINE:COL:
 * ..." one per line), or another -errno when a file cannot be read. */
int rf_sc_policy_load(const char *path, struct rf_sc_policy **out, char *err, size_t errlen);
/* The same on text in memory; includes are resolved relative to @file. */
int rf_sc_policy_parse(const char *file, const char *text, size_t len, struct rf_sc_policy **out,
		       char *err, size_t errlen);
void rf_sc_policy_free(struct rf_sc_policy *p);

/* Compile to a seccomp BPF program written to @fd (libseccomp's export).
 * Returns 0 or -errno. */
int rf_sc_policy_export_bpf(const struct rf_sc_policy *p, int fd);
/* Load the policy into the calling process, all threads. Returns 0 or -errno. */
int rf_sc_policy_load_filter(const struct rf_sc_policy *p);
/* The same, but every call the policy would refuse is sent to a listener
 * instead (SECCOMP_RET_USER_NOTIF), and ioctl's NOTIF_RECV and NOTIF_SEND
 * and gettid are allowed, for the thread that answers it: the listener's
 * fd, or a negative errno. ringfenced --learn-seccomp only. */
int rf_sc_policy_load_learning(const struct rf_sc_policy *p);
/* The effective rules, one per line, as `--check-seccomp` prints them. */
void rf_sc_policy_print(const struct rf_sc_policy *p, FILE *f);

/* Look a named constant up; returns 0 or -ENOENT. */
int rf_sc_constant(const char *name, uint64_t *value);

#endif /* RINGFENCE_SECCOMP_POLICY_H */
