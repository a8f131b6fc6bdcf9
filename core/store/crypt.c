/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* crypt.c - chunk stores encrypted at rest, desync's format (see crypt.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "base/digest.h"
#include "base/fdio.h"
#include "base/log.h"
#include "base/trusted_file.h"
#include "store/crypt.h"

struct ca_crypt {
	unsigned refs; /* atomic */
	enum ca_crypt_alg alg;
	size_t nonce_size;
	EVP_CIPHER *aead;   /* AES-256-GCM or ChaCha20-Poly1305 */
	EVP_CIPHER *chacha; /* plain ChaCha20, for HChaCha20 (XChaCha20 only) */
	uint8_t key[CA_CRYPT_KEY_SIZE];
	char key_id[CA_CRYPT_KEY_ID_HEX + 1];
	char suffix[6 + 1 + 18 + 1 + CA_CRYPT_KEY_ID_HEX + 1];
};

static const struct {
	enum ca_crypt_alg alg;
	const char *name;
	const char *evp; /* the AEAD's OpenSSL name */
	size_t nonce_size;
} algs[] = {
	{ CA_CRYPT_XCHACHA20_POLY1305, "xchacha20-poly1305", "ChaCha20-Poly1305", 24 },
	{ CA_CRYPT_AES_256_GCM, "aes-256-gcm", "AES-256-GCM", 12 },
};

int ca_crypt_alg_parse(const char *name, enum ca_crypt_alg *ret)
{
	for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++)
		if (!strcmp(name, algs[i].name)) {
			*ret = algs[i].alg;
			return 0;
		}
	return -EINVAL;
}

const char *ca_crypt_alg_name(enum ca_crypt_alg alg)
{
	for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++)
		if (algs[i].alg == alg)
			return algs[i].name;
	return NULL;
}

/* ---- keys ---- */

static int key_from_hex(const char *hex, size_t n, uint8_t key[CA_CRYPT_KEY_SIZE])
{
	if (n != 2 * CA_CRYPT_KEY_SIZE)
		return -EINVAL;
	for (size_t i = 0; i < CA_CRYPT_KEY_SIZE; i++) {
		int hi = ca_unhex_digit(hex[2 * i]), lo = ca_unhex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			explicit_bzero(key, CA_CRYPT_KEY_SIZE);
			return -EINVAL;
		}
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int ca_crypt_key_parse_hex(const char *hex, uint8_t key[CA_CRYPT_KEY_SIZE])
{
	return key_from_hex(hex, strlen(hex), key);
}

int ca_crypt_key_read_file(const char *path, uint8_t key[CA_CRYPT_KEY_SIZE], char why[CA_CRYPT_WHY_MAX])
{
	char tw[CA_TRUSTED_FILE_WHY_MAX];
	uint8_t buf[2 * CA_CRYPT_KEY_SIZE + 3];
	struct stat st;
	size_t n = 0;
	int r;
	why[0] = 0;
	/* O_NONBLOCK: a FIFO put there cannot hang us (refused below) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	r = ca_trusted_file_check(&st, S_IFREG, tw);
	if (r < 0) {
		snprintf(why, CA_CRYPT_WHY_MAX, "%s", tw);
		goto out;
	}
	/* a key others can read is no secret: refused, not warned about */
	if (st.st_mode & (S_IRGRP | S_IROTH)) {
		snprintf(why, CA_CRYPT_WHY_MAX, "refused: readable by group or others (chmod go-r)");
		r = -EPERM;
		goto out;
	}
	ssize_t k = ca_read_full(fd, buf, sizeof(buf));
	if (k < 0) {
		r = (int)k;
		goto out;
	}
	n = (size_t)k;
	r = -EINVAL;
	if (n == CA_CRYPT_KEY_SIZE) {
		memcpy(key, buf, CA_CRYPT_KEY_SIZE);
		r = 0;
	} else {
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			n--;
		r = key_from_hex((const char *)buf, n, key);
	}
	if (r < 0)
		snprintf(why, CA_CRYPT_WHY_MAX, "not a key: expected 64 hex digits or 32 bytes");
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return r;
}

/* ---- contexts ---- */

static EVP_CIPHER *cipher_fetch(const char *name)
{
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
	/* fetched once here, not implicitly by every EVP_*Init of every chunk */
	return EVP_CIPHER_fetch(NULL, name, NULL);
#else
	return (EVP_CIPHER *)EVP_get_cipherbyname(name);
#endif
}

static void cipher_free(EVP_CIPHER *c)
{
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
	EVP_CIPHER_free(c);
#else
	(void)c;
#endif
}

int ca_crypt_new(enum ca_crypt_alg alg, const uint8_t key[CA_CRYPT_KEY_SIZE], struct ca_crypt **ret)
{
	const char *name = ca_crypt_alg_name(alg);
	uint8_t h[SHA256_DIGEST_LENGTH];
	size_t i = 0;
	if (!name)
		return -EINVAL;
	while (algs[i].alg != alg)
		i++;
	struct ca_crypt *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->refs = 1;
	c->alg = alg;
	c->nonce_size = algs[i].nonce_size;
	memcpy(c->key, key, CA_CRYPT_KEY_SIZE);
	c->aead = cipher_fetch(algs[i].evp);
	if (alg == CA_CRYPT_XCHACHA20_POLY1305)
		c->chacha = cipher_fetch("ChaCha20");
	if (!c->aead || (alg == CA_CRYPT_XCHACHA20_POLY1305 && !c->chacha)) {
		ca_crypt_unref(c);
		return -ENOSYS;
	}
	SHA256(key, CA_CRYPT_KEY_SIZE, h);
	snprintf(c->key_id, sizeof(c->key_id), "%02x%02x%02x%02x", h[0], h[1], h[2], h[3]);
	snprintf(c->suffix, sizeof(c->suffix), ".cacnk.%s-%s", name, c->key_id);
	*ret = c;
	return 0;
}

struct ca_crypt *ca_crypt_ref(struct ca_crypt *c)
{
	if (c)
		__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
	return c;
}

void ca_crypt_unref(struct ca_crypt *c)
{
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	cipher_free(c->aead);
	cipher_free(c->chacha);
	explicit_bzero(c, sizeof(*c));
	free(c);
}

enum ca_crypt_alg ca_crypt_get_alg(const struct ca_crypt *c)
{
	return c->alg;
}

const char *ca_crypt_key_id(const struct ca_crypt *c)
{
	return c->key_id;
}

size_t ca_crypt_overhead(const struct ca_crypt *c)
{
	return c->nonce_size + CA_CRYPT_TAG_SIZE;
}

const char *ca_crypt_chunk_suffix(const struct ca_crypt *c)
{
	return c ? c->suffix : ".cacnk";
}

size_t ca_crypt_chunk_rel(const struct ca_crypt *c, const uint8_t id[CA_CHUNK_ID_SIZE],
                          char out[CA_CRYPT_CHUNK_REL_MAX + 1])
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	ca_id_to_hex(id, hex);
	return (size_t)snprintf(out, CA_CRYPT_CHUNK_REL_MAX + 1, "%.4s/%s%s", hex, hex, ca_crypt_chunk_suffix(c));
}

