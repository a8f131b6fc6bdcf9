/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_cache.c - `cafs cache stat|fill|prune|verify|seed`: the chunk cache
 * (a casync-layout store shared by the mount, extract --cache and fill).
 * fill is in cmd_cache_fill.c, seed in cache_seed.c. Each verb is one
 * core call (image/store_ops.h): here are options and messages.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "base/log.h"
#include "cmd.h"
#include "image/store_ops.h"

/* ---- stat ---- */

static int source_presence(const char *dir, const char *source, bool json)
{
	struct ca_store_ops_presence p;
	int r = ca_store_ops_presence(dir, source, &p); /* logs its errors */
	if (r < 0)
		return r;
	if (json) {
		putchar('{');
		cafs_json_name("source", p.shown ? p.shown : "(source)");
		printf(",\"chunks\":%llu,\"chunks_present\":%llu,\"bytes\":%llu,\"bytes_present\":%llu}",
		       (unsigned long long)p.chunks, (unsigned long long)p.have, (unsigned long long)p.bytes,
		       (unsigned long long)p.have_bytes);
		free(p.shown);
		return 0;
	}
	printf("%s: %llu of %llu chunks, %llu of %llu bytes, %.1f%%\n", p.shown ? p.shown : "(source)",
	       (unsigned long long)p.have, (unsigned long long)p.chunks, (unsigned long long)p.have_bytes,
	       (unsigned long long)p.bytes, p.bytes ? 100.0 * (double)p.have_bytes / (double)p.bytes : 100.0);
	free(p.shown);
	return 0;
}

static int cache_stat(const struct cafs_cache_request *q)
{
	char *dir = cafs_cache_dir(q->cache);
	struct ca_store_ops_stat a;
	char h1[32], h2[32];
	int r;
	if (!dir)
		return 1;
	r = ca_store_ops_stat(dir, true, &a); /* logs its errors */
	if (r < 0)
		goto out;
	if (q->json) {
		/* one object (docs/json.md); a source whose index cannot be
		 * read is null in "sources" (logged; the exit status is 1) */
		putchar('{');
		cafs_json_name("cache", dir);
		printf(",\"chunks\":%llu,\"size_bytes\":%llu,\"disk_bytes\":%llu,\"temporary_files\":%llu,"
		       "\"sources\":[",
		       (unsigned long long)a.chunks, (unsigned long long)a.bytes, (unsigned long long)a.disk,
		       (unsigned long long)a.tmp);
		for (size_t i = 0; i < q->n_operands; i++) {
			if (i)
				putchar(',');
			if (source_presence(dir, q->operands[i], true) < 0) {
				fputs("null", stdout);
				r = -EIO;
			}
		}
		printf("]}\n");
		goto out;
	}
	cafs_format_size(a.bytes, h1, sizeof(h1));
	cafs_format_size(a.disk, h2, sizeof(h2));
	printf("Cache: %s\n", dir);
	printf("Chunks: %llu\n", (unsigned long long)a.chunks);
	printf("Size: %llu bytes (%s, %s on disk)\n", (unsigned long long)a.bytes, h1, h2);
	if (a.tmp)
		printf("Temporary files: %llu\n", (unsigned long long)a.tmp);
	for (size_t i = 0; i < q->n_operands; i++)
		if (source_presence(dir, q->operands[i], false) < 0)
			r = -EIO; /* go on with the others, fail at the end */
out:
	free(dir);
	return r < 0 ? 1 : 0;
}

/* ---- prune ---- */

static void prune_victim(void *userdata, const char *hex)
{
	(void)userdata;
	printf("would remove %s\n", hex);
}

static int cache_prune(const struct cafs_cache_request *q)
{
	int r = 1;
	char *dir = cafs_cache_dir(q->cache);
	if (!dir)
		goto out;
	struct ca_store_ops_prune_opts po = { .cache = dir, .max_size = q->max_size, .keep = q->keep,
		                              .n_keep = q->n_keep, .min_age = q->min_age, .dry_run = q->dry_run,
		                              .on_victim = q->dry_run ? prune_victim : NULL };
	struct ca_cache_prune_stats st;
	bool failed;
	if (ca_store_ops_prune(&po, &st, &failed) < 0) /* logs its errors */
		goto out;
	r = failed ? 1 : 0; /* each failed chunk was logged; the rest went */
	char h1[32], h2[32], h3[32];
	cafs_format_size(st.victim_bytes, h1, sizeof(h1));
	cafs_format_size(st.left_bytes, h2, sizeof(h2));
	cafs_format_size(q->max_size, h3, sizeof(h3));
	printf("%s %llu chunks (%s); cache now %llu chunks, %llu bytes (%s)\n", q->dry_run ? "would remove" : "removed",
	       (unsigned long long)st.victims, h1, (unsigned long long)st.left_chunks,
	       (unsigned long long)st.left_bytes, h2);
	if (!q->dry_run && st.stale_tmp)
		printf("removed %llu stale temporary files\n", (unsigned long long)st.stale_tmp);
	if (st.left_bytes > q->max_size)
		ca_log_warning("cache: %s: still above %s: the rest is pinned by --keep or used in the last %ld s",
		               dir, h3, q->min_age);
out:
	free(dir);
	return r;
}

