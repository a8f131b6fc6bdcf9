/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-crypt.c - encrypted chunk stores (crypt.h): known answers for
 * HChaCha20 and XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha-03, 2.2.1 and
 * A.3.1), ChaCha20-Poly1305 (RFC 8439 2.8.2) and AES-256-GCM (McGrew and
 * Viega's test case 16); seal/open round trips, a flipped byte, a wrong
 * key, key ids and chunk names, key parsing and key files; an encrypted
 * local store (store.h): put/get, names, walk, verify and gc seeing only
 * its key's chunks, a flipped byte corrupt, a private store refused.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "chunk/compress.h"
#include "format/idset.h"
#include "store/crypt.h"
#include "store/store.h"
#include "store/store_gc.h"
#include "store/store_verify.h"
#include "tap.h"

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = strlen(h) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
	return n;
}

static void to_hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = 0;
}

static const char sunscreen[] = "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
                                "future, sunscreen would be it.";

static void test_hchacha20(void)
{
	uint8_t key[32], nonce[16], out[32];
	char hex[65];
	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	unhex("000000090000004a0000000031415927", nonce);
	check_int(ca_crypt_hchacha20(key, nonce, out), ==, 0);
	to_hex(out, 32, hex);
	check_str(hex, "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc");
}

/* seal sunscreen with key 80..9f, the nonce and AAD given; expect hex */
static void known_aead(enum ca_crypt_alg alg, const char *nonce_hex, const char *aad_hex, const char *key_hex,
                       const char *pt_hex, const char *expect)
{
	uint8_t key[32], nonce[24], aad[64], pt[256];
	struct ca_crypt *c = NULL;
	struct ca_buf out = CA_BUF_INIT, back = CA_BUF_INIT;
	char *hex = malloc(2 * 512 + 1);
	size_t pn;
	if (key_hex)
		unhex(key_hex, key);
	else
		for (int i = 0; i < 32; i++)
			key[i] = (uint8_t)(0x80 + i);
	size_t nn = unhex(nonce_hex, nonce), an = unhex(aad_hex, aad);
	if (pt_hex)
		pn = unhex(pt_hex, pt);
	else {
		pn = strlen(sunscreen);
		memcpy(pt, sunscreen, pn);
	}
	check_int(ca_crypt_new(alg, key, &c), ==, 0);
	if (!c || !hex)
		goto out;
	check_int(nn, ==, ca_crypt_overhead(c) - CA_CRYPT_TAG_SIZE);
	check_int(ca_crypt_seal_with(c, nonce, aad, an, pt, pn, &out), ==, 0);
	check_int(out.size, ==, nn + pn + 16);
	to_hex(out.data + nn, out.size - nn, hex);
	check_str(hex, expect);
	check(!memcmp(out.data, nonce, nn));
	if (an == 0) { /* the stored form (no AAD) opens again */
		check_int(ca_crypt_open(c, out.data, out.size, &back), ==, 0);
		check_int(back.size, ==, pn);
		check(back.data && !memcmp(back.data, pt, pn));
	}
out:
	free(hex);
	ca_buf_release(&out);
	ca_buf_release(&back);
	ca_crypt_unref(c);
}

static void test_vectors(void)
{
	known_aead(CA_CRYPT_XCHACHA20_POLY1305, "404142434445464748494a4b4c4d4e4f5051525354555657",
	           "50515253c0c1c2c3c4c5c6c7", NULL, NULL,
	           "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a82f4eda7e39ae"
	           "64c6708c54c216cb96b72e1213b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff921f9"
	           "664c97637da9768812f615c68b13b52ec0875924c1c7987947deafd8780acf49");
	/* (the XChaCha20 answer above runs OpenSSL's ChaCha20-Poly1305 on the
	 * HChaCha20 subkey); AES-256-GCM: test case 16, 60 bytes with AAD */
	known_aead(CA_CRYPT_AES_256_GCM, "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
	           "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
	           "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b1"
	           "6aedf5aa0de657ba637b39",
	           "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5"
	           "f61e6393ba7a0abcc9f66276fc6ece0f4e1768cddf8853bb2d551b");
}