/* ---- HChaCha20 ---- */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* One ChaCha20 block of OpenSSL's: its 16-byte IV is the state's words
 * 12-15 (the block counter and the 96-bit nonce), which HChaCha20 fills
 * with its 128-bit nonce. Keystream = permuted state + input state. */
static int hchacha20(const EVP_CIPHER *chacha, const uint8_t key[CA_CRYPT_KEY_SIZE], const uint8_t nonce[16],
                     uint8_t out[32])
{
	static const uint32_t sigma[4] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 }; /* "expand 32-byte k" */
	uint8_t zero[64] = { 0 }, block[64];
	int len = 0, r = -EIO;
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	if (ctx && EVP_EncryptInit_ex(ctx, chacha, NULL, key, nonce) == 1 &&
	    EVP_EncryptUpdate(ctx, block, &len, zero, sizeof(zero)) == 1 && len == 64) {
		for (int i = 0; i < 4; i++) {
			put_le32(out + 4 * i, le32(block + 4 * i) - sigma[i]);
			put_le32(out + 16 + 4 * i, le32(block + 48 + 4 * i) - le32(nonce + 4 * i));
		}
		r = 0;
	}
	explicit_bzero(block, sizeof(block));
	EVP_CIPHER_CTX_free(ctx);
	return r;
}

int ca_crypt_hchacha20(const uint8_t key[CA_CRYPT_KEY_SIZE], const uint8_t nonce[16], uint8_t out[32])
{
	EVP_CIPHER *chacha = cipher_fetch("ChaCha20");
	int r = chacha ? hchacha20(chacha, key, nonce, out) : -ENOSYS;
	cipher_free(chacha);
	return r;
}

/* ---- sealing ---- */

/* The AEAD's key and 12-byte IV for a stored nonce: as they are for
 * AES-256-GCM; XChaCha20's subkey and 0^4 || nonce[16..24). */
