/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-minisign.c - minisign key and signature files: files the real
 * minisign 0.11 wrote (kept below as text) parse and verify, in both the
 * prehashed ("ED") and the legacy ("Ed") form; every way of damaging a
 * file is refused by the parser (-EBADMSG) or by the check (a changed
 * message, trusted comment or key id); and the trust helpers name
 * signatures and key ids as minisign does.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trust/minisign.h"
#include "tap.h"
#include "trust/trust.h"

/* minisign -G -W; minisign -S [-l] -t 'cafs test' -m msg */
static const char MSG[] = "cafs signed message\n";
static const char PUB[] = "untrusted comment: minisign public key 77CB248299E035AB\n"
                          "RWSrNeCZgiTLd6tSgyzoZHGZSIO7b5ypzPQqNIV+RbU7DLQ/8KSNqODm\n";
static const char PUB_OTHER[] = "untrusted comment: minisign public key 7C7FFDF77F3ED56C\n"
                                "RWRs1T5/9/1/fLOUHTKANKxH6csoH/+PguUrwkX3FjAZ6V9eScL/WOZv\n";
static const char SIG_HASHED[] =
	"untrusted comment: signature from minisign secret key\n"
	"RUSrNeCZgiTLd22nWWiI78e9hPyuMaMGhCPJ95Q8rCWOrmEq4dPBfVyam04s/YOGQkPERZl6Hc1DlUOhcvmhexlxj15FvPws1gk=\n"
	"trusted comment: cafs test\n"
	"D1fOmiOn1Qo48boaWjV2NspLfyV3px27cDGBw0puV0s3Co3kTlXci1MSZt++5ghAUTZ1IxFPnITffJ/kBueLDQ==\n";
static const char SIG_LEGACY[] =
	"untrusted comment: signature from minisign secret key\n"
	"RWSrNeCZgiTLdy/zfcoThN2ng2GTgBH1h5wOXiSFHezeEh8ILIEj4R2eaToU31JJYxzOhZlp39LZ/oO/Zddd6B9Wm12g7S+UCg0=\n"
	"trusted comment: cafs test\n"
	"sfjN10DCut5C6CT9UnrcD/wgzs/4HRigbzf1u6KMTEMd9YMFIsJVYfhVQuF1uceRbDQCT+kPZaOKbuvITY40CA==\n";

/* the secret half of PUB, as `minisign -G -W` wrote it (a test key) */
static const char SEC[] =
	"untrusted comment: minisign encrypted secret key\n"
	"RWQAAEIyAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAqzXgmYIky3c82eOcyG3uP8o2JNHetFZonjAAJQCx0lmi"
	"pYoEhrI3ZKtSgyzoZHGZSIO7b5ypzPQqNIV+RbU7DLQ/8KSNqODmAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";

static int parse_sig_str(const char *s, struct ca_minisign_sig *sig)
{
	return ca_minisign_sig_parse(s, strlen(s), sig);
}

/* s with the first occurrence of from replaced by to (static buffer) */
static const char *edit(const char *s, const char *from, const char *to)
{
	static char buf[16384];
	const char *at = strstr(s, from);
	if (!at)
		return "";
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
	return buf;
}

static void test_good(void)
{
	struct ca_minisign_key k, other;
	struct ca_minisign_sig *sig = malloc(sizeof(*sig));
	char hex[17];
	check_int(ca_minisign_key_parse(PUB, strlen(PUB), &k), ==, 0);
	check_int(ca_minisign_key_parse(PUB_OTHER, strlen(PUB_OTHER), &other), ==, 0);
	ca_minisign_key_id_hex(k.id, hex);
	check_str(hex, "77CB248299E035AB"); /* as minisign's comment says */

	check_int(parse_sig_str(SIG_HASHED, sig), ==, 0);
	check(sig->prehashed);
	check_str(sig->trusted_comment, "cafs test");
	check_int(ca_minisign_verify(&k, sig, MSG, strlen(MSG)), ==, 0);
	check_int(ca_minisign_verify(&k, sig, MSG, strlen(MSG) - 1), ==, -EKEYREJECTED);
	check_int(ca_minisign_verify(&other, sig, MSG, strlen(MSG)), ==, -ENOKEY);
	/* the other key's bytes under this key's id: the signature does not verify */
	memcpy(other.id, k.id, sizeof(k.id));
	check_int(ca_minisign_verify(&other, sig, MSG, strlen(MSG)), ==, -EKEYREJECTED);

	/* a trusted comment changed without the key: the global signature fails */
	check_int(parse_sig_str(edit(SIG_HASHED, "cafs test", "cafs tesT"), sig), ==, 0);
	check_int(ca_minisign_verify(&k, sig, MSG, strlen(MSG)), ==, -EBADE);
	/* a key id changed in the signature: not this key's */
	check_int(parse_sig_str(SIG_HASHED, sig), ==, 0);
	sig->key_id[0] ^= 1;
	check_int(ca_minisign_verify(&k, sig, MSG, strlen(MSG)), ==, -ENOKEY);

	check_int(parse_sig_str(SIG_LEGACY, sig), ==, 0);
	check(!sig->prehashed);
	check_int(ca_minisign_verify(&k, sig, MSG, strlen(MSG)), ==, 0);
	check_int(ca_minisign_verify(&k, sig, "x", 1), ==, -EKEYREJECTED);
	check_int(ca_minisign_verify(&k, sig, NULL, 0), ==, -EKEYREJECTED);

	/* CRLF line ends (minisign strips one CR) and a missing last newline */
	char crlf[4096];
	size_t o = 0;
	for (const char *p = SIG_LEGACY; *p; p++) {
		if (*p == '\n')
			crlf[o++] = '\r';
		crlf[o++] = *p;
	}
	crlf[o] = 0;
	check_int(parse_sig_str(crlf, sig), ==, 0);
	check_int(ca_minisign_verify(&k, sig, MSG, strlen(MSG)), ==, 0);
	check_int(ca_minisign_sig_parse(SIG_LEGACY, strlen(SIG_LEGACY) - 1, sig), ==, 0);
	check_int(ca_minisign_key_parse(PUB, strlen(PUB) - 1, &k), ==, 0);
	free(sig);
}