static void test_round_trip(enum ca_crypt_alg alg)
{
	uint8_t key[32], key2[32];
	struct ca_crypt *c = NULL, *other = NULL;
	struct ca_buf a = CA_BUF_INIT, b = CA_BUF_INIT, back = CA_BUF_INIT;
	size_t n = 100000;
	uint8_t *p = malloc(n);
	memset(key, 7, sizeof(key));
	memset(key2, 8, sizeof(key2));
	for (size_t i = 0; p && i < n; i++)
		p[i] = (uint8_t)(i * 31 + (i >> 8));
	check_int(ca_crypt_new(alg, key, &c), ==, 0);
	check_int(ca_crypt_new(alg, key2, &other), ==, 0);
	if (!c || !other || !p)
		goto out;
	check_int(ca_crypt_seal(c, p, n, &a), ==, 0);
	check_int(ca_crypt_seal(c, p, n, &b), ==, 0);
	check_int(a.size, ==, n + ca_crypt_overhead(c));
	check(memcmp(a.data, b.data, a.size) != 0); /* a fresh nonce each time */
	check_int(ca_crypt_open(c, a.data, a.size, &back), ==, 0);
	check(back.size == n && !memcmp(back.data, p, n));
	check_int(ca_crypt_open(other, a.data, a.size, &back), ==, -EBADMSG);
	a.data[a.size / 2] ^= 1;
	check_int(ca_crypt_open(c, a.data, a.size, &back), ==, -EBADMSG);
	check_int(ca_crypt_open(c, a.data, ca_crypt_overhead(c) - 1, &back), ==, -EBADMSG);
	/* an empty chunk file content still seals and opens */
	check_int(ca_crypt_seal(c, "", 0, &a), ==, 0);
	check_int(ca_crypt_open(c, a.data, a.size, &back), ==, 0);
	check_int(back.size, ==, 0);
out:
	free(p);
	ca_buf_release(&a);
	ca_buf_release(&b);
	ca_buf_release(&back);
	ca_crypt_unref(c);
	ca_crypt_unref(other);
}

static void test_names(void)
{
	uint8_t key[32], id[CA_CHUNK_ID_SIZE];
	struct ca_crypt *c = NULL;
	char rel[CA_CRYPT_CHUNK_REL_MAX + 1];
	enum ca_crypt_alg alg;
	/* desync's README example key and its id (SHA-256's first 4 bytes) */
	check_int(ca_crypt_key_parse_hex("d69371915dbc4b1f0ec55e2a80f0e089accf4b32e0f8dc0e29fed7f0f30d1b26", key), ==, 0);
	check_int(ca_crypt_key_parse_hex("D69371915DBC4B1F0EC55E2A80F0E089ACCF4B32E0F8DC0E29FED7F0F30D1B26", key), ==, 0);
	check_int(ca_crypt_key_parse_hex("d69371915dbc4b1f0ec55e2a80f0e089accf4b32e0f8dc0e29fed7f0f30d1b2", key), ==, -EINVAL);
	check_int(ca_crypt_key_parse_hex("g69371915dbc4b1f0ec55e2a80f0e089accf4b32e0f8dc0e29fed7f0f30d1b26", key), ==, -EINVAL);
	check_int(ca_crypt_alg_parse("aes-256-gcm", &alg), ==, 0);
	check_int(alg, ==, CA_CRYPT_AES_256_GCM);
	check_int(ca_crypt_alg_parse("xchacha20-poly1305", &alg), ==, 0);
	check_int(alg, ==, CA_CRYPT_XCHACHA20_POLY1305);
	check_int(ca_crypt_alg_parse("chacha20", &alg), ==, -EINVAL);
	check_int(ca_crypt_key_parse_hex("d69371915dbc4b1f0ec55e2a80f0e089accf4b32e0f8dc0e29fed7f0f30d1b26", key), ==, 0);
	check_int(ca_crypt_new(CA_CRYPT_XCHACHA20_POLY1305, key, &c), ==, 0);
	if (!c)
		return;
	for (int i = 0; i < CA_CHUNK_ID_SIZE; i++)
		id[i] = (uint8_t)(0xf0 + (i & 15));
	check_int(ca_crypt_chunk_rel(NULL, id, rel), ==, 4 + 1 + 64 + 6);
	check_str(rel, "f0f1/f0f1f2f3f4f5f6f7f8f9fafbfcfdfefff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff.cacnk");
	check_int(ca_crypt_chunk_rel(c, id, rel), ==, CA_CRYPT_CHUNK_REL_MAX);
	char want[CA_CRYPT_CHUNK_REL_MAX + 1];
	snprintf(want, sizeof(want), "f0f1/f0f1f2f3f4f5f6f7f8f9fafbfcfdfefff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
	                             ".cacnk.xchacha20-poly1305-%s", ca_crypt_key_id(c));
	check_str(rel, want);
	/* SHA-256 of that key begins 511a735b (python3 hashlib) */
	check_str(ca_crypt_key_id(c), "511a735b");
	check_str(ca_crypt_chunk_suffix(c), ".cacnk.xchacha20-poly1305-511a735b");
	check_str(ca_crypt_chunk_suffix(NULL), ".cacnk");
	ca_crypt_unref(c);
}

