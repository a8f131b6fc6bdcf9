/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json_out.c - JSON strings out of untrusted bytes (json_out.h). */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "base/json_out.h"

size_t ca_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned lo = 0x80, hi = 0xbf; /* the second byte's range (RFC 3629's table) */
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* no overlongs */
		if (c == 0xed)
			hi = 0x9f; /* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f; /* nothing past U+10FFFF */
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

bool ca_json_lossy(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t k = ca_utf8_seq_len(u + i, n - i);
		if (!k)
			return true;
		i += k;
	}
	return false;
}

/* one piece of the output: its bytes into out[*used..cap) while they fit
 * (whole: a piece is never cut), counted in *need either way */
static void put(char *out, size_t cap, size_t *used, size_t *need, const char *p, size_t k)
{
	if (*used == *need && *used + k < cap) {
		memcpy(out + *used, p, k);
		*used += k;
	}
	*need += k;
}

size_t ca_json_out_string_buf(char *out, size_t cap, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t used = 0, need = 0;
	put(out, cap, &used, &need, "\"", 1);
	for (size_t i = 0; i < n;) {
		char esc[8];
		size_t k = ca_utf8_seq_len(u + i, n - i);
		unsigned c = u[i];
		if (!k) {
			put(out, cap, &used, &need, "\xef\xbf\xbd", 3); /* U+FFFD for one bad byte */
			i++;
			continue;
		}
		if (c == '"' || c == '\\') {
			esc[0] = '\\', esc[1] = (char)c;
			put(out, cap, &used, &need, esc, 2);
		} else if (c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f') {
			esc[0] = '\\', esc[1] = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : c == '\b' ? 'b' : 'f';
			put(out, cap, &used, &need, esc, 2);
		} else if (c < 0x20 || c == 0x7f) {
			static const char hex[] = "0123456789abcdef";
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
			put(out, cap, &used, &need, esc, 6);
		} else {
			put(out, cap, &used, &need, s + i, k);
		}
		i += k;
	}
	put(out, cap, &used, &need, "\"", 1);
	out[used] = 0;
	return need;
}

void ca_json_out_string(FILE *f, const char *s, size_t n)
{
	char small[512];
	/* pieces of at most 64 bytes in: at most 6 times as many out */
	fputc('"', f);
	for (size_t i = 0; i < n;) {
		size_t k = n - i < 64 ? n - i : 64;
		/* end the piece at a character boundary: back over continuation
		 * bytes of a sequence the piece would cut */
		if (i + k < n) {
			size_t j = k;
			while (j > k - 3 && j > 1 && ((unsigned char)s[i + j] & 0xc0) == 0x80)
				j--;
			if (((unsigned char)s[i + j] & 0xc0) != 0x80 && ca_utf8_seq_len((const unsigned char *)s + i + j, n - i - j))
				k = j;
		}
		size_t len = ca_json_out_string_buf(small, sizeof(small), s + i, k);
		fwrite(small + 1, 1, len - 2, f); /* without its quotes */
		i += k;
	}
	fputc('"', f);
}
