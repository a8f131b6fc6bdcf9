/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_delta.c - `cafs delta make FROM TO PACK` and `cafs delta info FROM
 * TO [PACK]`: static delta packs (image/delta.h). Each verb is one core
 * call; here are the options and the printing.
 *
 * info is a verb of its own rather than a form of `cafs info`: it takes a
 * pair of images (and a pack), where `cafs info` describes one index, and
 * its numbers are the pack's business.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cache.h"
#include "cmd.h"
#include "image/delta.h"
#include "image/source.h"

enum { DELTA_MAKE, DELTA_INFO };

struct delta_request {
	struct cafs_request base;
	char **stores, **from_stores; /* --store (both images), --from-store (FROM only) */
	size_t n_stores, n_from_stores;
	int level;
	char **operands;
	int n_operands;
};

#define Q(r) ((struct delta_request *)(r))

static int push(char ***v, size_t *n, const char *s)
{
	char **k = realloc(*v, (*n + 1) * sizeof(char *));
	if (!k)
		return ca_log_error_errno(ENOMEM, "delta"), 1;
	*v = k;
	k[(*n)++] = (char *)s;
	return 0;
}

static int delta_set(struct cafs_request *r, int id, const char *arg)
{
	struct delta_request *q = Q(r);
	char *end;
	switch (id) {
	case CAFS_OPT_STORE:
		return push(&q->stores, &q->n_stores, arg);
	case CAFS_OPT_FROM_STORE:
		return push(&q->from_stores, &q->n_from_stores, arg);
	case CAFS_OPT_LEVEL:
		errno = 0;
		q->level = (int)strtol(arg, &end, 10);
		if (errno || *end || end == arg || q->level < 1 || q->level > 22)
			return cafs_usage_error("delta", "invalid level '%s' (1..22)", arg);
		return 0;
	}
	return 0;
}

static int delta_operands(struct cafs_request *r, int n, char **arg)
{
	if (r->verb == DELTA_MAKE && n != 3)
		return cafs_usage_error("delta", "make expects FROM TO PACK");
	if (r->verb == DELTA_INFO && n != 2 && n != 3)
		return cafs_usage_error("delta", "info expects FROM TO [PACK]");
	Q(r)->operands = arg;
	Q(r)->n_operands = n;
	return 0;
}

static void opts(const struct delta_request *q, struct ca_image_opts *from, struct ca_image_opts *to)
{
	*to = (struct ca_image_opts){ .stores = q->stores, .n_stores = q->n_stores };
	*from = *to;
	if (q->n_from_stores) {
		from->stores = q->from_stores;
		from->n_stores = q->n_from_stores;
	}
}

static int delta_make(const struct delta_request *q)
{
	struct ca_image_opts fo, to;
	struct ca_delta_make_stats st;
	opts(q, &fo, &to);
	struct ca_delta_make_opts o = { .from_io = &fo, .to_io = &to, .level = q->level };
	if (ca_delta_make(q->operands[0], q->operands[1], q->operands[2], &o, &st) < 0) /* logs */
		return 1;
	ca_log_info("%llu of %llu chunks new (%llu bytes): %llu stored whole, %llu against the FROM chunks beside "
	            "the last shared one, %llu against those at the same offset; pack %llu bytes",
	            (unsigned long long)st.new_chunks, (unsigned long long)st.to_chunks,
	            (unsigned long long)st.new_bytes, (unsigned long long)st.plain,
	            (unsigned long long)st.prefix_shifted, (unsigned long long)st.prefix_same,
	            (unsigned long long)st.pack_bytes);
	return 0;
}

static int delta_info(const struct delta_request *q)
{
	struct ca_image_opts fo, to;
	struct ca_delta_info in;
	opts(q, &fo, &to);
	if (ca_delta_info(q->operands[0], q->operands[1], q->n_operands > 2 ? q->operands[2] : NULL, &fo, &to, &in) < 0)
		return 1;
	printf("Image: %llu bytes, %llu chunks, %llu bytes in chunk files\n", (unsigned long long)in.image_size,
	       (unsigned long long)in.to_chunks, (unsigned long long)in.to_store_bytes);
	printf("Index: %llu bytes in 1 request, before either way\n", (unsigned long long)in.index_bytes);
	printf("By chunk store: %llu bytes in %llu requests\n", (unsigned long long)in.store_bytes,
	       (unsigned long long)in.store_chunks);
	if (in.have_pack && !in.pack_matches)
		printf("By delta pack: not usable for this FROM and TO\n");
	else if (in.have_pack)
		printf("By delta pack: %llu bytes in %llu requests, then %llu chunks (%llu bytes uncompressed) "
		       "from the store\n",
		       (unsigned long long)in.pack_bytes, (unsigned long long)in.pack_requests,
		       (unsigned long long)in.pack_missing, (unsigned long long)in.pack_missing_bytes);
	return 0;
}

static int delta_run(struct cafs_request *r)
{
	return r->verb == DELTA_MAKE ? delta_make(Q(r)) : delta_info(Q(r));
}

static void delta_release(struct cafs_request *r)
{
	free(Q(r)->stores);
	free(Q(r)->from_stores);
}

static const char *const delta_verbs[] = { "make", "info", NULL };

static const struct cafs_option delta_options[] = {
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE,
	  .help = "chunk store of both images (repeatable; default:\n"
	  "default.castr beside each index)" },
	{ "from-store", 0, "DIR|URL", CAFS_OPT_FROM_STORE,
	  .help = "FROM's chunk store instead (repeatable)" },
	{ "level", 0, "N", CAFS_OPT_LEVEL, .verbs = 1u << DELTA_MAKE,
	  .help = "make: zstd level of the pack (1..22, default 19)" },
	{ NULL },
};

const struct cafs_command cafs_command_delta = {
	.name = "delta",
	.synopsis = "delta make|info [OPTIONS] FROM TO [PACK]",
	.help_head = "  delta make FROM TO PACK     write a static delta pack: what a holder of FROM needs to\n"
	             "                              build TO (serve it as TO.cadelta-<SHA-256 of FROM's index>)\n"
	             "  delta info FROM TO [PACK]   what the update costs: by chunk store, by the pack\n",
	.options = delta_options,
	.help_column = 26,
	.verbs = delta_verbs,
	.request_size = sizeof(struct delta_request),
	.set = delta_set,
	.operands = delta_operands,
	.run = delta_run,
	.release = delta_release,
};
