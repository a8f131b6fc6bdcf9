/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tap.h - a tiny TAP harness for the C unit tests (one program per core
 * module). check_int/check_str/check print file:line and both values on
 * failure; tap_done prints the plan and returns the exit code.
 *
 *   int main(void) { check_int(1 + 1, ==, 2); return tap_done(); }
 */
#ifndef CAFS_TAP_H
#define CAFS_TAP_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static unsigned tap_n, tap_failed;

static inline void tap_result(int ok, const char *file, int line, const char *expr)
{
	tap_n++;
	if (!ok)
		tap_failed++;
	printf("%sok %u - %s:%d %s\n", ok ? "" : "not ", tap_n, file, line, expr);
	fflush(stdout);
}

#define check(cond) tap_result(!!(cond), __FILE__, __LINE__, #cond)

#define check_int(a, op, b)                                                                              \
	do {                                                                                             \
		long long tap_a_ = (long long)(a), tap_b_ = (long long)(b);                              \
		int tap_ok_ = tap_a_ op tap_b_;                                                          \
		tap_result(tap_ok_, __FILE__, __LINE__, #a " " #op " " #b);                              \
		if (!tap_ok_)                                                                            \
			printf("#   left: %lld\n#  right: %lld\n", tap_a_, tap_b_);                          \
	} while (0)

#define check_u64(a, op, b)                                                                              \
	do {                                                                                             \
		uint64_t tap_a_ = (uint64_t)(a), tap_b_ = (uint64_t)(b);                                 \
		int tap_ok_ = tap_a_ op tap_b_;                                                          \
		tap_result(tap_ok_, __FILE__, __LINE__, #a " " #op " " #b);                              \
		if (!tap_ok_)                                                                            \
			printf("#   left: 0x%" PRIx64 "\n#  right: 0x%" PRIx64 "\n", tap_a_, tap_b_);        \
	} while (0)

#define check_str(a, b)                                                                                  \
	do {                                                                                             \
		const char *tap_a_ = (a), *tap_b_ = (b);                                                 \
		int tap_ok_ = tap_a_ && tap_b_ && !strcmp(tap_a_, tap_b_);                               \
		tap_result(tap_ok_, __FILE__, __LINE__, #a " == " #b);                                   \
		if (!tap_ok_)                                                                            \
			printf("#   left: \"%s\"\n#  right: \"%s\"\n", tap_a_ ? tap_a_ : "(null)",          \
			       tap_b_ ? tap_b_ : "(null)");                                              \
	} while (0)

static inline void tap_diag(const char *msg)
{
	printf("# %s\n", msg);
}

/* tap_skip: a check that cannot run here, a TAP SKIP (never an ok: a skipped
 * check has not passed) */
static inline void tap_skip(const char *what, const char *why)
{
	printf("ok %u - %s # SKIP %s\n", ++tap_n, what, why);
	fflush(stdout);
}

static inline int tap_done(void)
{
	printf("1..%u\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
