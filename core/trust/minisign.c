/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* minisign.c - minisign key and signature files (see minisign.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "base/log.h"
#include "trust/minisign.h"

#define UNTRUSTED_PREFIX "untrusted comment: "
#define TRUSTED_PREFIX "trusted comment: "
#define ALG_LEGACY "Ed"
#define ALG_HASHED "ED"
#define KEY_BLOB_SIZE (2 + CA_MINISIGN_KEY_ID_SIZE + CA_MINISIGN_PK_SIZE)
#define SIG_BLOB_SIZE (2 + CA_MINISIGN_KEY_ID_SIZE + CA_MINISIGN_SIG_SIZE)
#define BLAKE2B_512_SIZE 64

/* ---- lines and base64 ---- */

/* The bytes being parsed, consumed a line at a time. */
struct cursor {
	const char *p;
	size_t left;
};

/* The next line, without its "\n" or "\r\n": false when there is none, or
 * when it holds a NUL or a lone CR (minisign refuses those too). The last
 * line may lack its newline. */
static bool next_line(struct cursor *c, const char **ret, size_t *ret_len)
{
	const char *nl;
	size_t n;
	if (c->left == 0)
		return false;
	nl = memchr(c->p, '\n', c->left);
	n = nl ? (size_t)(nl - c->p) : c->left;
	*ret = c->p;
	c->p += nl ? n + 1 : n;
	c->left -= nl ? n + 1 : n;
	if (n > 0 && (*ret)[n - 1] == '\r')
		n--;
	if (memchr(*ret, '\0', n) || memchr(*ret, '\r', n))
		return false;
	*ret_len = n;
	return true;
}

static int b64_value(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/* Canonical padded base64 of exactly n bytes, and nothing else. */
static bool b64_decode_exact(const char *s, size_t len, uint8_t *out, size_t n)
{
	size_t pad = n % 3 ? 3 - n % 3 : 0, o = 0;
	uint32_t acc = 0;
	if (len != (n + 2) / 3 * 4)
		return false;
	for (size_t i = 0; i < len - pad; i++) {
		int v = b64_value(s[i]);
		if (v < 0)
			return false;
		acc = acc << 6 | (uint32_t)v;
		if (i % 4 == 3) {
			out[o++] = (uint8_t)(acc >> 16);
			out[o++] = (uint8_t)(acc >> 8);
			out[o++] = (uint8_t)acc;
			acc = 0;
		}
	}
	for (size_t i = len - pad; i < len; i++)
		if (s[i] != '=')
			return false;
	if (pad == 2) { /* 2 symbols: 12 bits, 8 used */
		if (acc & 0xf)
			return false;
		out[o++] = (uint8_t)(acc >> 4);
	} else if (pad == 1) { /* 3 symbols: 18 bits, 16 used */
		if (acc & 0x3)
			return false;
		out[o++] = (uint8_t)(acc >> 10);
		out[o++] = (uint8_t)(acc >> 2);
	}
	return o == n;
}

/* Valid UTF-8 without control characters (C0, DEL, C1; a tab is fine):
 * what minisign accepts as a trusted comment, and what is safe to print. */
static bool printable_utf8(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint8_t c = s[i++];
		uint32_t cp;
		size_t need;
		if (c < 0x80) {
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return false;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, cp = c & 0x07;
		else
			return false;
		if (n - i < need)
			return false;
		for (size_t k = 0; k < need; k++, i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		/* overlong forms, surrogates, beyond U+10FFFF, C1 controls */
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
		    cp > 0x10ffff || (cp >= 0x80 && cp <= 0x9f))
			return false;
	}
	return true;
}

static bool has_prefix(const char *line, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && memcmp(line, prefix, n) == 0;
}

/* "untrusted comment: ..." within minisign's line limit (its fgets buffer
 * holds the line, its newline and a NUL). */
static bool untrusted_comment_line(struct cursor *c)
{
	const char *l;
	size_t n;
	return next_line(c, &l, &n) && n + 2 <= CA_MINISIGN_COMMENT_MAX && has_prefix(l, n, UNTRUSTED_PREFIX);
}

/* Nothing but the end of the file may follow (the last newline is taken). */
static bool at_end(const struct cursor *c)
{
	return c->left == 0;
}

/* ---- parsing ---- */

int ca_minisign_key_parse(const void *text, size_t len, struct ca_minisign_key *ret)
{
	struct cursor c = { text, len };
	uint8_t blob[KEY_BLOB_SIZE];
	const char *l;
	size_t n;
	if (len > CA_MINISIGN_KEY_FILE_MAX || !untrusted_comment_line(&c) || !next_line(&c, &l, &n) ||
	    !b64_decode_exact(l, n, blob, sizeof(blob)) || !at_end(&c) || memcmp(blob, ALG_LEGACY, 2) != 0)
		return -EBADMSG;
	memcpy(ret->id, blob + 2, sizeof(ret->id));
	memcpy(ret->pk, blob + 2 + sizeof(ret->id), sizeof(ret->pk));
	return 0;
}

int ca_minisign_sig_parse(const void *text, size_t len, struct ca_minisign_sig *ret)
{
	struct cursor c = { text, len };
	uint8_t blob[SIG_BLOB_SIZE];
	const char *l;
	size_t n, tlen;
	if (len > CA_MINISIGN_SIG_FILE_MAX || !untrusted_comment_line(&c) || !next_line(&c, &l, &n) ||
	    !b64_decode_exact(l, n, blob, sizeof(blob)))
		return -EBADMSG;
	if (memcmp(blob, ALG_LEGACY, 2) == 0)
		ret->prehashed = false;
	else if (memcmp(blob, ALG_HASHED, 2) == 0)
		ret->prehashed = true;
	else
		return -EBADMSG;
	memcpy(ret->key_id, blob + 2, sizeof(ret->key_id));
	memcpy(ret->sig, blob + 2 + sizeof(ret->key_id), sizeof(ret->sig));

	if (!next_line(&c, &l, &n) || n + 2 > CA_MINISIGN_TRUSTED_COMMENT_MAX || !has_prefix(l, n, TRUSTED_PREFIX))
		return -EBADMSG;
	tlen = n - strlen(TRUSTED_PREFIX);
	if (!printable_utf8((const uint8_t *)l + strlen(TRUSTED_PREFIX), tlen))
		return -EBADMSG;
	memcpy(ret->trusted_comment, l + strlen(TRUSTED_PREFIX), tlen);
	ret->trusted_comment[tlen] = 0;
	ret->trusted_comment_len = tlen;

	if (!next_line(&c, &l, &n) || !b64_decode_exact(l, n, ret->global_sig, sizeof(ret->global_sig)) ||
	    !at_end(&c))
		return -EBADMSG;
	return 0;
}

/* ---- verifying ---- */

/* OpenSSL's error queue, once, at debug level; then -EIO. */
static int ssl_error(const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256] = "";
	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return ca_log_debug_errno(EIO, "%s: %s", what, buf);
}

/* Ed25519 over msg: 1 valid, 0 not, or a negative errno. */
static int ed25519_verify(EVP_PKEY *pkey, const uint8_t sig[CA_MINISIGN_SIG_SIZE], const void *msg, size_t len)
{
	static const uint8_t empty;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int r;
	if (!md)
		return -ENOMEM;
	if (EVP_DigestVerifyInit(md, NULL, NULL, NULL, pkey) != 1) {
		r = ssl_error("Ed25519");
		goto out;
	}
	r = EVP_DigestVerify(md, sig, CA_MINISIGN_SIG_SIZE, len ? msg : &empty, len);
	if (r < 0)
		r = ssl_error("Ed25519");
	else
		ERR_clear_error(); /* a bad signature leaves an entry behind */
out:
	EVP_MD_CTX_free(md);
	return r;
}

static int blake2b_512(const void *msg, size_t len, uint8_t out[BLAKE2B_512_SIZE])
{
	static const uint8_t empty;
	EVP_MD *md = EVP_MD_fetch(NULL, "BLAKE2B-512", NULL);
	unsigned int n = 0;
	int ok = md && EVP_Digest(len ? msg : &empty, len, out, &n, md, NULL) == 1 && n == BLAKE2B_512_SIZE;
	EVP_MD_free(md);
	return ok ? 0 : ssl_error("BLAKE2b-512");
}

int ca_minisign_verify(const struct ca_minisign_key *key, const struct ca_minisign_sig *sig, const void *msg,
                       size_t len)
{
	uint8_t hash[BLAKE2B_512_SIZE];
	uint8_t *global = NULL;
	EVP_PKEY *pkey = NULL;
	int r;
	if (memcmp(key->id, sig->key_id, sizeof(key->id)) != 0)
		return -ENOKEY;
	pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, key->pk, sizeof(key->pk));
	if (!pkey)
		return ssl_error("Ed25519 key");
	if (sig->prehashed) {
		r = blake2b_512(msg, len, hash);
		if (r < 0)
			goto out;
		msg = hash;
		len = sizeof(hash);
	}
	r = ed25519_verify(pkey, sig->sig, msg, len);
	if (r <= 0) {
		r = r < 0 ? r : -EKEYREJECTED;
		goto out;
	}
	/* the global signature: signature | trusted comment */
	global = malloc(sizeof(sig->sig) + sig->trusted_comment_len);
	if (!global) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(global, sig->sig, sizeof(sig->sig));
	memcpy(global + sizeof(sig->sig), sig->trusted_comment, sig->trusted_comment_len);
	r = ed25519_verify(pkey, sig->global_sig, global, sizeof(sig->sig) + sig->trusted_comment_len);
	r = r < 0 ? r : r == 1 ? 0 : -EBADE;
out:
	free(global);
	EVP_PKEY_free(pkey);
	return r;
}

