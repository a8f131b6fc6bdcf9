/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sha512mb.c - multi-buffer SHA-512 (see sha512mb.h).
 *
 * The state of every lane lives in one array, word-major (st[word][lane]),
 * so that a word of all lanes is one vector. A lane walks its message's
 * whole blocks straight from the caller's buffer, then one or two padding
 * blocks built in its own tail buffer. The vector compression runs as many
 * blocks as every busy lane still has in its current stretch; an idle lane
 * (no message left for it) shadows a busy one and its result is dropped.
 * Longest messages first, so the lanes run out together.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86_VECTORS 1
#endif

#include "base/log.h"
#include "base/sha512mb.h"

#define LANES_MAX 8
#define BLOCK 128

static const uint64_t K[80] = {
	0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL, 0xe9b5dba58189dbbcULL,
	0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL, 0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL,
	0xd807aa98a3030242ULL, 0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,
	0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL, 0xc19bf174cf692694ULL,
	0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL, 0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL,
	0x2de92c6f592b0275ULL, 0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,
	0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL, 0xbf597fc7beef0ee4ULL,
	0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL, 0x06ca6351e003826fULL, 0x142929670a0e6e70ULL,
	0x27b70a8546d22ffcULL, 0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,
	0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL, 0x92722c851482353bULL,
	0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL, 0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL,
	0xd192e819d6ef5218ULL, 0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,
	0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL, 0x34b0bcb5e19b48a8ULL,
	0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL, 0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL,
	0x748f82ee5defb2fcULL, 0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,
	0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL, 0xc67178f2e372532bULL,
	0xca273eceea26619cULL, 0xd186b8c721c0c207ULL, 0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL,
	0x06f067aa72176fbaULL, 0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,
	0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL, 0x431d67c49c100d4cULL,
	0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL, 0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL,
};

static const uint64_t IV512[8] = {
	0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
	0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

/* FIPS 180-4 5.3.6.2 */
static const uint64_t IV512_256[8] = {
	0x22312194fc2bf72cULL, 0x9f555fa3c84c64c2ULL, 0x2393b86b6f53b151ULL, 0x963877195940eabdULL,
	0x96283ee2a88effe3ULL, 0xbe5e1e2553863992ULL, 0x2b0199fc2c85b8aaULL, 0x0eb72ddc81c52ca2ULL,
};

/* nblocks consecutive blocks of every lane from p[lane], into st */
typedef void compress_fn(uint64_t st[8][LANES_MAX], const uint8_t *const p[LANES_MAX], size_t nblocks);

#ifdef HAVE_X86_VECTORS

/* One block in all lanes: h[8] (the state) and pv (the lanes' block
 * addresses) of vector type V of unsigned 64-bit lanes. The instantiation
 * defines ROR, XOR3, CH, MAJ and LOADW (word i of the blocks at pv,
 * big-endian). 16 rounds are unrolled at a time, so the message schedule's
 * ring indexes are constants and the 8 working variables just rename. */
#define ROUNDS(V)                                                                                     \
	do {                                                                                          \
		V w[16], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7]; \
		for (unsigned r = 0; r < 80; r += 16) {                                               \
			_Pragma("GCC unroll 16") for (unsigned i = 0; i < 16; i++)                    \
			{                                                                             \
				V wt;                                                                 \
				if (r == 0) {                                                         \
					wt = LOADW(pv, i);                                            \
				} else {                                                              \
					V w2 = w[(i + 14) & 15], w15 = w[(i + 1) & 15];               \
					wt = w[i] + w[(i + 9) & 15] + XOR3(ROR(w2, 19), ROR(w2, 61), w2 >> 6) + \
					     XOR3(ROR(w15, 1), ROR(w15, 8), w15 >> 7);                \
				}                                                                     \
				w[i] = wt;                                                            \
				V t1 = hh + XOR3(ROR(e, 14), ROR(e, 18), ROR(e, 41)) + CH(e, f, g) +   \
				       K[r + i] + wt;                                                 \
				V t2 = XOR3(ROR(a, 28), ROR(a, 34), ROR(a, 39)) + MAJ(a, b, c);        \
				hh = g;                                                               \
				g = f;                                                                \
				f = e;                                                                \
				e = d + t1;                                                           \
				d = c;                                                                \
				c = b;                                                                \
				b = a;                                                                \
				a = t1 + t2;                                                          \
			}                                                                             \
		}                                                                                     \
		h[0] += a;                                                                            \
		h[1] += b;                                                                            \
		h[2] += c;                                                                            \
		h[3] += d;                                                                            \
		h[4] += e;                                                                            \
		h[5] += f;                                                                            \
		h[6] += g;                                                                            \
		h[7] += hh;                                                                           \
	} while (0)

