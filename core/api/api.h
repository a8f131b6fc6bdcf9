/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api.h - what the public face (core/api/ files, the cafs_* functions of
 * include/cafs/) shares. Not installed.
 *
 * Each public entry point runs with its context's logger as the thread's
 * logger (api_enter / api_leave), so core's messages, and those of the
 * threads core starts for the call, reach the context's log function.
 */
#ifndef CAFS_API_H
#define CAFS_API_H

#include <signal.h>

#include "cafs/context.h"
#include "base/log.h"
#include "trust/minisign.h"
#include "image/source.h"

struct ca_catar_ra;

struct cafs_ctx {
	int refs; /* atomic */
	struct ca_logger logger;
	cafs_log_fn fn;
	void *fn_userdata;
	volatile sig_atomic_t cancelled;
	struct ca_minisign_key *trusted_keys; /* cafs_ctx_add_trusted_key */
	size_t n_trusted_keys;
};

struct cafs_image {
	int refs;             /* atomic: the callers' and one per cafs_node */
	struct cafs_ctx *ctx; /* a reference */
	struct ca_image *im;
	struct ca_catar_ra *ra; /* archives only */
};

/* Copy a caller's options struct (its first member its size, see
 * cafs/context.h) into copy, ours bytes long: the caller's bytes up to the
 * shorter of the two sizes, zeros after. NULL user: all zeros. -EINVAL for a
 * size below the size member, -E2BIG for a longer struct with a non-zero
 * tail (a member this library does not know is in use). */
int api_options(const void *user, void *copy, size_t ours);

/* The largest options or stats struct a caller may declare: a size above it
 * is a caller's bug (an unset or garbage member), refused with -E2BIG before
 * a byte past the size member is read or written. */
#define API_STRUCT_MAX 4096

/* A required argument the caller left NULL or empty: -EINVAL, logged as
 * "<call>: <what>". */
int api_refuse_arg(const char *call, const char *what);

/* Make ctx's logger the thread's; returns the one to restore. */
static inline struct ca_logger *api_enter(struct cafs_ctx *ctx)
{
	return ca_log_use(&ctx->logger);
}

static inline void api_leave(struct ca_logger *old)
{
	ca_log_use(old);
}

#endif