void ca_minisign_key_id_hex(const uint8_t id[CA_MINISIGN_KEY_ID_SIZE], char ret[17])
{
	static const char hex[] = "0123456789ABCDEF";
	/* minisign prints the id as a little-endian number: last byte first */
	for (int i = 0; i < CA_MINISIGN_KEY_ID_SIZE; i++) {
		uint8_t b = id[CA_MINISIGN_KEY_ID_SIZE - 1 - i];
		ret[2 * i] = hex[b >> 4];
		ret[2 * i + 1] = hex[b & 15];
	}
	ret[16] = 0;
}

/* ---- signing ---- */

#define SECRET_BLOB_SIZE (2 + 2 + 2 + 32 + 8 + 8 + CA_MINISIGN_KEY_ID_SIZE + 64 + 32)
#define SECRET_ENC_OFF (2 + 2 + 2 + 32 + 8 + 8) /* key id | key | checksum: what scrypt covers */

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* libsodium's scrypt parameters for (opslimit, memlimit), which minisign
 * stores: r = 8, then N and p from the two limits. */
static void scrypt_params(uint64_t ops, uint64_t mem, uint64_t *n, uint64_t *r, uint64_t *p)
{
	uint64_t max_n, log2n;
	if (ops < 32768)
		ops = 32768;
	*r = 8;
	max_n = ops < mem / 32 ? ops / (*r * 4) : mem / (*r * 128);
	for (log2n = 1; log2n < 63; log2n++)
		if ((uint64_t)1 << log2n > max_n / 2)
			break;
	*n = (uint64_t)1 << log2n;
	if (ops < mem / 32) {
		*p = 1;
	} else {
		uint64_t maxrp = (ops / 4) / *n;
		*p = (maxrp > 0x3fffffff ? 0x3fffffff : maxrp) / *r;
	}
}