static void test_bad_files(void)
{
	struct ca_minisign_key k;
	struct ca_minisign_sig *sig = malloc(sizeof(*sig));
	char big[CA_MINISIGN_SIG_FILE_MAX + 64];

	/* every truncation of both files but the last newline's: the count of
	 * those taken is one check, so a regression shows as a number */
	size_t taken = 0;
	for (size_t n = 0; n + 1 < strlen(SIG_HASHED); n++)
		taken += ca_minisign_sig_parse(SIG_HASHED, n, sig) != -EBADMSG;
	check_int((int)taken, ==, 0);
	taken = 0;
	for (size_t n = 0; n + 1 < strlen(PUB); n++)
		taken += ca_minisign_key_parse(PUB, n, &k) != -EBADMSG;
	check_int((int)taken, ==, 0);

	/* the key and the signature taken for each other */
	check_int(ca_minisign_key_parse(SIG_HASHED, strlen(SIG_HASHED), &k), ==, -EBADMSG);
	check_int(parse_sig_str(PUB, sig), ==, -EBADMSG);
	/* garbage, NULs, lines missing or added */
	check_int(parse_sig_str("hello\nworld\n", sig), ==, -EBADMSG);
	check_int(ca_minisign_sig_parse("untrusted comment: \0x\n", 22, sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "untrusted comment: ", "comment: "), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "trusted comment: cafs", "trusted: cafs"), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "trusted comment: cafs test\n", ""), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "==\n", "==\nmore\n"), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "==\n", "==\n\n"), sig), ==, -EBADMSG);
	check_int(ca_minisign_key_parse(PUB, strlen(PUB), &k), ==, 0);
	/* base64: a bad symbol, padding missing, non-canonical last symbol, a space */
	check_int(parse_sig_str(edit(SIG_HASHED, "RUSrNe", "RUS!Ne"), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "1gk=", "1gk"), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "1gk=", "1gl="), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "LDQ==", "LDR=="), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "RUSrNe", "RUSr Ne"), sig), ==, -EBADMSG);
	check_int(ca_minisign_key_parse(edit(PUB, "RWSr", "RWSr="), strlen(PUB) + 1, &k), ==, -EBADMSG);
	/* an algorithm other than Ed/ED: "RU" -> "Rk" is "FD..." */
	check_int(parse_sig_str(edit(SIG_HASHED, "RUSrNe", "RkSrNe"), sig), ==, -EBADMSG);
	check_int(ca_minisign_key_parse(edit(PUB, "RWSr", "RUSr"), strlen(PUB), &k), ==, -EBADMSG); /* "ED" key */
	/* a CR inside a line; control characters or bad UTF-8 in the trusted comment */
	check_int(parse_sig_str(edit(SIG_HASHED, "cafs test", "cafs\rtest"), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "cafs test", "cafs\033[2Jtest"), sig), ==, -EBADMSG);
	check_int(parse_sig_str(edit(SIG_HASHED, "cafs test", "cafs \xc2\x9b test"), sig), ==, -EBADMSG); /* C1 CSI */
	check_int(parse_sig_str(edit(SIG_HASHED, "cafs test", "cafs \xc0\xaf"), sig), ==, -EBADMSG);      /* overlong */
	check_int(parse_sig_str(edit(SIG_HASHED, "cafs test", "cafs \xe2\x82"), sig), ==, -EBADMSG);      /* cut */
	check_int(parse_sig_str(edit(SIG_HASHED, "cafs test", "caf\xc3\xa9\ttest"), sig), ==, 0);         /* é, tab */
	/* sizes: a trusted comment over minisign's limit; a file over ours */
	memset(big, 'a', CA_MINISIGN_TRUSTED_COMMENT_MAX);
	big[CA_MINISIGN_TRUSTED_COMMENT_MAX] = 0;
	check_int(parse_sig_str(edit(SIG_HASHED, "cafs test", big), sig), ==, -EBADMSG);
	big[CA_MINISIGN_TRUSTED_COMMENT_MAX - 2 - strlen("trusted comment: ")] = 0;
	check_int(parse_sig_str(edit(SIG_HASHED, "cafs test", big), sig), ==, 0);
	check_int((int)sig->trusted_comment_len, ==, CA_MINISIGN_TRUSTED_COMMENT_MAX - 2 - (int)strlen("trusted comment: "));
	memset(big, 'a', CA_MINISIGN_COMMENT_MAX);
	big[CA_MINISIGN_COMMENT_MAX] = 0;
	check_int(parse_sig_str(edit(SIG_HASHED, "signature from", big), sig), ==, -EBADMSG);
	memset(big, '\n', sizeof(big));
	memcpy(big, SIG_HASHED, strlen(SIG_HASHED));
	check_int(ca_minisign_sig_parse(big, sizeof(big), sig), ==, -EBADMSG);
	free(sig);
}

