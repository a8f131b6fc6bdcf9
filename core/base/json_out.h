/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * json_out.h - JSON strings out of untrusted bytes (file names, URLs), for the
 * --json outputs and the metrics (docs/json.md).
 *
 * A string is written as valid UTF-8 JSON whatever its bytes: '"', '\'
 * and every control character (U+0000..U+001F, U+007F) are escaped
 * (\n, \t, ... or \u00XX); a byte that is not part of a well-formed UTF-8
 * sequence (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF)
 * becomes U+FFFD. So a name shown is never ambiguous about being lossy:
 * ca_json_lossy says whether any byte was replaced (then the exact bytes
 * are for the caller to add, e.g. as hex).
 */
#ifndef CA_JSON_OUT_H
#define CA_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Length of the well-formed UTF-8 sequence at s[0..n) (1..4), or 0 when
 * s[0] starts none. */
size_t ca_utf8_seq_len(const unsigned char *s, size_t n);
/* Whether s[0..n) is well-formed UTF-8 (then ca_json_out_string keeps it). */
bool ca_json_lossy(const char *s, size_t n);

/* s[0..n) as a quoted JSON string onto f. */
void ca_json_out_string(FILE *f, const char *s, size_t n);
/* The same into out (cap > 0, always NUL-terminated): the length it
 * needed (as snprintf: >= cap means it was cut, at a character boundary). */
size_t ca_json_out_string_buf(char *out, size_t cap, const char *s, size_t n);

#endif
