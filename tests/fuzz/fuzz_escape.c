// SPDX-License-Identifier: MIT
/*
 * libFuzzer: log_escape(), which stands between a worker's words and the
 * broker's log. The first byte picks the output size; the output must be
 * terminated inside it and hold no control character.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	size_t outlen, n, i;
	char *in, *out;

	if (!len)
		return 0;
	outlen = data[0];
	in = malloc(len);
	out = malloc(outlen + 1);
	if (!in || !out)
		abort();
	memcpy(in, data + 1, len - 1);
	in[len - 1] = '\0';
	log_escape(in, out, outlen);
	if (outlen) {
		n = strnlen(out, outlen);
		if (n >= outlen)
			abort();
		for (i = 0; i < n; i++)
			if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
				abort();
	}
	free(in);
	free(out);
	return 0;
}