static int aead_params(const struct ca_crypt *c, const uint8_t *nonce, uint8_t key[CA_CRYPT_KEY_SIZE], uint8_t iv[12])
{
	if (c->alg != CA_CRYPT_XCHACHA20_POLY1305) {
		memcpy(key, c->key, CA_CRYPT_KEY_SIZE);
		memcpy(iv, nonce, 12);
		return 0;
	}
	memset(iv, 0, 4);
	memcpy(iv + 4, nonce + 16, 8);
	return hchacha20(c->chacha, c->key, nonce, key);
}

/* Run the AEAD over n bytes of p into out (room for n), with aad; enc:
 * tag is written, else checked. 0, -EBADMSG (does not authenticate), -EIO. */
static int aead_run(const struct ca_crypt *c, bool enc, const uint8_t *nonce, const void *aad, size_t aad_n,
                    const void *p, size_t n, uint8_t *out, uint8_t tag[CA_CRYPT_TAG_SIZE])
{
	uint8_t key[CA_CRYPT_KEY_SIZE], iv[12];
	int len = 0, fin = 0, r = -EIO;
	EVP_CIPHER_CTX *ctx = NULL;
	if (n > INT_MAX || aad_n > INT_MAX || aead_params(c, nonce, key, iv) < 0)
		goto out;
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx || EVP_CipherInit_ex(ctx, c->aead, NULL, key, iv, enc) != 1)
		goto out;
	if (aad_n && EVP_CipherUpdate(ctx, NULL, &len, aad, (int)aad_n) != 1)
		goto out;
	if (n && EVP_CipherUpdate(ctx, out, &len, p, (int)n) != 1)
		goto out;
	if (!enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, CA_CRYPT_TAG_SIZE, tag) != 1)
		goto out;
	if (EVP_CipherFinal_ex(ctx, out + len, &fin) != 1) {
		r = enc ? -EIO : -EBADMSG;
		goto out;
	}
	if (enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, CA_CRYPT_TAG_SIZE, tag) != 1)
		goto out;
	r = 0;
out:
	if (r == -EIO)
		ca_log_debug("%s: OpenSSL failed", ca_crypt_alg_name(c->alg));
	explicit_bzero(key, sizeof(key));
	EVP_CIPHER_CTX_free(ctx);
	return r;
}

int ca_crypt_seal_with(const struct ca_crypt *c, const uint8_t *nonce, const void *aad, size_t aad_n, const void *p,
                       size_t n, struct ca_buf *out)
{
	size_t total = c->nonce_size + n + CA_CRYPT_TAG_SIZE;
	out->size = 0;
	int r = ca_buf_reserve(out, total, SIZE_MAX);
	if (r < 0)
		return r;
	memcpy(out->data, nonce, c->nonce_size);
	r = aead_run(c, true, nonce, aad, aad_n, p, n, out->data + c->nonce_size, out->data + c->nonce_size + n);
	if (r == 0)
		out->size = total;
	return r;
}

int ca_crypt_seal(const struct ca_crypt *c, const void *p, size_t n, struct ca_buf *out)
{
	uint8_t nonce[CA_CRYPT_NONCE_MAX];
	/* random per chunk, as desync: 192 bits never repeat; 96 bits (GCM)
	 * stay safe up to about 2^32 chunks per key (docs say so) */
	if (getrandom(nonce, c->nonce_size, 0) != (ssize_t)c->nonce_size)
		return ca_log_debug_errno(-EIO, "getrandom");
	return ca_crypt_seal_with(c, nonce, NULL, 0, p, n, out);
}

int ca_crypt_open(const struct ca_crypt *c, const void *p, size_t n, struct ca_buf *out)
{
	const uint8_t *in = p;
	uint8_t tag[CA_CRYPT_TAG_SIZE];
	out->size = 0;
	if (n < c->nonce_size + CA_CRYPT_TAG_SIZE)
		return -EBADMSG;
	size_t m = n - c->nonce_size - CA_CRYPT_TAG_SIZE;
	int r = ca_buf_reserve(out, m ? m : 1, SIZE_MAX);
	if (r < 0)
		return r;
	memcpy(tag, in + n - CA_CRYPT_TAG_SIZE, CA_CRYPT_TAG_SIZE);
	r = aead_run(c, false, in, NULL, 0, in + c->nonce_size, m, out->data, tag);
	if (r == 0)
		out->size = m;
	else
		explicit_bzero(out->data, m); /* unauthenticated bytes are never handed out */
	return r;
}
