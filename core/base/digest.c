/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* digest.c - SHA-256 and SHA-512/256 through OpenSSL EVP. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include "base/digest.h"
#include "base/log.h"

struct ca_digest {
	enum ca_digest_type type;
	const EVP_MD *md;
	EVP_MD_CTX *ctx;
};

static int ossl_fail(const char *what)
{
	char msg[256];
	ERR_error_string_n(ERR_get_error(), msg, sizeof(msg));
	return ca_log_error_errno(-EIO, "%s: %s", what, msg);
}

int ca_digest_new(enum ca_digest_type type, struct ca_digest **ret)
{
	struct ca_digest *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->type = type;
	d->md = type == CA_DIGEST_SHA256 ? EVP_sha256() : EVP_sha512_256();
	d->ctx = EVP_MD_CTX_new();
	if (!d->md || !d->ctx) {
		ca_digest_free(d);
		return ossl_fail("digest");
	}
	int r = ca_digest_reset(d);
	if (r < 0) {
		ca_digest_free(d);
		return r;
	}
	*ret = d;
	return 0;
}

void ca_digest_free(struct ca_digest *d)
{
	if (!d)
		return;
	EVP_MD_CTX_free(d->ctx);
	free(d);
}

int ca_digest_reset(struct ca_digest *d)
{
	if (EVP_DigestInit_ex(d->ctx, d->md, NULL) != 1)
		return ossl_fail("digest init");
	return 0;
}

int ca_digest_update(struct ca_digest *d, const void *p, size_t n)
{
	if (n && EVP_DigestUpdate(d->ctx, p, n) != 1)
		return ossl_fail("digest update");
	return 0;
}

int ca_digest_final(struct ca_digest *d, uint8_t out[CA_DIGEST_SIZE])
{
	unsigned len = 0;
	if (EVP_DigestFinal_ex(d->ctx, out, &len) != 1 || len != CA_DIGEST_SIZE)
		return ossl_fail("digest final");
	return ca_digest_reset(d);
}

int ca_digest_once(struct ca_digest *d, const void *p, size_t n, uint8_t out[CA_DIGEST_SIZE])
{
	int r = ca_digest_update(d, p, n);
	if (r < 0)
		return r;
	return ca_digest_final(d, out);
}

int ca_digest_many(struct ca_digest *d, const struct ca_sha512mb_msg *msgs, size_t n)
{
	int r = 0;
	if (d->type == CA_DIGEST_SHA512_256 && n > 1)
		return ca_sha512mb_hash(CA_SHA512MB_AUTO, false, msgs, n);
	for (size_t i = 0; i < n && r == 0; i++)
		r = ca_digest_once(d, msgs[i].data, msgs[i].size, msgs[i].out);
	return r;
}

enum ca_digest_type ca_digest_get_type(const struct ca_digest *d)
{
	return d->type;
}

const char *ca_digest_type_name(enum ca_digest_type type)
{
	return type == CA_DIGEST_SHA256 ? "sha256" : "sha512-256";
}

int ca_digest_type_parse(const char *s, enum ca_digest_type *ret)
{
	if (!strcmp(s, "sha256")) {
		*ret = CA_DIGEST_SHA256;
		return 0;
	}
	if (!strcmp(s, "sha512-256") || !strcmp(s, "sha512/256") || !strcmp(s, "sha512_256") ||
	    !strcmp(s, "default")) {
		*ret = CA_DIGEST_SHA512_256;
		return 0;
	}
	return -EINVAL;
}

void ca_id_to_hex(const uint8_t id[CA_DIGEST_SIZE], char out[2 * CA_DIGEST_SIZE + 1])
{
	static const char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < CA_DIGEST_SIZE; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * CA_DIGEST_SIZE] = 0;
}

int ca_unhex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int ca_id_from_hex(const char *s, uint8_t id[CA_DIGEST_SIZE])
{
	for (unsigned i = 0; i < CA_DIGEST_SIZE; i++) {
		int a = ca_unhex_digit(s[2 * i]), b = a < 0 ? -1 : ca_unhex_digit(s[2 * i + 1]);
		if (a < 0 || b < 0)
			return -EINVAL;
		id[i] = (uint8_t)(a << 4 | b);
	}
	return s[2 * CA_DIGEST_SIZE] ? -EINVAL : 0;
}
