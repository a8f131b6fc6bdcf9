/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-minisig.c - libFuzzer harness for the minisign parsers (core/
 * minisign.c): the input is tried as a public key file, a signature file
 * and an (unencrypted: no password, so no scrypt) secret key file;
 * whatever parses is run through the verifier against a fixed message, so
 * the crypto path sees hostile keys and signatures too.
 * Built and run like the other harnesses (make fuzz; replayed by make check).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "trust/minisign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char msg[] = "cafs fuzz message\n";
	static struct ca_minisign_sig sig;
	struct ca_minisign_key key;
	struct ca_minisign_secret sk;
	(void)ca_minisign_secret_parse(data, size, NULL, &sk);
	int have_key = ca_minisign_key_parse(data, size, &key) == 0;
	if (ca_minisign_sig_parse(data, size, &sig) == 0) {
		/* the signature's own key id, so that the check reaches OpenSSL */
		if (!have_key) {
			memset(&key, 0x5a, sizeof(key));
			memcpy(key.id, sig.key_id, sizeof(key.id));
		}
		(void)ca_minisign_verify(&key, &sig, msg, sizeof(msg) - 1);
		/* the comment is NUL-terminated and as long as it says */
		if (strlen(sig.trusted_comment) != sig.trusted_comment_len)
			__builtin_trap();
	}
	return 0;
}
