/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-json.c - the strict, bounded JSON reader registry answers and auth
 * files go through: members, arrays, escapes, numbers, and refusals of
 * what is not JSON (truncated, trailing bytes, too deep, a NUL).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "tap.h"

static int parse(const char *s, struct ca_json *v)
{
	return ca_json_parse(s, strlen(s), v);
}

int main(void)
{
	struct ca_json doc, v, e;
	char s[64];
	uint64_t u = 0;
	size_t pos = 0;

	const char *m = " {\"schemaVersion\":2,\"layers\":[{\"digest\":\"sha256:ab\",\"size\":18314}],"
	                "\"t\":\"a\\\"b\\u00e9\\ud83d\\ude00\",\"n\":null,\"f\":-1.5e3,\"b\":true} ";
	check_int(parse(m, &doc), ==, 0);
	check_int(ca_json_member(doc, "schemaVersion", &v), ==, 0);
	check_int(ca_json_u64(v, &u), ==, 0);
	check_u64(u, ==, 2);
	check_int(ca_json_member(doc, "missing", &v), ==, -ENOENT);
	check_int(ca_json_member(doc, "layers", &v), ==, 0);
	check_int(ca_json_next(v, &pos, &e), ==, 1);
	check_int(ca_json_next(v, &pos, &e), ==, 0); /* exactly one element */
	pos = 0;
	check_int(ca_json_next(v, &pos, &e), ==, 1);
	struct ca_json d;
	check_int(ca_json_member(e, "digest", &d), ==, 0);
	check_int(ca_json_string(d, s, sizeof(s)), ==, 0);
	check_str(s, "sha256:ab");
	check_int(ca_json_string(d, s, 4), ==, -E2BIG);
	check_int(ca_json_member(doc, "t", &v), ==, 0);
	check_int(ca_json_string(v, s, sizeof(s)), ==, 0);
	check_str(s, "a\"b\xc3\xa9\xf0\x9f\x98\x80");
	check_int(ca_json_member(doc, "f", &v), ==, 0);
	check_int(ca_json_u64(v, &u), ==, -EBADMSG); /* not a non-negative integer */
	check_int(ca_json_member(doc, "n", &v), ==, 0);
	check_int(ca_json_string(v, s, sizeof(s)), ==, -EBADMSG);

	/* a key given twice: the last */
	check_int(parse("{\"a\":1,\"a\":2}", &doc), ==, 0);
	check_int(ca_json_member(doc, "a", &v), ==, 0);
	check_int(ca_json_u64(v, &u), ==, 0);
	check_u64(u, ==, 2);
	/* members in order, with their keys */
	pos = 0;
	check_int(ca_json_next_member(doc, &pos, s, sizeof(s), &v), ==, 1);
	check_str(s, "a");

	/* not JSON */
	check_int(parse("{\"a\":1", &doc), ==, -EBADMSG);
	check_int(parse("{\"a\":1} x", &doc), ==, -EBADMSG);
	check_int(parse("{\"a\" 1}", &doc), ==, -EBADMSG);
	check_int(parse("[1,]", &doc), ==, -EBADMSG);
	check_int(parse("\"\\x\"", &doc), ==, -EBADMSG);
	check_int(parse("\"\\ud800\"", &doc), ==, -EBADMSG); /* a lone surrogate */
	check_int(parse("\"a\tb\"", &doc), ==, -EBADMSG);    /* a raw control character */
	check_int(parse("", &doc), ==, -EBADMSG);
	check_int(parse("\"\\u0000\"", &doc), ==, 0);
	check_int(ca_json_string(doc, s, sizeof(s)), ==, -EBADMSG); /* a NUL inside */
	check_int(parse("99999999999999999999", &doc), ==, 0);
	check_int(ca_json_u64(doc, &u), ==, -EBADMSG); /* past 2^63 - 1 */

	/* numbers: RFC 8259's grammar, not any run of digits, dots and signs */
	static const char *const numbers_ok[] = { "0", "-0", "12", "-1.5e3", "1E+2", "0.25", "[1,-2.0e-3]" };
	static const char *const numbers_bad[] = { "01", "-", "1.", ".5", "1e", "1e+", "1.2.3", "1-2", "+1", "--1",
		                                   "[1.2.3]", "{\"a\":1e5e5}", "-01" };
	for (size_t i = 0; i < sizeof(numbers_ok) / sizeof(numbers_ok[0]); i++)
		check_int(parse(numbers_ok[i], &doc), ==, 0);
	for (size_t i = 0; i < sizeof(numbers_bad) / sizeof(numbers_bad[0]); i++)
		check_int(parse(numbers_bad[i], &doc), ==, -EBADMSG);
	/* a key with a NUL inside is no shorter key: "token\u0000x" is not
	 * "token" (the member is refused, never taken for the other) */
	check_int(parse("{\"token\":\"good\",\"token\\u0000x\":\"evil\"}", &doc), ==, 0);
	check_int(ca_json_member(doc, "token", &v), ==, -EBADMSG);
	pos = 0;
	check_int(ca_json_next_member(doc, &pos, s, sizeof(s), &v), ==, 1);
	check_str(s, "token");
	check_int(ca_json_next_member(doc, &pos, s, sizeof(s), &v), ==, -EBADMSG);

	/* depth: CA_JSON_DEPTH_MAX nested arrays pass, one more does not */
	char deep[2 * (CA_JSON_DEPTH_MAX + 2) + 1];
	for (int depth = CA_JSON_DEPTH_MAX + 1; depth <= CA_JSON_DEPTH_MAX + 2; depth++) {
		memset(deep, '[', (size_t)depth);
		memset(deep + depth, ']', (size_t)depth);
		deep[2 * depth] = 0;
		check_int(parse(deep, &doc), ==, depth <= CA_JSON_DEPTH_MAX + 1 ? 0 : -EBADMSG);
	}
	return tap_done();
}