/* ---- verify ---- */

static int cache_verify(const struct cafs_cache_request *q)
{
	struct ca_store_ops_verify_opts vo = { .any_digest = q->any_digest, .digest = q->digest,
		                               .threads = q->threads, .repair = q->repair, .cache = true };
	struct ca_store_verify_stats st;
	int r;
	char *dir = cafs_cache_dir(q->cache);
	if (!dir)
		return 1;
	vo.store = dir;
	r = ca_store_ops_verify(&vo, &st); /* logs each bad chunk, and its errors */
	if (r < 0)
		goto out;
	printf("%llu chunks verified, %llu corrupt", (unsigned long long)(st.ok + st.corrupt),
	       (unsigned long long)st.corrupt);
	if (vo.repair)
		printf(", %llu removed", (unsigned long long)st.removed);
	printf("\n");
	if (st.errors || st.corrupt != st.removed)
		r = -EIO; /* each bad chunk was logged */
out:
	free(dir);
	return r < 0 ? 1 : 0;
}

/* ---- the request ---- */

#define Q(r) ((struct cafs_cache_request *)(r))

static void cache_init(struct cafs_request *r)
{
	Q(r)->min_age = CA_CACHE_PRUNE_MIN_AGE_DEFAULT;
	Q(r)->any_digest = true;
}

/* append s to the array *v of *n (ENOMEM: reported, exit code 1) */
static int push(char ***v, size_t *n, const char *s)
{
	char **k = realloc(*v, (*n + 1) * sizeof(char *));
	if (!k)
		return ca_log_error_errno(ENOMEM, "cache"), 1;
	*v = k;
	k[(*n)++] = (char *)s;
	return 0;
}

/* the parser only gives an option to the verbs its table entry names */
static int cache_set(struct cafs_request *r, int id, const char *arg)
{
	struct cafs_cache_request *q = Q(r);
	char *end;
	switch (id) {
	case CAFS_OPT_CACHE:
		q->cache = arg;
		return 0;
	case CAFS_OPT_STORE:
		return push(&q->stores, &q->n_stores, arg);
	case CAFS_OPT_THREADS:
		if (cafs_parse_threads(arg, &q->threads) < 0)
			return cafs_usage_error("cache", "invalid thread count '%s'", arg);
		return 0;
	case CAFS_OPT_RATE_LIMIT_BPS:
		if (cafs_parse_size(arg, &q->rate_limit_bps) < 0 || q->rate_limit_bps == 0)
			return cafs_usage_error("cache", "invalid rate '%s'", arg);
		return 0;
	case CAFS_TRUST_OPTION_IDS:
		return cafs_trust_option("cache", id, arg, &q->trusted);
	case CAFS_OPT_MAX_SIZE:
		if (cafs_parse_size(arg, &q->max_size) < 0)
			return cafs_usage_error("cache", "invalid size '%s'", arg);
		q->have_max = true;
		return 0;
	case CAFS_OPT_KEEP:
		return push(&q->keep, &q->n_keep, arg);
	case CAFS_OPT_MIN_AGE:
		errno = 0;
		q->min_age = strtol(arg, &end, 10);
		if (errno || *end || end == arg || q->min_age < 0)
			return cafs_usage_error("cache", "invalid age '%s'", arg);
		return 0;
	case CAFS_OPT_DRY_RUN:
		q->dry_run = true;
		return 0;
	case CAFS_OPT_REPAIR:
		q->repair = true;
		return 0;
	case CAFS_OPT_DIGEST:
		if (ca_digest_type_parse(arg, &q->digest) < 0)
			return cafs_usage_error("cache", "unknown digest '%s'", arg);
		q->any_digest = strcmp(arg, "default") == 0;
		return 0;
	case CAFS_OPT_SEED_STORE:
		q->seed_store = arg;
		return 0;
	case CAFS_OPT_JSON:
		q->json = true;
		break;
	case CAFS_OPT_DELTA:
		q->delta = arg;
		return 0;
	}
	return 0;
}

static int cache_operands(struct cafs_request *r, int n, char **arg)
{
	struct cafs_cache_request *q = Q(r);
	switch (r->verb) {
	case CAFS_CACHE_FILL:
		if (n == 0)
			return cafs_usage_error("cache", "fill needs at least one SOURCE index");
		if (q->delta && n != 1)
			return cafs_usage_error("cache", "fill --delta is for one SOURCE");
		break;
	case CAFS_CACHE_PRUNE:
		if (!q->have_max)
			return cafs_usage_error("cache", "prune needs --max-size=SIZE");
		if (n)
			return cafs_usage_error("cache", "prune takes no arguments (pin indexes with --keep)");
		break;
	case CAFS_CACHE_VERIFY:
		if (n)
			return cafs_usage_error("cache", "verify takes no arguments");
		break;
	case CAFS_CACHE_SEED:
		if (n < 2)
			return cafs_usage_error("cache", "seed needs SOURCE and at least one SEED");
		break;
	}
	q->operands = arg;
	q->n_operands = (size_t)n;
	return 0;
}

