/* SPDX-License-Identifier: MIT */
/* Start a program in this process, keeping its mappings (uexec.c). */
#ifndef RINGFENCE_UEXEC_H
#define RINGFENCE_UEXEC_H

#include <stddef.h>

/*
 * Run the system's dynamic loader in this process with @argv (argv[0]
 * the loader's name as the program sees its own, then the loader's
 * options and the program) and @envp, as after an execve of it. Returns
 * only on failure: a negative errno, and in @why what failed; past the
 * point of no return a failure is the loader's own, on standard error,
 * and the process's exit. The caller is the process's only thread.
 */
int rf_uexec(char *const argv[], char *const envp[], char *why, size_t len);

#endif /* RINGFENCE_UEXEC_H */
