/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-www-auth - a registry's WWW-Authenticate challenge
 * (ca_oci_auth_param, net/oci_auth.c) on arbitrary bytes: the parameters
 * a token request is built from (realm, service, scope).
 *
 * Properties: it ends; each value is NUL-terminated inside its buffer,
 * no longer than the challenge, and a value from a small buffer is the
 * start of the same value from a large one (cut, never other bytes).
 */
#include "config.h"

#include <string.h>

#include "fuzz.h"
#include "net/oci_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "realm", "service", "scope", "error" };
	char *ch = malloc(size + 1);
	char big[4096], small[8];
	fuzz_log_quiet();
	if (!ch)
		return 0;
	memcpy(ch, data, size);
	ch[size] = 0; /* a header line is a C string (no NUL inside) */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		memset(big, 'x', sizeof(big));
		memset(small, 'x', sizeof(small));
		ca_oci_auth_param(ch, names[i], big, sizeof(big));
		ca_oci_auth_param(ch, names[i], small, sizeof(small));
		size_t nb = strnlen(big, sizeof(big)), ns = strnlen(small, sizeof(small));
		fuzz_check(nb < sizeof(big) && ns < sizeof(small), "%s: not NUL-terminated in its buffer", names[i]);
		fuzz_check(nb <= strlen(ch), "%s: longer than the challenge", names[i]);
		fuzz_check(!strncmp(big, small, ns) && (ns == nb || ns == sizeof(small) - 1),
		           "%s: the small buffer's value is not the large one's start", names[i]);
	}
	free(ch);
	return 0;
}
