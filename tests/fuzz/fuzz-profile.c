/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-profile - the prefetch profile parser (core/image/profile.c) on arbitrary
 * bytes.
 *
 * Properties: a profile is accepted or refused with -EBADMSG (never
 * another error but ENOMEM, never a crash); an accepted one has at most
 * CA_PROFILE_ITEMS_MAX items, and writing it out again (ca_profile_format,
 * with its own index digest) gives a profile that parses to the same text:
 * what `cafs make --profile` copies is what the mount reads.
 */
#include "config.h"

#include <errno.h>

#include "base/buf.h"
#include "fuzz.h"
#include "image/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ca_profile *p = NULL, *q = NULL;
	struct ca_buf a = CA_BUF_INIT, b = CA_BUF_INIT;
	fuzz_log_quiet();
	int r = ca_profile_parse(data, size, &p);
	fuzz_check(r == 0 || r == -EBADMSG || r == -ENOMEM, "parse: %d", r);
	if (r < 0)
		return 0;
	fuzz_check(ca_profile_count(p) <= CA_PROFILE_ITEMS_MAX, "too many items");
	r = ca_profile_format(p, ca_profile_index_digest(p), &a);
	if (r == 0) {
		r = ca_profile_parse(a.data, a.size, &q);
		fuzz_check(r == 0 || r == -ENOMEM, "its own output refused: %d", r);
	}
	if (r == 0) {
		fuzz_check(ca_profile_count(q) == ca_profile_count(p), "item count changed");
		r = ca_profile_format(q, ca_profile_index_digest(q), &b);
		fuzz_check(r != 0 || (a.size == b.size && !memcmp(a.data, b.data, a.size)), "not a fixed point");
	}
	ca_buf_release(&a);
	ca_buf_release(&b);
	ca_profile_free(p);
	ca_profile_free(q);
	return 0;
}
