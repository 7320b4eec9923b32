/* SPDX-License-Identifier: MIT */
/*
 * Reading the broker's status line (ringfencectl status: " KEY=VALUE"
 * fields after the tenant's), for the tools that ask for it.
 */
#ifndef RINGFENCE_STATUS_H
#define RINGFENCE_STATUS_H

#include <stddef.h>

/* @status's value of @key, up to the first of @stops or the line's end,
 * in @val (at most @len - 1 bytes of it; "" when @key is absent). 0, or
 * -1 when @key is absent or its value did not fit. */
int rf_status_field(const char *status, const char *key, const char *stops, char *val, size_t len);

#endif /* RINGFENCE_STATUS_H */