/* Does the seed's public key match the key's own public half? */
static int secret_consistent(const uint8_t sk[64])
{
	uint8_t pk[CA_MINISIGN_PK_SIZE];
	size_t n = sizeof(pk);
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, sk, 32);
	int r;
	if (!k)
		return ssl_error("Ed25519 secret key");
	r = EVP_PKEY_get_raw_public_key(k, pk, &n) == 1 ? 0 : ssl_error("Ed25519 public key");
	EVP_PKEY_free(k);
	if (r == 0 && (n != sizeof(pk) || CRYPTO_memcmp(pk, sk + 32, sizeof(pk)) != 0))
		r = -EKEYREJECTED;
	return r;
}

int ca_minisign_secret_parse(const void *text, size_t len, const char *password, struct ca_minisign_secret *ret)
{
	struct cursor c = { text, len };
	uint8_t blob[SECRET_BLOB_SIZE], stream[SECRET_BLOB_SIZE - SECRET_ENC_OFF];
	const char *l;
	size_t n;
	bool encrypted;
	int r = -EBADMSG;
	if (len > CA_MINISIGN_SECRET_FILE_MAX || !untrusted_comment_line(&c) || !next_line(&c, &l, &n) ||
	    !b64_decode_exact(l, n, blob, sizeof(blob)) || !at_end(&c) || memcmp(blob, ALG_LEGACY, 2) != 0 ||
	    memcmp(blob + 4, "B2", 2) != 0)
		goto out;
	if (memcmp(blob + 2, "Sc", 2) == 0)
		encrypted = true;
	else if (blob[2] == 0 && blob[3] == 0)
		encrypted = false;
	else
		goto out;
	if (encrypted) {
		uint64_t ops = le64(blob + 38), mem = le64(blob + 46), sn, sr, sp;
		if (!password) {
			r = -ENOKEY;
			goto out;
		}
		if (ops > CA_MINISIGN_SCRYPT_OPS_MAX || mem > CA_MINISIGN_SCRYPT_MEM_MAX) {
			r = -E2BIG;
			goto out;
		}
		scrypt_params(ops, mem, &sn, &sr, &sp);
		/* scrypt's own need, 128 r (N + p + 2) bytes, is what maxmem must allow */
		if (EVP_PBE_scrypt(password, strlen(password), blob + 6, 32, sn, sr, sp, 128 * sr * (sn + sp + 2) + 65536,
		                   stream, sizeof(stream)) != 1) {
			r = ssl_error("scrypt");
			goto out;
		}
		for (size_t i = 0; i < sizeof(stream); i++)
			blob[SECRET_ENC_OFF + i] ^= stream[i];
	}
	r = secret_consistent(blob + SECRET_ENC_OFF + CA_MINISIGN_KEY_ID_SIZE);
	if (r == -EKEYREJECTED && !encrypted)
		r = -EBADMSG;
	if (r < 0)
		goto out;
	memcpy(ret->id, blob + SECRET_ENC_OFF, sizeof(ret->id));
	memcpy(ret->sk, blob + SECRET_ENC_OFF + CA_MINISIGN_KEY_ID_SIZE, sizeof(ret->sk));
out:
	OPENSSL_cleanse(blob, sizeof(blob));
	OPENSSL_cleanse(stream, sizeof(stream));
	return r;
}