/* The whole compression for N lanes of type V; TARGET the ISA it needs. */
#define DEFINE_COMPRESS(NAME, TARGET, V, N)                                                           \
	__attribute__((target(TARGET))) static void NAME(uint64_t st[8][LANES_MAX],                   \
	                                                 const uint8_t *const p[LANES_MAX], size_t nblocks) \
	{                                                                                             \
		V h[8], pv;                                                                           \
		for (unsigned k = 0; k < 8; k++)                                                      \
			memcpy(&h[k], st[k], sizeof(h[k]));                                           \
		for (unsigned l = 0; l < (N); l++)                                                    \
			pv[l] = (uint64_t)(uintptr_t)p[l];                                            \
		for (size_t blk = 0; blk < nblocks; blk++, pv += BLOCK)                               \
			ROUNDS(V);                                                                    \
		for (unsigned k = 0; k < 8; k++)                                                      \
			memcpy(st[k], &h[k], sizeof(h[k]));                                           \
	}

/* vpshufb's source byte for each byte of a 16-byte lane, from the highest
 * down (as _mm*_set_epi8 lists them): each 64-bit word byte-reversed */
#define BSWAP64_BYTES 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7

/* AVX2: 4 lanes; no 64-bit rotate, no three-input logic */
typedef uint64_t v4u __attribute__((vector_size(32)));
#define ROR(x, n) (((x) >> (n)) | ((x) << (64 - (n))))
#define XOR3(x, y, z) ((x) ^ (y) ^ (z))
#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))
#define LOADW(pv, i)                                                                                  \
	((v4u)_mm256_shuffle_epi8(_mm256_i64gather_epi64((const long long *)0, (__m256i)((pv) + 8 * (i)), 1), \
	                          _mm256_set_epi8(BSWAP64_BYTES, BSWAP64_BYTES)))
DEFINE_COMPRESS(compress_avx2, "avx2", v4u, 4)
#undef ROR
#undef XOR3
#undef CH
#undef MAJ
#undef LOADW

/* AVX-512: 8 lanes, a rotate instruction and three-input logic (vpternlogq:
 * the immediate is the truth table of f(x, y, z) over x y z = 111 .. 000) */
typedef uint64_t v8u __attribute__((vector_size(64)));
#define ROR(x, n) ((v8u)_mm512_ror_epi64((__m512i)(x), (n)))
#define TERN(x, y, z, imm) ((v8u)_mm512_ternarylogic_epi64((__m512i)(x), (__m512i)(y), (__m512i)(z), (imm)))
#define XOR3(x, y, z) TERN(x, y, z, 0x96)
#define CH(x, y, z) TERN(x, y, z, 0xca)
#define MAJ(x, y, z) TERN(x, y, z, 0xe8)
#define LOADW(pv, i)                                                                                  \
	((v8u)_mm512_shuffle_epi8(_mm512_i64gather_epi64((__m512i)((pv) + 8 * (i)), (const void *)0, 1),    \
	                          _mm512_set_epi8(BSWAP64_BYTES, BSWAP64_BYTES, BSWAP64_BYTES, BSWAP64_BYTES)))
DEFINE_COMPRESS(compress_avx512, "avx512f,avx512bw", v8u, 8)
#undef ROR
#undef TERN
#undef XOR3
#undef CH
#undef MAJ
#undef LOADW

#endif /* HAVE_X86_VECTORS */

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

struct lane {
	const uint8_t *p; /* the next block */
	size_t left;      /* blocks left in this stretch: the message's whole blocks, then the tail */
	size_t msg;       /* the message it hashes */
	unsigned n_tail;
	bool in_tail, busy;
	uint8_t tail[2 * BLOCK]; /* the message's last partial block, padded */
};

static void lane_start(struct lane *ln, uint64_t st[8][LANES_MAX], unsigned l, const struct ca_sha512mb_msg *m,
                       size_t msg, const uint64_t iv[8])
{
	const uint8_t *data = m->data;
	size_t whole = m->size / BLOCK, rem = m->size % BLOCK;
	memset(ln->tail, 0, sizeof(ln->tail));
	if (rem)
		memcpy(ln->tail, data + whole * BLOCK, rem);
	ln->tail[rem] = 0x80;
	/* the length in bits, 128-bit big-endian, ends the last block */
	ln->n_tail = rem + 1 + 16 <= BLOCK ? 1 : 2;
	put_be64(ln->tail + ln->n_tail * BLOCK - 16, (uint64_t)(m->size >> 61));
	put_be64(ln->tail + ln->n_tail * BLOCK - 8, (uint64_t)m->size << 3);
	ln->msg = msg;
	ln->busy = true;
	ln->in_tail = whole == 0;
	ln->p = whole ? data : ln->tail;
	ln->left = whole ? whole : ln->n_tail;
	for (unsigned k = 0; k < 8; k++)
		st[k][l] = iv[k];
}

