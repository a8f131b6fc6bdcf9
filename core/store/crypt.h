/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * crypt.h - chunk stores encrypted at rest, in desync's format, so that
 * cafs and desync can share an encrypted store:
 *
 *   stored bytes = nonce || AEAD(key, nonce, compressed chunk, no AAD)
 *                  (ciphertext followed by the 16-byte tag)
 *   nonce        = 24 random bytes (XChaCha20-Poly1305) or 12 (AES-256-GCM)
 *   file name    = <id>.cacnk.<algorithm>-<key id>
 *   key id       = the first 4 bytes of SHA-256(key), in lower-case hex
 *
 * e.g. "1a2b/1a2b...9f.cacnk.xchacha20-poly1305-635af003". A store holds
 * chunks under several keys side by side; a chunk under another key (or a
 * plain .cacnk) has another name, so to this key it is simply absent. Chunk
 * ids stay the hash of the plain data: an AEAD tag only says the bytes were
 * sealed under the key, not under which name, so whoever decrypts must still
 * verify the chunk against its id (the codec does, chunksrc.h).
 *
 * The one place that names chunk files is ca_crypt_chunk_rel (with NULL: a
 * plain store): the local store, the HTTP and S3 stores use it, so a name
 * can never differ between store kinds.
 *
 * XChaCha20: OpenSSL 3.0 has ChaCha20-Poly1305 (RFC 8439) but not the
 * extended nonce. XChaCha20-Poly1305 is HChaCha20(key, nonce[0..16)) as
 * the key of ChaCha20-Poly1305 with the nonce 0^4 || nonce[16..24). The
 * HChaCha20 subkey is taken from OpenSSL's own ChaCha20 block (EVP_chacha20):
 * a block is the permuted state plus the input state, and HChaCha20 is words
 * 0-3 and 12-15 of the permuted state, whose input words (the constants
 * and the nonce) are known, so they are subtracted again. No hand-written
 * rounds to get wrong, and no second crypto library (libsodium) to link for
 * one function; the unit test checks it against draft-irtf-cfrg-xchacha's
 * vectors and the shell test against PyNaCl (libsodium).
 *
 * Keys: 32 bytes, as 64 hex digits (the settings file, CAFS_ENCRYPTION_KEY)
 * or a key file (64 hex digits and an optional newline, or 32 raw bytes)
 * that must be a regular file owned by root or the effective user and
 * neither readable nor writable by group or others. Key material is wiped
 * when freed; no message ever holds it (the key id is not secret).
 *
 * A struct ca_crypt is immutable once made and shared by reference
 * (atomic count): seal and open are thread-safe. No global state.
 */
#ifndef CA_CRYPT_H
#define CA_CRYPT_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "format/format.h"

enum ca_crypt_alg {
	CA_CRYPT_NONE = 0,
	CA_CRYPT_XCHACHA20_POLY1305, /* desync's default */
	CA_CRYPT_AES_256_GCM,
};

#define CA_CRYPT_KEY_SIZE 32
#define CA_CRYPT_TAG_SIZE 16
#define CA_CRYPT_NONCE_MAX 24
/* what sealing adds to a chunk file at most (nonce and tag) */
#define CA_CRYPT_OVERHEAD_MAX (CA_CRYPT_NONCE_MAX + CA_CRYPT_TAG_SIZE)
#define CA_CRYPT_KEY_ID_HEX 8
#define CA_CRYPT_WHY_MAX 96

/* "<4 hex>/<64 hex>.cacnk.xchacha20-poly1305-<8 hex>", the longest name */
#define CA_CRYPT_CHUNK_REL_MAX (4 + 1 + 64 + 6 + 1 + 18 + 1 + CA_CRYPT_KEY_ID_HEX)

struct ca_crypt;

/* "xchacha20-poly1305" or "aes-256-gcm" to the algorithm: 0, or -EINVAL. */
int ca_crypt_alg_parse(const char *name, enum ca_crypt_alg *ret);
/* The algorithm's name (NULL for CA_CRYPT_NONE). */
const char *ca_crypt_alg_name(enum ca_crypt_alg alg);

/* 64 hex digits (either case, nothing else) into key: 0 or -EINVAL. */
int ca_crypt_key_parse_hex(const char *hex, uint8_t key[CA_CRYPT_KEY_SIZE]);
/* A key file as above into key. 0, or a negative errno with why set
 * ("refused: readable by group or others (chmod go-r)", "not 64 hex
 * digits or 32 bytes") for the caller's "PATH: <why>"; -errno of open
 * and read (why empty). Not logged. */
int ca_crypt_key_read_file(const char *path, uint8_t key[CA_CRYPT_KEY_SIZE], char why[CA_CRYPT_WHY_MAX]);

/* A context for alg (not NONE) and key (copied). 0, -EINVAL, -ENOMEM or
 * -ENOSYS when OpenSSL lacks the cipher. */
int ca_crypt_new(enum ca_crypt_alg alg, const uint8_t key[CA_CRYPT_KEY_SIZE], struct ca_crypt **ret);
struct ca_crypt *ca_crypt_ref(struct ca_crypt *c); /* accepts NULL */
void ca_crypt_unref(struct ca_crypt *c);           /* accepts NULL; wipes the key at the last */

enum ca_crypt_alg ca_crypt_get_alg(const struct ca_crypt *c);
/* "1a2b3c4d": the key id (not secret), NUL-terminated, lives as long as c. */
const char *ca_crypt_key_id(const struct ca_crypt *c);
/* Nonce and tag bytes sealing adds. */
size_t ca_crypt_overhead(const struct ca_crypt *c);

/* Seal n bytes of p under a fresh random nonce: out (emptied first) gets
 * nonce || ciphertext || tag. 0, -ENOMEM, -EIO (OpenSSL failed; logged at
 * debug level). */
int ca_crypt_seal(const struct ca_crypt *c, const void *p, size_t n, struct ca_buf *out);
/* Open what seal made: out (emptied first) gets the plain bytes, at most
 * n. -EBADMSG when it is too short or does not authenticate under this
 * key (a wrong key, a flipped byte, another algorithm); -ENOMEM, -EIO. */
int ca_crypt_open(const struct ca_crypt *c, const void *p, size_t n, struct ca_buf *out);

/* The chunk file's suffix in a store sealed by c: ".cacnk" for NULL (a
 * plain store), ".cacnk.<algorithm>-<key id>" otherwise. Lives as long as c. */
const char *ca_crypt_chunk_suffix(const struct ca_crypt *c);
/* The chunk's path in a store sealed by c (NULL: plain), from the store's
 * root: "<first 4 hex>/<64 hex><suffix>", NUL-terminated. Returns its length. */
size_t ca_crypt_chunk_rel(const struct ca_crypt *c, const uint8_t id[CA_CHUNK_ID_SIZE],
                          char out[CA_CRYPT_CHUNK_REL_MAX + 1]);

/* For the unit test's known answers: seal with a given nonce and AAD, and
 * HChaCha20 itself. 0 or -EIO. */
int ca_crypt_seal_with(const struct ca_crypt *c, const uint8_t *nonce, const void *aad, size_t aad_n, const void *p,
                       size_t n, struct ca_buf *out);
int ca_crypt_hchacha20(const uint8_t key[CA_CRYPT_KEY_SIZE], const uint8_t nonce[16], uint8_t out[32]);

#endif