static void b64_encode(const uint8_t *in, size_t n, char *out)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
		out[o++] = a[v >> 18 & 63];
		out[o++] = a[v >> 12 & 63];
		out[o++] = i + 1 < n ? a[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? a[v & 63] : '=';
	}
	out[o] = 0;
}

static int ed25519_sign(EVP_PKEY *k, const void *msg, size_t len, uint8_t sig[CA_MINISIGN_SIG_SIZE])
{
	static const uint8_t empty;
	size_t n = CA_MINISIGN_SIG_SIZE;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int r = md ? 0 : -ENOMEM;
	if (r == 0 && (EVP_DigestSignInit(md, NULL, NULL, NULL, k) != 1 ||
	               EVP_DigestSign(md, sig, &n, len ? msg : &empty, len) != 1 || n != CA_MINISIGN_SIG_SIZE))
		r = ssl_error("Ed25519 signing");
	EVP_MD_CTX_free(md);
	return r;
}

static bool one_line(const char *s)
{
	return !strpbrk(s, "\r\n");
}

int ca_minisign_sign(const struct ca_minisign_secret *key, const void *msg, size_t len, bool prehashed,
                     const char *untrusted_comment, const char *trusted_comment, char **ret_text, size_t *ret_len)
{
	uint8_t hash[BLAKE2B_512_SIZE], blob[SIG_BLOB_SIZE], global[CA_MINISIGN_SIG_SIZE];
	char b64_sig[(SIG_BLOB_SIZE + 2) / 3 * 4 + 1], b64_global[(CA_MINISIGN_SIG_SIZE + 2) / 3 * 4 + 1];
	size_t tlen = strlen(trusted_comment);
	uint8_t *both = NULL;
	char *text = NULL;
	int r, n;
	EVP_PKEY *k;
	if (!one_line(untrusted_comment) || strlen(untrusted_comment) + strlen(UNTRUSTED_PREFIX) + 2 > CA_MINISIGN_COMMENT_MAX ||
	    tlen + strlen(TRUSTED_PREFIX) + 2 > CA_MINISIGN_TRUSTED_COMMENT_MAX ||
	    !printable_utf8((const uint8_t *)trusted_comment, tlen))
		return -EINVAL;
	k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, key->sk, 32);
	if (!k)
		return ssl_error("Ed25519 secret key");
	memcpy(blob, prehashed ? ALG_HASHED : ALG_LEGACY, 2);
	memcpy(blob + 2, key->id, CA_MINISIGN_KEY_ID_SIZE);
	r = prehashed ? blake2b_512(msg, len, hash) : 0;
	if (r == 0)
		r = ed25519_sign(k, prehashed ? hash : msg, prehashed ? sizeof(hash) : len,
		                 blob + 2 + CA_MINISIGN_KEY_ID_SIZE);
	both = r == 0 ? malloc(CA_MINISIGN_SIG_SIZE + tlen) : NULL;
	if (r == 0 && !both)
		r = -ENOMEM;
	if (r == 0) {
		memcpy(both, blob + 2 + CA_MINISIGN_KEY_ID_SIZE, CA_MINISIGN_SIG_SIZE);
		memcpy(both + CA_MINISIGN_SIG_SIZE, trusted_comment, tlen);
		r = ed25519_sign(k, both, CA_MINISIGN_SIG_SIZE + tlen, global);
	}
	if (r == 0) {
		b64_encode(blob, sizeof(blob), b64_sig);
		b64_encode(global, sizeof(global), b64_global);
		n = asprintf(&text, UNTRUSTED_PREFIX "%s\n%s\n" TRUSTED_PREFIX "%s\n%s\n", untrusted_comment, b64_sig,
		             trusted_comment, b64_global);
		if (n < 0)
			r = -ENOMEM;
		else
			*ret_text = text, *ret_len = (size_t)n;
	}
	free(both);
	EVP_PKEY_free(k);
	return r;
}
