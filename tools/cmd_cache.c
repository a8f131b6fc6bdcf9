/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_cache.c - `cafs cache stat|fill|prune|verify|seed`: the chunk cache
 * (a casync-layout store shared by the mount, extract --cache and fill).
 * fill is in cmd_cache_fill.c, seed in cache_seed.c. Each verb is one
 * core call (image/store_ops.h): here are options and messages.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "base/log.h"
#include "cmd.h"
#include "image/store_ops.h"

enum { OPT_CACHE = 0x100, OPT_MAX_SIZE, OPT_KEEP, OPT_MIN_AGE, OPT_REPAIR, OPT_DIGEST };

/* ---- stat ---- */

static int source_presence(const char *dir, const char *source)
{
	struct ca_store_ops_presence p;
	int r = ca_store_ops_presence(dir, source, &p); /* logs its errors */
	if (r < 0)
		return r;
	printf("%s: %llu of %llu chunks, %llu of %llu bytes, %.1f%%\n", p.shown ? p.shown : "(source)",
	       (unsigned long long)p.have, (unsigned long long)p.chunks, (unsigned long long)p.have_bytes,
	       (unsigned long long)p.bytes, p.bytes ? 100.0 * (double)p.have_bytes / (double)p.bytes : 100.0);
	free(p.shown);
	return 0;
}

/* Options shared by the verbs: --cache, -j, -v, -q, -h plus the verb's own. */
static int common_opt(int c, const char **cache, int *verbosity)
{
	if (c == OPT_CACHE) {
		*cache = optarg;
		return 0;
	}
	int e = cafs_common_option(&cafs_command_cache, c, verbosity);
	return e < 0 ? 0 : e == 0 ? 1 : e; /* 0 go on, 1 help shown, 2 usage */
}

static int cache_stat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cache", required_argument, NULL, OPT_CACHE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *cache_opt = NULL;
	int c, verbosity = 0, r;
	while ((c = getopt_long(argc, argv, "vqh", opts, NULL)) >= 0)
		if ((r = common_opt(c, &cache_opt, &verbosity)) != 0)
			return r == 1 ? 0 : r;
	cafs_set_verbosity(verbosity);

	char *dir = cafs_cache_dir(cache_opt);
	struct ca_store_ops_stat a;
	char h1[32], h2[32];
	if (!dir)
		return 1;
	r = ca_store_ops_stat(dir, &a); /* logs its errors */
	if (r < 0)
		goto out;
	cafs_format_size(a.bytes, h1, sizeof(h1));
	cafs_format_size(a.disk, h2, sizeof(h2));
	printf("Cache: %s\n", dir);
	printf("Chunks: %llu\n", (unsigned long long)a.chunks);
	printf("Size: %llu bytes (%s, %s on disk)\n", (unsigned long long)a.bytes, h1, h2);
	if (a.tmp)
		printf("Temporary files: %llu\n", (unsigned long long)a.tmp);
	for (int i = optind; i < argc; i++)
		if (source_presence(dir, argv[i]) < 0)
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

static int cache_prune(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cache", required_argument, NULL, OPT_CACHE },
		{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
		{ "keep", required_argument, NULL, OPT_KEEP },
		{ "min-age", required_argument, NULL, OPT_MIN_AGE },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *cache_opt = NULL;
	char **keep = NULL;
	size_t n_keep = 0;
	uint64_t max_size = 0;
	bool have_max = false, dry_run = false;
	long min_age = CA_CACHE_PRUNE_MIN_AGE_DEFAULT;
	int c, verbosity = 0, r = 0;
	char *dir = NULL;

	while ((c = getopt_long(argc, argv, "nvqh", opts, NULL)) >= 0) {
		switch (c) {
		case OPT_MAX_SIZE:
			if (cafs_parse_size(optarg, &max_size) < 0) {
				r = cafs_usage_error("cache", "invalid size '%s'", optarg);
				goto out;
			}
			have_max = true;
			break;
		case OPT_KEEP: {
			char **k = realloc(keep, (n_keep + 1) * sizeof(char *));
			if (!k) {
				ca_log_error_errno(ENOMEM, "cache");
				r = 1;
				goto out;
			}
			keep = k;
			keep[n_keep++] = optarg;
			break;
		}
		case OPT_MIN_AGE: {
			char *end;
			errno = 0;
			min_age = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || min_age < 0) {
				r = cafs_usage_error("cache", "invalid age '%s'", optarg);
				goto out;
			}
			break;
		}
		case 'n':
			dry_run = true;
			break;
		default:
			if ((r = common_opt(c, &cache_opt, &verbosity)) != 0) {
				r = r == 1 ? 0 : r;
				goto out;
			}
		}
	}
	cafs_set_verbosity(verbosity);
	if (!have_max) {
		r = cafs_usage_error("cache", "prune needs --max-size=SIZE");
		goto out;
	}
	if (optind != argc) {
		r = cafs_usage_error("cache", "prune takes no arguments (pin indexes with --keep)");
		goto out;
	}
	r = 1;
	dir = cafs_cache_dir(cache_opt);
	if (!dir)
		goto out;
	struct ca_store_ops_prune_opts po = { .cache = dir, .max_size = max_size, .keep = keep, .n_keep = n_keep,
		                              .min_age = min_age, .dry_run = dry_run,
		                              .on_victim = dry_run ? prune_victim : NULL };
	struct ca_cache_prune_stats st;
	bool failed;
	if (ca_store_ops_prune(&po, &st, &failed) < 0) /* logs its errors */
		goto out;
	r = failed ? 1 : 0; /* each failed chunk was logged; the rest went */
	char h1[32], h2[32], h3[32];
	cafs_format_size(st.victim_bytes, h1, sizeof(h1));
	cafs_format_size(st.left_bytes, h2, sizeof(h2));
	cafs_format_size(max_size, h3, sizeof(h3));
	printf("%s %llu chunks (%s); cache now %llu chunks, %llu bytes (%s)\n", dry_run ? "would remove" : "removed",
	       (unsigned long long)st.victims, h1, (unsigned long long)st.left_chunks,
	       (unsigned long long)st.left_bytes, h2);
	if (!dry_run && st.stale_tmp)
		printf("removed %llu stale temporary files\n", (unsigned long long)st.stale_tmp);
	if (st.left_bytes > max_size)
		ca_log_warning("cache: %s: still above %s: the rest is pinned by --keep or used in the last %ld s",
		               dir, h3, min_age);
out:
	free(dir);
	free(keep);
	return r;
}

