/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clock.h - the monotonic clock, in the unit a caller counts in: for
 * durations, deadlines, back-off and rates, never for a time of day
 * (CLOCK_MONOTONIC does not jump with the wall clock). Each call reads
 * the clock once; callable from any thread.
 */
#ifndef CA_CLOCK_H
#define CA_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds since an unspecified start (boot, on Linux). */
static inline uint64_t ca_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The same clock in microseconds. */
static inline uint64_t ca_now_us(void)
{
	return ca_now_ns() / 1000u;
}

/* The same clock in milliseconds. */
static inline uint64_t ca_now_ms(void)
{
	return ca_now_ns() / 1000000u;
}

#endif
