/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-digest.c - SHA-256 and SHA-512/256 known answers (FIPS 180-4
 * examples), the chunk ids of the reference blob (section 12), hex ids and
 * digest names.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunk/chunker.h"
#include "base/digest.h"
#include "format/feature.h"
#include "tap.h"
#include "testdata.h"

static void hex_of(struct ca_digest *d, const void *p, size_t n, char hex[65])
{
	uint8_t out[CA_CHUNK_ID_SIZE];
	memset(out, 0, sizeof(out));
	check_int(ca_digest_once(d, p, n, out), ==, 0);
	ca_id_to_hex(out, hex);
}

struct vector {
	const char *msg;
	const char *sha256, *sha512_256;
};

static const struct vector vectors[] = {
	{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	  "c672b8d1ef56ed28ab87c3622c5114069bdd3ad7b8f9737498d0c01ecef0967a" },
	{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	  "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23" },
	{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	  "bde8e1f9f19bb9fd3406c90ec6bc47bd36d8ada9f11880dbc8a22a7078b6a461" },
	{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
	  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
	  "3928e184fb8690f840da3988121d31be65cb9d3ef83ee6146feac861e19b563a" },
};

static void test_vectors(void)
{
	struct ca_digest *s256 = NULL, *s512 = NULL;
	char hex[65];
	check_int(ca_digest_new(CA_DIGEST_SHA256, &s256), ==, 0);
	check_int(ca_digest_new(CA_DIGEST_SHA512_256, &s512), ==, 0);
	if (!s256 || !s512)
		return;
	check_int(ca_digest_get_type(s256), ==, CA_DIGEST_SHA256);
	check_int(ca_digest_get_type(s512), ==, CA_DIGEST_SHA512_256);

	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct vector *v = &vectors[i];
		hex_of(s256, v->msg, strlen(v->msg), hex);
		check_str(hex, v->sha256);
		hex_of(s512, v->msg, strlen(v->msg), hex);
		check_str(hex, v->sha512_256);
	}

	/* one million 'a', fed in uneven pieces; final() resets for reuse */
	static const char *million_256 = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	static const char *million_512 = "9a59a052930187a97038cae692f30708aa6491923ef5194394dc68d56c74fb21";
	char *a = malloc(1000000);
	uint8_t out[CA_CHUNK_ID_SIZE];
	if (!a)
		abort();
	memset(a, 'a', 1000000);
	for (int k = 0; k < 2; k++) {
		struct ca_digest *d = k ? s512 : s256;
		size_t pos = 0, step = 1;
		check_int(ca_digest_update(d, "garbage before reset", 20), ==, 0);
		check_int(ca_digest_reset(d), ==, 0);
		while (pos < 1000000) {
			size_t n = step < 1000000 - pos ? step : 1000000 - pos;
			check_int(ca_digest_update(d, a + pos, n), ==, 0);
			pos += n;
			step = step * 3 + 1;
		}
		check_int(ca_digest_final(d, out), ==, 0);
		ca_id_to_hex(out, hex);
		check_str(hex, k ? million_512 : million_256);
		/* reset by final: the next final is the empty message */
		check_int(ca_digest_final(d, out), ==, 0);
		ca_id_to_hex(out, hex);
		check_str(hex, k ? vectors[0].sha512_256 : vectors[0].sha256);
	}
	free(a);
	ca_digest_free(s256);
	ca_digest_free(s512);
	ca_digest_free(NULL);
}