static int by_size_desc(const void *a, const void *b)
{
	const struct ca_sha512mb_msg *x = *(const struct ca_sha512mb_msg *const *)a;
	const struct ca_sha512mb_msg *y = *(const struct ca_sha512mb_msg *const *)b;
	return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

static int hash_lanes(compress_fn *compress, unsigned n_lanes, bool full512, const struct ca_sha512mb_msg *msgs,
                      size_t n)
{
	uint64_t st[8][LANES_MAX] __attribute__((aligned(64)));
	struct lane lanes[LANES_MAX];
	const struct ca_sha512mb_msg *small[64], **order = n <= 64 ? small : malloc(n * sizeof(*order));
	const uint64_t *iv = full512 ? IV512 : IV512_256;
	unsigned busy = 0, out_words = full512 ? 8 : 4;
	size_t next = 0;

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = &msgs[i];
	qsort(order, n, sizeof(*order), by_size_desc);
	memset(st, 0, sizeof(st));
	for (unsigned l = 0; l < n_lanes; l++) {
		lanes[l].busy = false;
		if (next < n) {
			lane_start(&lanes[l], st, l, order[next], next, iv);
			next++;
			busy++;
		}
	}
	while (busy) {
		const uint8_t *p[LANES_MAX];
		size_t run = SIZE_MAX;
		unsigned any = 0;
		for (unsigned l = 0; l < n_lanes; l++) {
			if (!lanes[l].busy)
				continue;
			any = l;
			if (lanes[l].left < run)
				run = lanes[l].left;
		}
		for (unsigned l = 0; l < n_lanes; l++)
			p[l] = lanes[lanes[l].busy ? l : any].p;
		compress(st, p, run);
		for (unsigned l = 0; l < n_lanes; l++) {
			struct lane *ln = &lanes[l];
			if (!ln->busy)
				continue;
			ln->p += run * BLOCK;
			ln->left -= run;
			if (ln->left)
				continue;
			if (!ln->in_tail) {
				ln->in_tail = true;
				ln->p = ln->tail;
				ln->left = ln->n_tail;
				continue;
			}
			for (unsigned k = 0; k < out_words; k++)
				put_be64(order[ln->msg]->out + 8 * k, st[k][l]);
			ln->busy = false;
			busy--;
			if (next < n) {
				lane_start(ln, st, l, order[next], next, iv);
				next++;
				busy++;
			}
		}
	}
	if (order != small)
		free(order);
	return 0;
}

static int hash_openssl(bool full512, const struct ca_sha512mb_msg *msgs, size_t n)
{
	const EVP_MD *md = full512 ? EVP_sha512() : EVP_sha512_256();
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int r = md && ctx ? 0 : -EIO;
	for (size_t i = 0; i < n && r == 0; i++) {
		unsigned len = 0;
		if (EVP_DigestInit_ex(ctx, md, NULL) != 1 || EVP_DigestUpdate(ctx, msgs[i].data, msgs[i].size) != 1 ||
		    EVP_DigestFinal_ex(ctx, msgs[i].out, &len) != 1 || len != (full512 ? 64u : 32u))
			r = -EIO;
	}
	EVP_MD_CTX_free(ctx);
	if (r < 0) {
		char msg[256];
		ERR_error_string_n(ERR_get_error(), msg, sizeof(msg));
		ca_log_error("sha512: %s", msg);
	}
	return r;
}

enum ca_sha512mb_impl ca_sha512mb_best(void)
{
#ifdef HAVE_X86_VECTORS
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
		return CA_SHA512MB_AVX512;
	if (__builtin_cpu_supports("avx2"))
		return CA_SHA512MB_AVX2;
#endif
	return CA_SHA512MB_OPENSSL;
}

unsigned ca_sha512mb_lanes(enum ca_sha512mb_impl impl)
{
	if (impl == CA_SHA512MB_AUTO)
		impl = ca_sha512mb_best();
	return impl == CA_SHA512MB_AVX512 ? 8 : impl == CA_SHA512MB_AVX2 ? 4 : 1;
}

const char *ca_sha512mb_impl_name(enum ca_sha512mb_impl impl)
{
	if (impl == CA_SHA512MB_AUTO)
		impl = ca_sha512mb_best();
	return impl == CA_SHA512MB_AVX512 ? "avx512" : impl == CA_SHA512MB_AVX2 ? "avx2" : "openssl";
}

int ca_sha512mb_hash(enum ca_sha512mb_impl impl, bool full512, const struct ca_sha512mb_msg *msgs, size_t n)
{
	enum ca_sha512mb_impl best = ca_sha512mb_best();
	/* one message gains nothing from lanes */
	if (impl == CA_SHA512MB_AUTO)
		impl = n == 1 ? CA_SHA512MB_OPENSSL : best;
	if (impl == CA_SHA512MB_OPENSSL)
		return hash_openssl(full512, msgs, n);
	if (n == 0)
		return 0;
#ifdef HAVE_X86_VECTORS
	if (impl == CA_SHA512MB_AVX512 && best == CA_SHA512MB_AVX512)
		return hash_lanes(compress_avx512, 8, full512, msgs, n);
	if (impl == CA_SHA512MB_AVX2 && best != CA_SHA512MB_OPENSSL)
		return hash_lanes(compress_avx2, 4, full512, msgs, n);
#endif
	return -ENOTSUP;
}