/* ---- verify ---- */

static int cache_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cache", required_argument, NULL, OPT_CACHE },
		{ "repair", no_argument, NULL, OPT_REPAIR },
		{ "digest", required_argument, NULL, OPT_DIGEST },
		{ "threads", required_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *cache_opt = NULL;
	struct ca_store_ops_verify_opts vo = { .any_digest = true };
	struct ca_store_verify_stats st;
	int c, verbosity = 0, r;

	while ((c = getopt_long(argc, argv, "j:vqh", opts, NULL)) >= 0) {
		switch (c) {
		case OPT_REPAIR:
			vo.repair = true;
			break;
		case OPT_DIGEST:
			if (ca_digest_type_parse(optarg, &vo.digest) < 0)
				return cafs_usage_error("cache", "unknown digest '%s'", optarg);
			vo.any_digest = strcmp(optarg, "default") == 0;
			break;
		case 'j':
			if (cafs_parse_threads(optarg, &vo.threads) < 0)
				return cafs_usage_error("cache", "invalid thread count '%s'", optarg);
			break;
		default:
			if ((r = common_opt(c, &cache_opt, &verbosity)) != 0)
				return r == 1 ? 0 : r;
		}
	}
	cafs_set_verbosity(verbosity);
	if (optind != argc)
		return cafs_usage_error("cache", "verify takes no arguments");
	char *dir = cafs_cache_dir(cache_opt);
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

static int cache_main(int argc, char **argv)
{
	if (argc < 2)
		return cafs_usage_error("cache", "expected a verb: stat, fill, prune, verify or seed");
	const char *verb = argv[1];
	if (!strcmp(verb, "-h") || !strcmp(verb, "--help")) {
		cafs_command_help(&cafs_command_cache, stdout);
		return 0;
	}
	/* getopt prefixes its messages with argv[0] */
	char name[64];
	snprintf(name, sizeof(name), "cafs: cache %s", verb);
	argc--, argv++;
	argv[0] = name;
	if (!strcmp(verb, "stat"))
		return cache_stat(argc, argv);
	if (!strcmp(verb, "fill"))
		return cafs_cache_fill(argc, argv);
	if (!strcmp(verb, "prune"))
		return cache_prune(argc, argv);
	if (!strcmp(verb, "verify"))
		return cache_verify(argc, argv);
	if (!strcmp(verb, "seed"))
		return cafs_cache_seed(argc, argv);
	return cafs_usage_error("cache", "unknown verb '%s'", verb);
}

/* the options for the help; cache_main parses each verb's own */
static const struct cafs_option cache_options[] = {
	{ "cache", 0, "DIR", CAFS_OPT_CACHE,
	  .help = "the cache (default: $XDG_CACHE_HOME/cafs, ~/.cache/cafs;\n"
	  "/var/cache/cafs for root)" },
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE,
	  .help = "fill: where to download from (repeatable; default: beside each index)" },
	{ "threads", 'j', "N", CAFS_OPT_THREADS,
	  .help = "fill: transfers in flight (default 8, at most 64);\n"
	  "verify: workers (default: CPUs, at most 16)" },
	{ "rate-limit-bps", 0, "N", CAFS_OPT_RATE_LIMIT_BPS,
	  .help = "fill: cap the download rate (bytes/s; K, M, G suffixes)" },
	{ "trusted-key", 0, "FILE", CAFS_OPT_TRUSTED_KEY,
	  .help = "fill: only indexes signed by this minisign key (repeatable)" },
	{ "allow-downgrade", 0, NULL, CAFS_OPT_ALLOW_DOWNGRADE,
	  .help = "fill: accept an index signed before the newest accepted" },
	{ "signed-name", 0, "NAME", CAFS_OPT_SIGNED_NAME,
	  .help = "fill: the file name its signature must give" },
	{ "keep", 0, "INDEX", CAFS_OPT_KEEP,
	  .help = "prune: never evict this index's chunks (repeatable)" },
	{ "min-age", 0, "SECONDS", CAFS_OPT_MIN_AGE,
	  .help = "prune: spare chunks used this recently (default 5)\n"
	  "(prune also deletes *.tmp files older than an hour)" },
	{ "dry-run", 'n', NULL, CAFS_OPT_DRY_RUN,
	  .help = "prune: only say what would go" },
	{ "digest", 0, "NAME", CAFS_OPT_DIGEST,
	  .help = "verify: only accept this digest (default: either)" },
	{ "seed-store", 0, "DIR", CAFS_OPT_SEED_STORE,
	  .help = "seed: the store of index seeds (default: beside each)" },
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
	.main = cache_main,
};

