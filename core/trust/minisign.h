/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * minisign.h - minisign's public key and signature files: parse them
 * (strictly: they come from wherever the image came from) and verify a
 * message against them with OpenSSL. The format is minisign's own, so
 * that `minisign -G` makes the keys and `minisign -S` the signatures:
 *
 *   public key file         untrusted comment: <text>\n
 *                           base64("Ed" | key id(8) | Ed25519 key(32))\n
 *   signature file          untrusted comment: <text>\n
 *                           base64(alg(2) | key id(8) | signature(64))\n
 *                           trusted comment: <text>\n
 *                           base64(global signature(64))\n
 *
 * alg "Ed" (legacy, `minisign -S -l`) signs the message itself; "ED" (the
 * default) signs its BLAKE2b-512 hash. The global signature, by the same
 * key, covers signature(64) | trusted comment text, so the trusted comment
 * cannot be changed without the key. Key ids are compared as bytes and
 * shown as minisign shows them: the 8 bytes read little-endian, in hex.
 *
 * Parsing touches no file and no global state: give it the file's bytes
 * (at most CA_MINISIGN_*_FILE_MAX of them). Any number of threads may
 * use this module at once.
 */
#ifndef CA_MINISIGN_H
#define CA_MINISIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CA_MINISIGN_KEY_ID_SIZE 8
#define CA_MINISIGN_PK_SIZE 32
#define CA_MINISIGN_SIG_SIZE 64
/* minisign's own limits: a comment line, a trusted comment line */
#define CA_MINISIGN_COMMENT_MAX 1024
#define CA_MINISIGN_TRUSTED_COMMENT_MAX 8192
/* Larger files are not minisign's: refused unread. */
#define CA_MINISIGN_KEY_FILE_MAX 2048
#define CA_MINISIGN_SIG_FILE_MAX 10240

struct ca_minisign_key {
	uint8_t id[CA_MINISIGN_KEY_ID_SIZE];
	uint8_t pk[CA_MINISIGN_PK_SIZE];
};

struct ca_minisign_sig {
	bool prehashed; /* "ED": the signature is of the message's BLAKE2b-512 */
	uint8_t key_id[CA_MINISIGN_KEY_ID_SIZE];
	uint8_t sig[CA_MINISIGN_SIG_SIZE];
	uint8_t global_sig[CA_MINISIGN_SIG_SIZE];
	/* the trusted comment's text (after "trusted comment: "), NUL-
	 * terminated; valid UTF-8 without control characters (minisign's rule),
	 * so it may be printed */
	char trusted_comment[CA_MINISIGN_TRUSTED_COMMENT_MAX];
	size_t trusted_comment_len;
};

/* Parse a public key file's bytes: 0, or -EBADMSG (not a minisign Ed25519
 * public key file) and *ret unspecified. */
int ca_minisign_key_parse(const void *text, size_t len, struct ca_minisign_key *ret);

/* Parse a signature file's bytes: 0, or -EBADMSG (not a minisign
 * signature file, or an algorithm other than "Ed"/"ED"). */
int ca_minisign_sig_parse(const void *text, size_t len, struct ca_minisign_sig *ret);

/* Does sig, made by key, sign msg, with its trusted comment intact?
 *   0             yes
 *   -ENOKEY       the signature names another key id than key's
 *   -EKEYREJECTED the signature of the message does not verify
 *   -EBADE        the message verifies, the trusted comment does not
 *   -ENOMEM, -EIO OpenSSL failed (-EIO: logged at debug level)
 * msg may be NULL when len is 0. */
int ca_minisign_verify(const struct ca_minisign_key *key, const struct ca_minisign_sig *sig, const void *msg,
                       size_t len);

/* ---- signing (cafs sign) ---- */

/* A secret key file (`minisign -G`): one line of comment, then base64 of
 * "Ed" | kdf(2: "Sc" scrypt-encrypted, or 0 0 with -W) | "B2" | salt(32) |
 * opslimit(8) | memlimit(8) | key id(8) | secret key(64) | checksum(32),
 * the last three XORed with scrypt(password) when encrypted. */
#define CA_MINISIGN_SECRET_FILE_MAX 2048
/* scrypt limits accepted from a key file: minisign's "sensitive" level */
#define CA_MINISIGN_SCRYPT_MEM_MAX ((uint64_t)1 << 30)
#define CA_MINISIGN_SCRYPT_OPS_MAX ((uint64_t)1 << 25)

struct ca_minisign_secret {
	uint8_t id[CA_MINISIGN_KEY_ID_SIZE];
	uint8_t sk[64]; /* Ed25519 seed(32) | public key(32) */
};

/* Parse and, when encrypted, decrypt a secret key file's bytes with
 * password (NUL-terminated; ignored for an unencrypted key):
 *   0             *ret filled (the caller wipes it with OPENSSL_cleanse)
 *   -EBADMSG      not a minisign secret key file
 *   -ENOKEY       encrypted, and password is NULL
 *   -EKEYREJECTED wrong password (the decrypted key does not match its
 *                 own public half)
 *   -E2BIG        scrypt limits beyond CA_MINISIGN_SCRYPT_*_MAX
 *   -ENOMEM, -EIO */
int ca_minisign_secret_parse(const void *text, size_t len, const char *password, struct ca_minisign_secret *ret);

/* Sign msg as `minisign -S` does (prehashed: BLAKE2b-512, else legacy):
 * *ret_text (malloc'd, *ret_len bytes) is a whole signature file with the
 * given comments (one line each, no CR/LF; trusted_comment printable
 * UTF-8, as ca_minisign_sig_parse wants). -EINVAL for a bad comment. */
int ca_minisign_sign(const struct ca_minisign_secret *key, const void *msg, size_t len, bool prehashed,
                     const char *untrusted_comment, const char *trusted_comment, char **ret_text, size_t *ret_len);

/* A key id as minisign prints it: 16 uppercase hex digits and a NUL. */
void ca_minisign_key_id_hex(const uint8_t id[CA_MINISIGN_KEY_ID_SIZE], char ret[17]);

#endif
