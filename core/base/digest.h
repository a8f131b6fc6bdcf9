/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * digest.h - the two digests casync uses for chunk ids and stream digests,
 * through OpenSSL EVP. SHA-512/256 is the FIPS 180-4 variant (its own IVs),
 * not a truncated SHA-512.
 *
 * A ca_digest is one running hash; not thread-safe, use one per thread.
 */
#ifndef CA_DIGEST_H
#define CA_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "base/sha512mb.h"


/* A digest's size; casync's chunk ids (CA_CHUNK_ID_SIZE) are such digests. */
#define CA_DIGEST_SIZE 32

enum ca_digest_type {
	CA_DIGEST_SHA256,
	CA_DIGEST_SHA512_256,
};

struct ca_digest;

/* Returns 0 and a new digest in *ret, or -ENOMEM / -EIO (OpenSSL failure, logged). */
int ca_digest_new(enum ca_digest_type type, struct ca_digest **ret);
void ca_digest_free(struct ca_digest *d); /* accepts NULL */
int ca_digest_reset(struct ca_digest *d);
int ca_digest_update(struct ca_digest *d, const void *p, size_t n);
/* Writes 32 bytes and resets the digest for reuse. */
int ca_digest_final(struct ca_digest *d, uint8_t out[CA_DIGEST_SIZE]);
/* reset + update + final */
int ca_digest_once(struct ca_digest *d, const void *p, size_t n, uint8_t out[CA_DIGEST_SIZE]);
enum ca_digest_type ca_digest_get_type(const struct ca_digest *d);
/* ca_digest_once of n independent messages (each msgs[i].out gets 32
 * bytes): SHA-512/256 several at a time in vector lanes (sha512mb.h), so
 * callers with a batch of chunks hand it over whole; SHA-256 one by one
 * through d. d is reset. */
int ca_digest_many(struct ca_digest *d, const struct ca_sha512mb_msg *msgs, size_t n);

/* "sha256" / "sha512-256" */
const char *ca_digest_type_name(enum ca_digest_type type);
/* Accepts sha256, sha512-256 (also sha512/256, sha512_256) and "default". -EINVAL otherwise. */
int ca_digest_type_parse(const char *s, enum ca_digest_type *ret);

/* 64 lowercase hex chars and a NUL into out (65 bytes). */
void ca_id_to_hex(const uint8_t id[CA_DIGEST_SIZE], char out[2 * CA_DIGEST_SIZE + 1]);
/* Parses exactly 64 hex chars (either case). -EINVAL otherwise. */
int ca_id_from_hex(const char *s, uint8_t id[CA_DIGEST_SIZE]);
/* A hex digit's value (either case), or -1. */
int ca_unhex_digit(char c);

#endif
