/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* siphash.c - SipHash-2-4 after Aumasson and Bernstein's reference description. */
#include "config.h"

#include <string.h>

#include "format/format.h"
#include "format/siphash.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                             \
	do {                                                                 \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);    \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                       \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                       \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);    \
	} while (0)

uint64_t ca_siphash24(const void *data, size_t len, const uint8_t key[16])
{
	const uint8_t *p = data;
	uint64_t k0 = ca_le64_read(key), k1 = ca_le64_read(key + 8);
	uint64_t v0 = UINT64_C(0x736f6d6570736575) ^ k0;
	uint64_t v1 = UINT64_C(0x646f72616e646f6d) ^ k1;
	uint64_t v2 = UINT64_C(0x6c7967656e657261) ^ k0;
	uint64_t v3 = UINT64_C(0x7465646279746573) ^ k1;
	size_t whole = len & ~(size_t)7;

	for (size_t i = 0; i < whole; i += 8) {
		uint64_t m = ca_le64_read(p + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	uint8_t last[8] = { 0 };
	memcpy(last, p + whole, len - whole);
	uint64_t b = ((uint64_t)len << 56) | ca_le64_read(last);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t ca_goodbye_hash(const void *name, size_t len)
{
	static const uint8_t key[16] = CA_FORMAT_GOODBYE_HASH_KEY;
	return ca_siphash24(name, len, key);
}
