/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json.c - a minimal, strict JSON reader (see json.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/json.h"

static const char *blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int hex4(const char *p, const char *end, unsigned *ret)
{
	unsigned v = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*ret = v;
	return 0;
}

/* Scan (and, with out, decode) the string at p ('"'); returns the end
 * (past the closing quote) or NULL. *len gets the decoded length; out
 * gets at most cap bytes. */
static const char *string_scan(const char *p, const char *end, char *out, size_t cap, size_t *len)
{
	size_t k = 0;
	if (p >= end || *p != '"')
		return NULL;
	for (p++; p < end; p++) {
		unsigned char c = (unsigned char)*p;
		char buf[4];
		size_t m = 0;
		if (c == '"') {
			*len = k;
			return p + 1;
		}
		if (c < 0x20)
			return NULL;
		if (c != '\\') {
			buf[m++] = (char)c;
		} else {
			if (++p >= end)
				return NULL;
			switch (*p) {
			case '"': case '\\': case '/': buf[m++] = *p; break;
			case 'b': buf[m++] = '\b'; break;
			case 'f': buf[m++] = '\f'; break;
			case 'n': buf[m++] = '\n'; break;
			case 'r': buf[m++] = '\r'; break;
			case 't': buf[m++] = '\t'; break;
			case 'u': {
				unsigned u, lo;
				if (hex4(p + 1, end, &u) < 0)
					return NULL;
				p += 4;
				if (u >= 0xd800 && u < 0xdc00) {
					if (end - p < 7 || p[1] != '\\' || p[2] != 'u' || hex4(p + 3, end, &lo) < 0 ||
					    lo < 0xdc00 || lo >= 0xe000)
						return NULL;
					p += 6;
					u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
				} else if (u >= 0xdc00 && u < 0xe000) {
					return NULL;
				}
				if (u < 0x80) {
					buf[m++] = (char)u;
				} else if (u < 0x800) {
					buf[m++] = (char)(0xc0 | u >> 6);
					buf[m++] = (char)(0x80 | (u & 0x3f));
				} else if (u < 0x10000) {
					buf[m++] = (char)(0xe0 | u >> 12);
					buf[m++] = (char)(0x80 | (u >> 6 & 0x3f));
					buf[m++] = (char)(0x80 | (u & 0x3f));
				} else {
					buf[m++] = (char)(0xf0 | u >> 18);
					buf[m++] = (char)(0x80 | (u >> 12 & 0x3f));
					buf[m++] = (char)(0x80 | (u >> 6 & 0x3f));
					buf[m++] = (char)(0x80 | (u & 0x3f));
				}
				break;
			}
			default:
				return NULL;
			}
		}
		if (out && k + m <= cap)
			memcpy(out + k, buf, m);
		k += m;
	}
	return NULL;
}

static const char *digits(const char *p, const char *end)
{
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p;
}

/* The end of the number at p, or NULL: RFC 8259's grammar exactly
 * (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?), so "01", "1.", "1e",
 * "1.2.3" or "1-2" are not numbers. */
static const char *number_end(const char *p, const char *end)
{
	const char *q;
	if (p < end && *p == '-')
		p++;
	if (p >= end || !(*p >= '0' && *p <= '9'))
		return NULL;
	p = *p == '0' ? p + 1 : digits(p, end);
	if (p < end && *p == '.') {
		q = digits(p + 1, end);
		if (q == p + 1)
			return NULL;
		p = q;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		q = digits(p, end);
		if (q == p)
			return NULL;
		p = q;
	}
	/* what follows a number is a blank, a separator or the end: "01" is
	 * "0" and then "1", which no caller lets through; said here at once */
	if (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-'))
		return NULL;
	return p;
}

/* The end of the value at p, or NULL. */
static const char *value_end(const char *p, const char *end, unsigned depth)
{
	size_t len;
	if (p >= end || depth > CA_JSON_DEPTH_MAX)
		return NULL;
	if (*p == '"')
		return string_scan(p, end, NULL, 0, &len);
	if (*p == '{' || *p == '[') {
		bool obj = *p == '{';
		char close = obj ? '}' : ']';
		p = blanks(p + 1, end);
		if (p < end && *p == close)
			return p + 1;
		for (;;) {
			if (obj) {
				p = string_scan(p, end, NULL, 0, &len);
				if (!p)
					return NULL;
				p = blanks(p, end);
				if (p >= end || *p != ':')
					return NULL;
				p = blanks(p + 1, end);
			}
			p = value_end(p, end, depth + 1);
			if (!p)
				return NULL;
			p = blanks(p, end);
			if (p < end && *p == ',') {
				p = blanks(p + 1, end);
				continue;
			}
			return p < end && *p == close ? p + 1 : NULL;
		}
	}
	if (*p == '-' || (*p >= '0' && *p <= '9'))
		return number_end(p, end);
	static const char *const words[] = { "true", "false", "null" };
	for (size_t i = 0; i < 3; i++) {
		size_t k = strlen(words[i]);
		if ((size_t)(end - p) >= k && !memcmp(p, words[i], k))
			return p + k;
	}
	return NULL;
}

int ca_json_parse(const char *text, size_t n, struct ca_json *ret)
{
	const char *end = text + n, *p = blanks(text, end);
	const char *e = value_end(p, end, 0);
	if (!e || blanks(e, end) != end)
		return -EBADMSG;
	*ret = (struct ca_json){ p, (size_t)(e - p) };
	return 0;
}

/* Iterate a container (open '{' or '['): the next element at *pos. */
static int next(struct ca_json v, char open, size_t *pos, char *key, size_t cap, struct ca_json *ret)
{
	const char *end = v.p + v.n, *p;
	size_t len;
	if (v.n < 2 || v.p[0] != open)
		return -EBADMSG;
	p = blanks(v.p + (*pos ? *pos : 1), end);
	if (p < end && *p == ',')
		p = blanks(p + 1, end);
	if (p >= end || *p == (open == '{' ? '}' : ']'))
		return 0;
	if (open == '{') {
		const char *k = p;
		p = string_scan(p, end, NULL, 0, &len);
		if (!p)
			return -EBADMSG;
		if (key) {
			if (len >= cap)
				return -E2BIG;
			string_scan(k, end, key, cap - 1, &len);
			key[len] = 0;
			/* "token\u0000x" is not the key "token" */
			if (strlen(key) != len)
				return -EBADMSG;
		}
		p = blanks(p, end);
		if (p >= end || *p != ':')
			return -EBADMSG;
		p = blanks(p + 1, end);
	}
	const char *e = value_end(p, end, 1);
	if (!e)
		return -EBADMSG;
	*ret = (struct ca_json){ p, (size_t)(e - p) };
	*pos = (size_t)(e - v.p);
	return 1;
}

int ca_json_next_member(struct ca_json v, size_t *pos, char *key, size_t cap, struct ca_json *ret)
{
	return next(v, '{', pos, key, cap, ret);
}

int ca_json_next(struct ca_json v, size_t *pos, struct ca_json *ret)
{
	return next(v, '[', pos, NULL, 0, ret);
}

int ca_json_member(struct ca_json v, const char *key, struct ca_json *ret)
{
	size_t pos = 0;
	char k[256];
	struct ca_json x;
	int r, found = -ENOENT;
	if (v.n < 2 || v.p[0] != '{')
		return -EBADMSG;
	while ((r = next(v, '{', &pos, k, sizeof(k), &x)) != 0) {
		if (r == -E2BIG) {
			/* a key longer than any we look for: skip the member */
			const char *end = v.p + v.n, *p = blanks(v.p + (pos ? pos : 1), end);
			size_t len;
			if (p < end && *p == ',')
				p = blanks(p + 1, end);
			p = string_scan(p, end, NULL, 0, &len);
			p = p ? blanks(p, end) : NULL;
			const char *e = p && p < end && *p == ':' ? value_end(blanks(p + 1, end), end, 1) : NULL;
			if (!e)
				return -EBADMSG;
			pos = (size_t)(e - v.p);
			continue;
		}
		if (r < 0)
			return r;
		if (!strcmp(k, key)) {
			*ret = x;
			found = 0;
		}
	}
	return found;
}

int ca_json_string(struct ca_json v, char *out, size_t cap)
{
	size_t len;
	const char *e = string_scan(v.p, v.p + v.n, NULL, 0, &len);
	if (!e || e != v.p + v.n)
		return -EBADMSG;
	if (len >= cap)
		return -E2BIG;
	string_scan(v.p, v.p + v.n, out, cap - 1, &len);
	out[len] = 0;
	if (strlen(out) != len)
		return -EBADMSG;
	return 0;
}

int ca_json_u64(struct ca_json v, uint64_t *ret)
{
	uint64_t x = 0;
	if (v.n == 0 || v.n > 19 || (v.n > 1 && v.p[0] == '0'))
		return -EBADMSG;
	for (size_t i = 0; i < v.n; i++) {
		if (v.p[i] < '0' || v.p[i] > '9')
			return -EBADMSG;
		x = x * 10 + (uint64_t)(v.p[i] - '0');
	}
	if (x > INT64_MAX)
		return -EBADMSG;
	*ret = x;
	return 0;
}