static int cache_run(struct cafs_request *r)
{
	const struct cafs_cache_request *q = Q(r);
	switch (r->verb) {
	case CAFS_CACHE_STAT:
		return cache_stat(q);
	case CAFS_CACHE_FILL:
		return cafs_cache_fill(q);
	case CAFS_CACHE_PRUNE:
		return cache_prune(q);
	case CAFS_CACHE_VERIFY:
		return cache_verify(q);
	default:
		return cafs_cache_seed(q);
	}
}

static void cache_release(struct cafs_request *r)
{
	struct cafs_cache_request *q = Q(r);
	free(q->stores);
	free(q->keep);
	cafs_trusted_keys_release(&q->trusted);
}

static const char *const cache_verbs[] = { "stat", "fill", "prune", "verify", "seed", NULL };

#define V(v) (1u << CAFS_CACHE_##v)

/* one table for all verbs: .verbs names the verbs an option is for (0:
 * all); the help says it in words ("fill: ...") */
static const struct cafs_option cache_options[] = {
	{ "cache", 0, "DIR", CAFS_OPT_CACHE,
	  .help = "the cache (default: $XDG_CACHE_HOME/cafs, ~/.cache/cafs;\n"
	  "/var/cache/cafs for root)" },
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE, .verbs = V(FILL),
	  .help = "fill: where to download from (repeatable; default: beside each index)" },
	{ "threads", 'j', "N", CAFS_OPT_THREADS, .verbs = V(FILL) | V(VERIFY),
	  .help = "fill: transfers in flight (default 8, at most 64);\n"
	  "verify: workers (default: CPUs, at most 16)" },
	{ "rate-limit-bps", 0, "N", CAFS_OPT_RATE_LIMIT_BPS, .verbs = V(FILL),
	  .help = "fill: cap the download rate (bytes/s; K, M, G suffixes)" },
	{ "trusted-key", 0, "FILE", CAFS_OPT_TRUSTED_KEY, .verbs = V(FILL),
	  .help = "fill: only indexes signed by this minisign key (repeatable)" },
	{ "allow-downgrade", 0, NULL, CAFS_OPT_ALLOW_DOWNGRADE, .verbs = V(FILL),
	  .help = "fill: accept an index signed before the newest accepted" },
	{ "signed-name", 0, "NAME", CAFS_OPT_SIGNED_NAME, .verbs = V(FILL),
	  .help = "fill: the file name its signature must give" },
	{ "delta", 0, "PACK|URL", CAFS_OPT_DELTA, .verbs = V(FILL),
	  .help = "fill: build chunks from the cache's with this delta pack\n"
	  "(default: SOURCE.cadelta-<digest of the index kept before>)" },
	{ "keep", 0, "INDEX", CAFS_OPT_KEEP, .verbs = V(PRUNE),
	  .help = "prune: never evict this index's chunks (repeatable)" },
	{ "min-age", 0, "SECONDS", CAFS_OPT_MIN_AGE, .verbs = V(PRUNE),
	  .help = "prune: spare chunks used this recently (default 5)\n"
	  "(prune also deletes *.tmp files older than an hour)" },
	{ "dry-run", 'n', NULL, CAFS_OPT_DRY_RUN, .verbs = V(PRUNE),
	  .help = "prune: only say what would go" },
	{ "digest", 0, "NAME", CAFS_OPT_DIGEST, .verbs = V(VERIFY),
	  .help = "verify: only accept this digest (default: either)" },
	{ "json", 0, NULL, CAFS_OPT_JSON, .verbs = V(STAT),
	  .help = "stat: one JSON object (docs/json.md)" },
	{ "seed-store", 0, "DIR", CAFS_OPT_SEED_STORE, .verbs = V(SEED),
	  .help = "seed: the store of index seeds (default: beside each)" },
	{ "max-size", 0, "SIZE", CAFS_OPT_MAX_SIZE, .verbs = V(PRUNE) }, /* in the verbs' lines above */
	{ "repair", 0, NULL, CAFS_OPT_REPAIR, .verbs = V(VERIFY) },
	{ NULL },
};

const struct cafs_command cafs_command_cache = {
	.name = "cache",
	.synopsis = "cache stat|fill|prune|verify|seed [OPTIONS] ...",
	.help_head = "  cache stat [SOURCE...]          chunks and bytes in the cache; how much of each index it holds\n"
	  "  cache fill SOURCE...            download every chunk the indexes need that the cache lacks\n"
	  "  cache prune --max-size=SIZE     evict least recently used chunks until the cache fits\n"
	  "  cache verify [--repair]         check every chunk against its name; --repair removes bad ones\n"
	  "  cache seed SOURCE SEED...       take SOURCE's chunks from local data: a file, device,\n"
	  "                                  .catar, index, or a directory for a .caidx\n",
	.options = cache_options,
	.help_column = 26,
	.verbs = cache_verbs,
	.request_size = sizeof(struct cafs_cache_request),
	.init = cache_init,
	.set = cache_set,
	.operands = cache_operands,
	.run = cache_run,
	.release = cache_release,
};

