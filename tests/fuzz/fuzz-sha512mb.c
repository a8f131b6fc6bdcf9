/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-sha512mb - the multi-buffer SHA-512 (sha512mb.c) against OpenSSL.
 *
 * Input: byte 0 picks the message count (1..24) and the digest (bit 7:
 * SHA-512, else SHA-512/256); then two bytes per message, its length
 * (modulo what is left); the rest is the data, each message a slice of it
 * starting at its own offset. Property: every implementation this CPU has
 * gives OpenSSL's digest for every message, in one batch.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/evp.h>

#include "fuzz.h"
#include "base/sha512mb.h"

#define MAX_MSGS 24

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ca_sha512mb_msg msgs[MAX_MSGS];
	uint8_t out[MAX_MSGS][64], want[64];
	if (size < 1)
		return 0;
	size_t n = (size_t)(data[0] & 0x7f) % MAX_MSGS + 1;
	bool full512 = data[0] & 0x80;
	if (size < 1 + 2 * n)
		return 0;
	const uint8_t *body = data + 1 + 2 * n;
	size_t body_size = size - 1 - 2 * n;
	for (size_t i = 0; i < n; i++) {
		size_t want_len = (size_t)data[1 + 2 * i] << 8 | data[2 + 2 * i];
		size_t start = body_size ? (i * 37) % (body_size + 1) : 0;
		size_t len = body_size - start ? want_len % (body_size - start + 1) : 0;
		msgs[i] = (struct ca_sha512mb_msg){ .data = body + start, .size = len, .out = out[i] };
	}
	for (enum ca_sha512mb_impl impl = CA_SHA512MB_AUTO; impl <= CA_SHA512MB_AVX512; impl++) {
		memset(out, 0, sizeof(out));
		int r = ca_sha512mb_hash(impl, full512, msgs, n);
		if (r == -ENOTSUP)
			continue;
		if (r != 0)
			fuzz_fail("%s: %d", ca_sha512mb_impl_name(impl), r);
		for (size_t i = 0; i < n; i++) {
			unsigned len = 0;
			if (EVP_Digest(msgs[i].data, msgs[i].size, want, &len, full512 ? EVP_sha512() : EVP_sha512_256(),
			               NULL) != 1)
				fuzz_fail("OpenSSL failed");
			if (memcmp(want, out[i], full512 ? 64 : 32))
				fuzz_fail("%s: message %zu of %zu (%zu bytes) differs from OpenSSL", ca_sha512mb_impl_name(impl),
				          i, n, msgs[i].size);
		}
	}
	return 0;
}
