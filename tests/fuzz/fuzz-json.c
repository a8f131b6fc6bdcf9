/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-json - the strict JSON reader (base/json.c) that a registry's
 * manifests, tag lists and token answers and a login's auth file go
 * through, on arbitrary bytes.
 *
 * Properties: a text is accepted or refused with -EBADMSG; in an
 * accepted one, iterating any object or array (to the depth bound) ends,
 * moving on at each step, with each value a span inside the text; a key
 * iterated is found again by ca_json_member; a decoded string holds no
 * NUL and fits what it said; u64 is 0 or -EBADMSG and only for digits.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "base/json.h"

static void walk(struct ca_json v, const char *text, size_t n, unsigned depth)
{
	char buf[512];
	uint64_t u;
	fuzz_check(v.p >= text && v.n >= 1 && v.p + v.n <= text + n, "a value outside the text");
	fuzz_check(depth <= CA_JSON_DEPTH_MAX + 1, "deeper than the bound: %u", depth);
	int r = ca_json_string(v, buf, sizeof(buf));
	fuzz_check(r == 0 || r == -EBADMSG || r == -E2BIG, "ca_json_string: %d", r);
	if (r == 0)
		fuzz_check(v.p[0] == '"' && strlen(buf) < sizeof(buf), "a string that is not one");
	r = ca_json_u64(v, &u);
	fuzz_check(r == 0 || r == -EBADMSG, "ca_json_u64: %d", r);
	if (r == 0)
		fuzz_check(v.p[0] >= '0' && v.p[0] <= '9' && u <= INT64_MAX, "u64 of a non-number");
	size_t pos = 0, last = 0;
	struct ca_json x, y;
	if (v.p[0] == '{') {
		char key[256];
		int k;
		while ((k = ca_json_next_member(v, &pos, key, sizeof(key), &x)) == 1) {
			fuzz_check(pos > last && pos <= v.n, "a member that does not move on");
			last = pos;
			fuzz_check(strlen(key) < sizeof(key), "key length");
			/* the last of its name: found (unless another member is
			 * refused on the way) */
			int m = ca_json_member(v, key, &y);
			fuzz_check(m == 0 || m == -EBADMSG, "a key iterated is not a member: %d", m);
			walk(x, text, n, depth + 1);
		}
		fuzz_check(k == 0 || k == -EBADMSG || k == -E2BIG, "ca_json_next_member: %d", k);
	} else if (v.p[0] == '[') {
		int k;
		while ((k = ca_json_next(v, &pos, &x)) == 1) {
			fuzz_check(pos > last && pos <= v.n, "an element that does not move on");
			last = pos;
			walk(x, text, n, depth + 1);
		}
		fuzz_check(k == 0, "ca_json_next of a parsed array: %d", k);
	} else {
		fuzz_check(ca_json_next(v, &pos, &x) == -EBADMSG, "a scalar iterated as an array");
		fuzz_check(ca_json_member(v, "a", &x) == -EBADMSG, "a scalar as an object");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ca_json doc;
	fuzz_log_quiet();
	int r = ca_json_parse((const char *)data, size, &doc);
	fuzz_check(r == 0 || r == -EBADMSG, "ca_json_parse: %d", r);
	if (r == 0)
		walk(doc, (const char *)data, size, 0);
	return 0;
}
