/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rng.h - xorshift64*: a small, fast generator for jitter (back-off and
 * probe delays), never for anything secret. The state is the caller's,
 * drawn from by one thread at a time (or under the caller's lock); it must
 * never be 0, xorshift's fixed point.
 */
#ifndef CA_RNG_H
#define CA_RNG_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ca_rng_next(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* A seed for one generator: the wall clock's nanoseconds and seconds and
 * the owner's address, so generators made at the same moment (two
 * clients, two stores failing together) do not draw in step; never 0. */
static inline uint64_t ca_rng_seed(const void *owner)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)owner) | 1;
}

#endif