/* what cafs sign writes, the parser and the verifier take (minisign -V
 * accepting it is trust-sign.sh's) */
static void test_sign(void)
{
	struct ca_minisign_secret sk;
	struct ca_minisign_key k;
	struct ca_minisign_sig *sig = malloc(sizeof(*sig));
	char *text = NULL;
	size_t len = 0;
	check_int(ca_minisign_key_parse(PUB, strlen(PUB), &k), ==, 0);
	check_int(ca_minisign_secret_parse(SEC, strlen(SEC), NULL, &sk), ==, 0);
	check(memcmp(sk.id, k.id, sizeof(k.id)) == 0 && memcmp(sk.sk + 32, k.pk, sizeof(k.pk)) == 0);
	for (int prehashed = 0; prehashed < 2; prehashed++) {
		check_int(ca_minisign_sign(&sk, MSG, strlen(MSG), prehashed, "u", "cafs \xc3\xa9\tt", &text, &len), ==, 0);
		check_int(ca_minisign_sig_parse(text, len, sig), ==, 0);
		check_int(sig->prehashed, ==, prehashed);
		check_str(sig->trusted_comment, "cafs \xc3\xa9\tt");
		check_int(ca_minisign_verify(&k, sig, MSG, strlen(MSG)), ==, 0);
		check_int(ca_minisign_verify(&k, sig, MSG, 3), ==, -EKEYREJECTED);
		free(text);
		text = NULL;
	}
	check_int(ca_minisign_sign(&sk, NULL, 0, true, "u", "t", &text, &len), ==, 0); /* an empty message */
	free(text);
	text = NULL;
	check_int(ca_minisign_sign(&sk, MSG, 1, true, "two\nlines", "t", &text, &len), ==, -EINVAL);
	check_int(ca_minisign_sign(&sk, MSG, 1, true, "u", "esc\033[m", &text, &len), ==, -EINVAL);
	check(text == NULL);
	/* a damaged key: its secret and public halves disagree */
	check_int(ca_minisign_secret_parse(edit(SEC, "qzXgmYIky3c82", "qzXgmYIky3c83"), strlen(SEC), NULL, &sk), ==,
	          -EBADMSG);
	check_int(ca_minisign_secret_parse(PUB, strlen(PUB), NULL, &sk), ==, -EBADMSG);
	check_int(ca_minisign_secret_parse(SIG_HASHED, strlen(SIG_HASHED), NULL, &sk), ==, -EBADMSG);
	/* "Sc" (encrypted) needs a password; limits beyond minisign's are refused unrun */
	check_int(ca_minisign_secret_parse(edit(SEC, "RWQAAEIy", "RWRTY0Iy"), strlen(SEC), NULL, &sk), ==, -ENOKEY);
	free(sig);
}

static void test_trust_helpers(void)
{
	char *s;
	check_str((s = ca_trust_signature_name("a/b.caidx")), "a/b.caidx.minisig");
	free(s);
	check_str((s = ca_trust_signature_name("http://h/b.caibx?t=1#f")), "http://h/b.caibx.minisig?t=1#f");
	free(s);
	check_str((s = ca_trust_signature_name("file:///x/y?.caidx")), "file:///x/y?.caidx.minisig");
	free(s);
	setenv("CAFS_TRUSTED_KEYS_DIR", "/x/keys", 1);
	check_str(ca_trust_dir(), "/x/keys");
	setenv("CAFS_TRUSTED_KEYS_DIR", "", 1);
	check_str(ca_trust_dir(), CA_TRUST_DIR_DEFAULT);
	unsetenv("CAFS_TRUSTED_KEYS_DIR");
	check_str(ca_trust_dir(), "/etc/cafs/trusted-keys.d");
}

int main(void)
{
	test_good();
	test_bad_files();
	test_sign();
	test_trust_helpers();
	return tap_done();
}
