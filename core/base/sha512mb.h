/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sha512mb.h - SHA-512/256 (and SHA-512) of many independent messages at
 * once: multi-buffer hashing in the 64-bit lanes of a vector register.
 *
 * One SHA-512 block is 80 dependent rounds: a single message cannot use
 * a vector unit, but N messages can, one per lane (4 lanes with AVX2, 8
 * with AVX-512). A lane that finishes its message takes the next one, so
 * messages of different lengths (chunks) keep the lanes busy until fewer
 * than N are left. The digests are FIPS 180-4's, byte for byte: SHA-512/256
 * with its own IVs, truncated to 32 bytes.
 *
 * The vector code is compiled with target attributes and picked at run
 * time (__builtin_cpu_supports); a CPU without AVX2 gets OpenSSL, one
 * message at a time. Thread-safe: no state outside the call.
 */
#ifndef CA_SHA512MB_H
#define CA_SHA512MB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One message and where its digest goes (32 bytes, or 64 for SHA-512). */
struct ca_sha512mb_msg {
	const void *data;
	size_t size;
	uint8_t *out;
};

enum ca_sha512mb_impl {
	CA_SHA512MB_AUTO,    /* the best this CPU has */
	CA_SHA512MB_OPENSSL, /* EVP, one message at a time */
	CA_SHA512MB_AVX2,    /* 4 lanes */
	CA_SHA512MB_AVX512,  /* 8 lanes (AVX-512F and BW) */
};

/* Hash the n messages with impl; full512: SHA-512 (64-byte digests),
 * else SHA-512/256. 0, -ENOTSUP (impl not on this CPU), or -EIO
 * (OpenSSL failed; logged). */
int ca_sha512mb_hash(enum ca_sha512mb_impl impl, bool full512, const struct ca_sha512mb_msg *msgs, size_t n);

/* What AUTO picks on this CPU, and how many messages it hashes at once (1 for OpenSSL). */
enum ca_sha512mb_impl ca_sha512mb_best(void);
unsigned ca_sha512mb_lanes(enum ca_sha512mb_impl impl);
/* "openssl", "avx2", "avx512" */
const char *ca_sha512mb_impl_name(enum ca_sha512mb_impl impl);

#endif
