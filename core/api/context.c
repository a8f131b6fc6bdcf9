/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* context.c - cafs_ctx: logging and cancellation (see cafs/context.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "api/api.h"
#include "cafs/version.h"
#include "trust/trust.h"

/* syslog priorities <-> our levels (NOTICE counts as INFO) */
static enum ca_log_level level_of(int priority)
{
	if (priority < LOG_ERR)
		return CA_LOG_SILENT;
	if (priority == LOG_ERR)
		return CA_LOG_ERROR;
	if (priority == LOG_WARNING)
		return CA_LOG_WARNING;
	return priority >= LOG_DEBUG ? CA_LOG_DEBUG : CA_LOG_INFO;
}

static int priority_of(enum ca_log_level level)
{
	static const int p[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	return level < CA_LOG_ERROR ? LOG_CRIT : p[level];
}

static void to_user(void *userdata, enum ca_log_level level, const char *line)
{
	struct cafs_ctx *ctx = userdata;
	ctx->fn(ctx->fn_userdata, priority_of(level), line);
}

int cafs_ctx_new(struct cafs_ctx **ret)
{
	struct cafs_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->refs = 1;
	ctx->logger = CA_LOGGER_STDERR(CA_LOG_ERROR);
	*ret = ctx;
	return 0;
}

struct cafs_ctx *cafs_ctx_ref(struct cafs_ctx *ctx)
{
	if (ctx)
		__atomic_add_fetch(&ctx->refs, 1, __ATOMIC_RELAXED);
	return ctx;
}

struct cafs_ctx *cafs_ctx_unref(struct cafs_ctx *ctx)
{
	if (ctx && __atomic_sub_fetch(&ctx->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(ctx->trusted_keys);
		free(ctx);
	}
	return NULL;
}

void cafs_ctx_set_log_fn(struct cafs_ctx *ctx, cafs_log_fn fn, void *userdata)
{
	ctx->fn = fn;
	ctx->fn_userdata = userdata;
	ctx->logger.fn = fn ? to_user : NULL;
	ctx->logger.userdata = fn ? ctx : NULL;
}

void cafs_ctx_set_log_priority(struct cafs_ctx *ctx, int priority)
{
	ca_logger_set_level(&ctx->logger, level_of(priority));
}

int cafs_ctx_get_log_priority(const struct cafs_ctx *ctx)
{
	return priority_of(ca_logger_get_level(&ctx->logger));
}

void cafs_ctx_cancel(struct cafs_ctx *ctx)
{
	ctx->cancelled = 1;
}

void cafs_ctx_uncancel(struct cafs_ctx *ctx)
{
	ctx->cancelled = 0;
}

int cafs_ctx_add_trusted_key(struct cafs_ctx *ctx, const char *path)
{
	struct ca_logger *old = api_enter(ctx);
	struct ca_minisign_key *n = realloc(ctx->trusted_keys, (ctx->n_trusted_keys + 1) * sizeof(*n));
	int r = n ? 0 : ca_log_error_errno(ENOMEM, "%s", path);
	if (n) {
		ctx->trusted_keys = n;
		r = ca_trust_load_key(path, &n[ctx->n_trusted_keys]); /* logs */
	}
	if (r == 0)
		ctx->n_trusted_keys++;
	api_leave(old);
	return r;
}

const char *cafs_version(void)
{
	return PACKAGE_VERSION;
}

unsigned cafs_version_number(void)
{
	return CAFS_VERSION_NUMBER;
}

int api_options(const void *user, void *copy, size_t ours)
{
	const unsigned char *u = user;
	size_t theirs;
	memset(copy, 0, ours);
	if (!user)
		return 0;
	memcpy(&theirs, user, sizeof(theirs));
	if (theirs < sizeof(size_t))
		return ca_log_error_errno(EINVAL, "options: size %zu: smaller than its size member (set .size = sizeof o)",
		                          theirs);
	if (theirs > API_STRUCT_MAX)
		return ca_log_error_errno(E2BIG, "options: size %zu: not a size (set .size = sizeof o)", theirs);
	for (size_t i = ours; i < theirs; i++)
		if (u[i])
			return ca_log_error_errno(E2BIG, "options: a member this library (%s) does not know is set",
			                          PACKAGE_VERSION);
	memcpy(copy, user, theirs < ours ? theirs : ours);
	return 0;
}

int api_refuse_arg(const char *call, const char *what)
{
	return ca_log_error_errno(EINVAL, "%s: %s", call, what);
}