/* reference section 12: chunk ids and stream digest of the xorshift blob */
static void test_reference_blob(void)
{
	uint8_t *blob = testdata_blob();
	struct ca_digest *d = NULL;
	struct ca_chunker c;
	char hex[65];
	check_int(ca_digest_new(CA_DIGEST_SHA512_256, &d), ==, 0);
	if (!d)
		return;

	hex_of(d, blob, TESTDATA_BLOB_SIZE, hex);
	check_str(hex, "e90e4498fe5d40c9325f3c1b0fd9be85845cb415636e9c6b27051493a145563e");
	hex_of(d, blob, 146476, hex);
	check_str(hex, "c3b9478cb8804fb6024305191288948b07c9307b26d0f65db45d068a9637344c");

	/* the last chunk: find its start with the chunker */
	size_t pos = 0, last = 0;
	check_int(ca_chunker_init(&c, 16384, 65536, 262144), ==, 0);
	while (pos < TESTDATA_BLOB_SIZE) {
		size_t k = ca_chunker_scan(&c, blob + pos, TESTDATA_BLOB_SIZE - pos);
		if (k == CA_CHUNKER_NO_CUT)
			break;
		pos += k;
		if (pos < TESTDATA_BLOB_SIZE)
			last = pos;
	}
	hex_of(d, blob + last, TESTDATA_BLOB_SIZE - last, hex);
	check_str(hex, "6115732e9080e61b79640f822fdf23642910c8cf1641831f79e5ab2fddb9d5ff");
	ca_digest_free(d);

	/* sha256 of the blob begins 83adb9aa and ends 0cde0d (reference) */
	check_int(ca_digest_new(CA_DIGEST_SHA256, &d), ==, 0);
	if (d) {
		hex_of(d, blob, TESTDATA_BLOB_SIZE, hex);
		check(!strncmp(hex, "83adb9aa", 8) && !strcmp(hex + 58, "0cde0d"));
		ca_digest_free(d);
	}
	free(blob);
}

static void test_hex(void)
{
	uint8_t id[CA_CHUNK_ID_SIZE], back[CA_CHUNK_ID_SIZE];
	char hex[65];
	for (unsigned i = 0; i < CA_CHUNK_ID_SIZE; i++)
		id[i] = (uint8_t)(i * 37 + 5);
	ca_id_to_hex(id, hex);
	check_int(strlen(hex), ==, 64);
	check_int(ca_id_from_hex(hex, back), ==, 0);
	check(!memcmp(id, back, sizeof(id)));

	const char *lower = "4183cb0672bf48fab3defb258f44b644c885a5ed367452fd0afd9f30b036602e";
	const char *upper = "4183CB0672BF48FAB3DEFB258F44B644C885A5ED367452FD0AFD9F30B036602E";
	check_int(ca_id_from_hex(upper, back), ==, 0);
	ca_id_to_hex(back, hex);
	check_str(hex, lower);
	check_int(back[0], ==, 0x41);
	check_int(back[31], ==, 0x2e);

	char bad[80];
	check_int(ca_id_from_hex("", back), ==, -EINVAL);
	check_int(ca_id_from_hex("4183", back), ==, -EINVAL);
	snprintf(bad, sizeof(bad), "%.63s", lower); /* 63 chars */
	check_int(ca_id_from_hex(bad, back), ==, -EINVAL);
	snprintf(bad, sizeof(bad), "%s0", lower); /* 65 chars */
	check_int(ca_id_from_hex(bad, back), ==, -EINVAL);
	snprintf(bad, sizeof(bad), "%s.cacnk", lower);
	check_int(ca_id_from_hex(bad, back), ==, -EINVAL);
	snprintf(bad, sizeof(bad), "%s", lower);
	bad[10] = 'g';
	check_int(ca_id_from_hex(bad, back), ==, -EINVAL);
	bad[10] = ' ';
	check_int(ca_id_from_hex(bad, back), ==, -EINVAL);
}

static void test_names(void)
{
	enum ca_digest_type t = CA_DIGEST_SHA256;
	check_str(ca_digest_type_name(CA_DIGEST_SHA256), "sha256");
	check_str(ca_digest_type_name(CA_DIGEST_SHA512_256), "sha512-256");
	static const char *good512[] = { "sha512-256", "sha512/256", "sha512_256", "default" };
	for (size_t i = 0; i < 4; i++) {
		t = CA_DIGEST_SHA256;
		check_int(ca_digest_type_parse(good512[i], &t), ==, 0);
		check_int(t, ==, CA_DIGEST_SHA512_256);
	}
	check_int(ca_digest_type_parse("sha256", &t), ==, 0);
	check_int(t, ==, CA_DIGEST_SHA256);
	static const char *bad[] = { "", "md5", "sha512", "sha-256", "sha256 ", "sha1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_int(ca_digest_type_parse(bad[i], &t), ==, -EINVAL);

	check_int(ca_digest_type_from_flags(CA_FORMAT_BLOB_DEFAULT), ==, CA_DIGEST_SHA512_256);
	check_int(ca_digest_type_from_flags(UINT64_C(0x9000000000000000)), ==, CA_DIGEST_SHA256);
}

int main(void)
{
	test_vectors();
	test_reference_blob();
	test_hex();
	test_names();
	return tap_done();
}
