/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * json.h - a minimal, strict reader of JSON texts that come from
 * elsewhere (a registry's manifests and tokens, a login's auth file):
 * values are found in place (spans of the text, nothing allocated), the
 * nesting depth is bounded (CA_JSON_DEPTH_MAX), and any text that is not
 * JSON is -EBADMSG. Enough to read a few members, not a general parser:
 * strings decode to UTF-8, \u escapes included (surrogate pairs too);
 * numbers are read as unsigned integers only.
 *
 * Pure functions, thread-safe.
 */
#ifndef CA_JSON_H
#define CA_JSON_H

#include <stddef.h>
#include <stdint.h>

#define CA_JSON_DEPTH_MAX 32

/* A value: its text p[0..n), blanks around it excluded. */
struct ca_json {
	const char *p;
	size_t n;
};

/* The whole text as one value: 0, or -EBADMSG when it is not exactly one
 * well-formed value (blanks around it allowed). */
int ca_json_parse(const char *text, size_t n, struct ca_json *ret);
/* The member key of the object v: 0, -ENOENT if it has none, -EBADMSG if v
 * is not an object. With a key given twice, the last (as most parsers). */
int ca_json_member(struct ca_json v, const char *key, struct ca_json *ret);
/* Iterate an object's members: *pos starts at 0; 1 with the next member's
 * decoded key (at most cap - 1 bytes, else -E2BIG) and value, 0 after the
 * last, -EBADMSG if v is not an object. */
int ca_json_next_member(struct ca_json v, size_t *pos, char *key, size_t cap, struct ca_json *ret);
/* Iterate an array's elements the same way. */
int ca_json_next(struct ca_json v, size_t *pos, struct ca_json *ret);
/* A string's decoded text into out (at most cap - 1 bytes and a NUL):
 * 0, -E2BIG if longer, -EBADMSG if v is not a string or holds a NUL. */
int ca_json_string(struct ca_json v, char *out, size_t cap);
/* A non-negative integer (no sign, fraction or exponent; at most 2^63 - 1). */
int ca_json_u64(struct ca_json v, uint64_t *ret);

#endif