static void test_key_file(void)
{
	char dir[] = "/tmp/test-crypt-XXXXXX", path[64], why[CA_CRYPT_WHY_MAX];
	uint8_t key[32], raw[32];
	const char *hex = "d69371915dbc4b1f0ec55e2a80f0e089accf4b32e0f8dc0e29fed7f0f30d1b26\n";
	if (!mkdtemp(dir)) {
		tap_skip("key files", "no temporary directory");
		return;
	}
	snprintf(path, sizeof(path), "%s/key", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	check(fd >= 0 && write(fd, hex, strlen(hex)) == (ssize_t)strlen(hex));
	close(fd);
	check_int(ca_crypt_key_read_file(path, key, why), ==, 0);
	check_int(ca_crypt_key_parse_hex("d69371915dbc4b1f0ec55e2a80f0e089accf4b32e0f8dc0e29fed7f0f30d1b26", raw), ==, 0);
	check(!memcmp(key, raw, 32));
	/* readable by others: refused, and why says so */
	chmod(path, 0640);
	check_int(ca_crypt_key_read_file(path, key, why), ==, -EPERM);
	check(strstr(why, "readable by group or others") != NULL);
	chmod(path, 0600);
	/* 32 raw bytes */
	fd = open(path, O_WRONLY | O_TRUNC);
	check(fd >= 0 && write(fd, raw, 32) == 32);
	close(fd);
	memset(key, 0, 32);
	check_int(ca_crypt_key_read_file(path, key, why), ==, 0);
	check(!memcmp(key, raw, 32));
	/* neither */
	fd = open(path, O_WRONLY | O_TRUNC);
	check(fd >= 0 && write(fd, "short\n", 6) == 6);
	close(fd);
	check_int(ca_crypt_key_read_file(path, key, why), ==, -EINVAL);
	check(strstr(why, "64 hex digits") != NULL && !strstr(why, "short"));
	check_int(ca_crypt_key_read_file(dir, key, why), ==, -EINVAL); /* a directory */
	unlink(path);
	check_int(ca_crypt_key_read_file(path, key, why), ==, -ENOENT);
	rmdir(dir);
}

static int count_entry(const struct ca_store_entry *e, void *userdata)
{
	if (e->kind == CA_STORE_CHUNK)
		++*(unsigned *)userdata;
	return 0;
}

static unsigned count_chunks(struct ca_store *st)
{
	unsigned n = 0;
	check_int(ca_store_walk(st, count_entry, &n), ==, 0);
	return n;
}

static void test_store(void)
{
	char dir[] = "/tmp/test-crypt-store-XXXXXX", path[256];
	uint8_t key[32], key2[32], id[3][CA_CHUNK_ID_SIZE];
	struct ca_crypt *c = NULL, *c2 = NULL;
	struct ca_store *st = NULL, *other = NULL, *plain = NULL, *priv = NULL;
	struct ca_codec *codec = NULL;
	struct ca_digest *dg = NULL;
	struct ca_buf z = CA_BUF_INIT, got = CA_BUF_INIT;
	struct ca_idset *keep = NULL;
	char data[3][5000];
	bool compressed;
	if (!mkdtemp(dir)) {
		tap_skip("an encrypted store", "no temporary directory");
		return;
	}
	memset(key, 1, sizeof(key));
	memset(key2, 2, sizeof(key2));
	check_int(ca_crypt_new(CA_CRYPT_XCHACHA20_POLY1305, key, &c), ==, 0);
	check_int(ca_crypt_new(CA_CRYPT_AES_256_GCM, key2, &c2), ==, 0);
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);
	check_int(ca_digest_new(CA_DIGEST_SHA512_256, &dg), ==, 0);
	snprintf(path, sizeof(path), "%s/s", dir);
	check_int(ca_store_open(path, &st), ==, 0);
	check_int(ca_store_open(path, &other), ==, 0);
	check_int(ca_store_open(path, &plain), ==, 0);
	if (!c || !c2 || !codec || !dg || !st || !other || !plain)
		goto out;
	check_int(ca_store_set_crypt(st, c), ==, 0);
	check_int(ca_store_set_crypt(st, c), ==, -EINVAL); /* once */
	check_int(ca_store_set_crypt(other, c2), ==, 0);
	check(ca_store_crypt(st) == c && ca_store_crypt(plain) == NULL);
	for (int i = 0; i < 3; i++) {
		for (size_t k = 0; k < sizeof(data[i]); k++)
			data[i][k] = (char)('a' + (k * (i + 3)) % 26);
		check_int(ca_digest_once(dg, data[i], sizeof(data[i]), id[i]), ==, 0);
		check_int(ca_codec_compress(codec, data[i], sizeof(data[i]), &z), ==, 0);
		/* two under c, one under c2, one plain: one directory, four names */
		struct ca_store *to = i == 2 ? other : st;
		check_int(ca_store_put_raw(to, id[i], z.data, z.size), ==, 1);
		if (i == 0)
			check_int(ca_store_put_raw(plain, id[i], z.data, z.size), ==, 1);
	}
	check_int(ca_store_has(st, id[0]), ==, 1);
	check_int(ca_store_has(st, id[2]), ==, 0); /* under the other key only */
	check_int(ca_store_has(other, id[2]), ==, 1);
	check_int(ca_store_get_raw(st, id[0], &got, &compressed), ==, 0);
	check_int(ca_codec_decode_chunk(codec, got.data, got.size, id[0], UINT64_MAX, &z), ==, 0);
	check(z.size == sizeof(data[0]) && !memcmp(z.data, data[0], z.size));
	check_int(ca_store_get_raw(st, id[2], &got, &compressed), ==, -ENOENT);
	check_int(count_chunks(st), ==, 2);
	check_int(count_chunks(other), ==, 1);
	check_int(count_chunks(plain), ==, 1);
	/* verify: all good, then a flipped byte is corrupt (and repair removes it) */
	struct ca_store_verify_opts vo = { .threads = 1, .any_digest = true };
	struct ca_store_verify_stats vs;
	check_int(ca_store_verify(st, &vo, &vs), ==, 0);
	check(vs.ok == 2 && vs.corrupt == 0);
	char rel[CA_CRYPT_CHUNK_REL_MAX + 1], file[512];
	ca_crypt_chunk_rel(c, id[1], rel);
	snprintf(file, sizeof(file), "%s/%s", path, rel);
	chmod(file, 0644);
	int fd = open(file, O_RDWR);
	char b;
	off_t mid = fd < 0 ? 0 : lseek(fd, 0, SEEK_END) / 2;
	check(fd >= 0 && pread(fd, &b, 1, mid) == 1);
	b ^= 4;
	check(fd >= 0 && pwrite(fd, &b, 1, mid) == 1);
	close(fd);
	check_int(ca_store_get_raw(st, id[1], &got, &compressed), ==, -EBADMSG);
	vo.repair = true;
	check_int(ca_store_verify(st, &vo, &vs), ==, 0);
	check(vs.ok == 1 && vs.corrupt == 1 && vs.removed == 1);
	/* gc keeping nothing: only this key's chunks go */
	check_int(ca_idset_new(16, &keep), ==, 0);
	struct ca_store_gc_opts go = { .keep = keep };
	struct ca_store_gc_stats gs;
	check_int(ca_store_gc(st, &go, &gs), ==, 0);
	check_int(count_chunks(st), ==, 0);
	check_int(count_chunks(other), ==, 1);
	check_int(count_chunks(plain), ==, 1);
	/* a private store (a cache) is never encrypted */
	snprintf(path, sizeof(path), "%s/cache", dir);
	check_int(ca_store_open_private(path, true, &priv), ==, 0);
	check_int(priv ? ca_store_set_crypt(priv, c) : -1, ==, -EINVAL);
out:
	ca_idset_free(keep);
	ca_store_free(st);
	ca_store_free(other);
	ca_store_free(plain);
	ca_store_free(priv);
	ca_crypt_unref(c);
	ca_crypt_unref(c2);
	ca_codec_free(codec);
	ca_digest_free(dg);
	ca_buf_release(&z);
	ca_buf_release(&got);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	check_int(system(cmd), ==, 0);
}

int main(void)
{
	test_hchacha20();
	test_vectors();
	test_round_trip(CA_CRYPT_XCHACHA20_POLY1305);
	test_round_trip(CA_CRYPT_AES_256_GCM);
	test_names();
	test_key_file();
	test_store();
	return tap_done();
}
