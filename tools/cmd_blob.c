/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_blob.c - make, extract, digest and info: option parsing for all
 * inputs. Each is one core call between parsing and printing: make
 * (ca_image_make), extract (ca_image_seed_extract), digest of a blob index
 * or a file (ca_image_digest_blob; a file's is hashed here), info
 * (ca_store_ops_info); digest of archives and directories is in cmd_tree_*.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "chunk/chunker.h"
#include "cmd.h"
#include "format/feature.h"
#include "image/image_seed.h"
#include "image/image_make.h"
#include "image/store_ops.h"
#include "base/log.h"
#include "interrupt.h"
#include "progress.h"

enum {
	OPT_CHUNK_SIZE = 0x100,
	OPT_DIGEST,
	OPT_WITH,
	OPT_WITHOUT,
	OPT_EXCLUDE_NODUMP,
	OPT_EXCLUDE_SUBMOUNTS,
	OPT_EXCLUDE_FILE,
	OPT_META,
	OPT_OFFLINE,
	OPT_OVERLAY_XATTRS,
	OPT_PROFILE,
	/* from here on: extract's own */
	OPT_SEED,
	OPT_CACHE,
	OPT_DELETE,
	OPT_RATE_LIMIT_BPS,
	OPT_UID_SHIFT,
	OPT_UID_RANGE,
	OPT_UNDO_IMMUTABLE,
	OPT_PUNCH_HOLES,
	OPT_REFLINK,
	OPT_HARDLINK,
	OPT_EXTRACT_END, /* end of extract's own */
	OPT_COMPRESSION,
};

/* The progress bar's life follows the core's calls: begun with the total
 * (known only once the input is open), erased before an error is logged. */
static void progress_start(void *userdata, uint64_t total)
{
	struct cafs_progress *p = userdata;
	cafs_progress_init(p, p->label, total);
}

static void progress_end(void *userdata)
{
	cafs_progress_done(userdata);
}

int cafs_make_parse(int argc, char **argv, struct ca_image_make_opts *ret, const char **ret_profile)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "chunk-size", required_argument, NULL, OPT_CHUNK_SIZE },
		{ "digest", required_argument, NULL, OPT_DIGEST },
		{ "with", required_argument, NULL, OPT_WITH },
		{ "without", required_argument, NULL, OPT_WITHOUT },
		{ "exclude-nodump", required_argument, NULL, OPT_EXCLUDE_NODUMP },
		{ "exclude-submounts", required_argument, NULL, OPT_EXCLUDE_SUBMOUNTS },
		{ "exclude-file", required_argument, NULL, OPT_EXCLUDE_FILE },
		{ "meta", required_argument, NULL, OPT_META },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "uid-shift", required_argument, NULL, OPT_UID_SHIFT },
		{ "uid-range", required_argument, NULL, OPT_UID_RANGE },
		{ "threads", required_argument, NULL, 'j' },
		{ "compression", required_argument, NULL, OPT_COMPRESSION },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct ca_image_make_opts o;
	int c, verbosity = 0;
	uint64_t f;
	bool *bp;

	ca_image_make_opts_init(&o);
	*ret_profile = NULL;
	optind = 0;
	while ((c = getopt_long(argc, argv, "s:j:vqh", opts, NULL)) >= 0) {
		switch (c) {
		case 's':
			o.store = optarg;
			break;
		case OPT_CHUNK_SIZE:
			if (ca_chunk_size_parse(optarg, &o.chunk_min, &o.chunk_avg, &o.chunk_max) < 0)
				return cafs_usage_error("make", "invalid chunk size '%s'", optarg);
			break;
		case OPT_DIGEST:
			if (ca_digest_type_parse(optarg, &o.digest) < 0)
				return cafs_usage_error("make", "unknown digest '%s'", optarg);
			break;
		case OPT_WITH:
		case OPT_WITHOUT:
			if (ca_feature_parse_name(optarg, &f) < 0)
				return cafs_usage_error("make", "unknown feature '%s'", optarg);
			if (c == OPT_WITH) {
				o.with |= f;
				o.with_set = true;
			} else {
				o.without |= f;
			}
			break;
		case OPT_EXCLUDE_NODUMP:
		case OPT_EXCLUDE_SUBMOUNTS:
		case OPT_EXCLUDE_FILE:
			bp = c == OPT_EXCLUDE_NODUMP ? &o.exclude_nodump :
			     c == OPT_EXCLUDE_SUBMOUNTS ? &o.exclude_submounts : &o.exclude_file;
			if (cafs_parse_bool(optarg, bp) < 0)
				return cafs_usage_error("make", "expected yes or no, got '%s'", optarg);
			break;
		case OPT_META: {
			bool meta;
			if (cafs_parse_bool(optarg, &meta) < 0)
				return cafs_usage_error("make", "expected yes or no, got '%s'", optarg);
			o.no_sidecar = !meta;
			break;
		}
		case OPT_UID_SHIFT:
			if (cafs_parse_uid_shift(optarg, &o.uid_shift) < 0)
				return cafs_usage_error("make", "invalid uid shift '%s'", optarg);
			break;
		case OPT_PROFILE:
			*ret_profile = optarg;
			break;
		case OPT_UID_RANGE:
			if (cafs_parse_uid_range(optarg, &o.uid_shift) < 0)
				return cafs_usage_error("make", "invalid uid range '%s'", optarg);
			break;
		case 'j':
			if (cafs_parse_threads(optarg, &o.threads) < 0)
				return cafs_usage_error("make", "invalid thread count '%s'", optarg);
			break;
		case OPT_COMPRESSION: {
			struct ca_codec *codec = NULL;
			if (ca_compression_parse(optarg, &o.compression) < 0)
				return cafs_usage_error("make", "unknown compression '%s'", optarg);
			int e = ca_codec_new(CA_DIGEST_SHA512_256, &codec);
			if (e == 0)
				e = ca_codec_set_compression(codec, o.compression);
			ca_codec_free(codec);
			if (e == -EOPNOTSUPP)
				return cafs_usage_error("make", "--compression=%s: built without its library", optarg);
			if (e < 0)
				return ca_log_error_errno(e, "make"), 1;
			break;
		}
		default: {
			int e = cafs_common_option("make", c, &verbosity);
			if (e >= 0)
				return e;
			break;
		}
		}
	}
	cafs_set_verbosity(verbosity);
	*ret = o;
	return -1;
}

int cafs_cmd_make(int argc, char **argv)
{
	struct ca_image_make_opts o;
	struct cafs_progress prog = { .label = "make" };
	struct ca_make_stats stats;
	uint8_t digest[CA_CHUNK_ID_SIZE];
	const char *out, *input, *profile = NULL;
	char msg[512];
	int e = cafs_make_parse(argc, argv, &o, &profile);
	if (e >= 0)
		return e;
	if (argc - optind != 2)
		return cafs_usage_error("make", "expected OUT and INPUT");
	out = argv[optind];
	input = argv[optind + 1];
	o.profile = profile;
	/* the library refuses the same, logged; a command says it as a usage error */
	int r = ca_image_make_check(out, &o, msg, sizeof(msg));
	if (r < 0)
		return *msg ? cafs_usage_error("make", "%s", msg) : 1;
	r = cafs_interrupt_start();
	if (r < 0)
		return ca_log_error_errno(r, "signals"), 1;
	enum ca_image_kind kind = ca_location_image_kind(out);
	if (kind != CA_IMAGE_BLOB_INDEX)
		cafs_raise_fd_limit();
	o.progress_start = progress_start;
	o.progress = cafs_progress_update;
	o.progress_end = progress_end;
	o.progress_userdata = &prog;
	o.cancel = cafs_interrupt_flag();
	r = ca_image_make(out, input, &o, digest, &stats); /* logs its errors */
	if (r == 0) {
		cafs_print_digest(digest);
		if (kind != CA_IMAGE_ARCHIVE) /* a .catar has no chunks to count */
			cafs_log_make_stats(&stats);
	}
	return cafs_interrupt_exit_code(r < 0 ? 1 : 0);
}

/* Parses -s/-j/-v/-q/-h shared by extract, digest and info; collects
 * positional arguments. Returns -1 to go on, or an exit code. */
static int parse_read_opts(const char *cmd, int argc, char **argv, struct cafs_extract_args *a, char ***ret_pos,
                           int *ret_npos)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 'j' },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "cache", required_argument, NULL, OPT_CACHE },
		{ "delete", required_argument, NULL, OPT_DELETE },
		CAFS_TRUSTED_KEY_OPTION,
		CAFS_TRUST_POLICY_OPTIONS,
		{ "offline", no_argument, NULL, OPT_OFFLINE },
		{ "overlay-xattrs", no_argument, NULL, OPT_OVERLAY_XATTRS },
		{ "rate-limit-bps", required_argument, NULL, OPT_RATE_LIMIT_BPS },
		{ "uid-shift", required_argument, NULL, OPT_UID_SHIFT },
		{ "uid-range", required_argument, NULL, OPT_UID_RANGE },
		{ "undo-immutable", required_argument, NULL, OPT_UNDO_IMMUTABLE },
		{ "punch-holes", required_argument, NULL, OPT_PUNCH_HOLES },
		{ "reflink", required_argument, NULL, OPT_REFLINK },
		{ "hardlink", required_argument, NULL, OPT_HARDLINK },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c, verbosity = 0;
	while ((c = getopt_long(argc, argv, "s:j:vqh", opts, NULL)) >= 0) {
		if (((c >= OPT_SEED && c < OPT_EXTRACT_END) || c == OPT_OFFLINE || c == OPT_OVERLAY_XATTRS) &&
		    strcmp(cmd, "extract"))
			return cafs_usage_error(cmd, "--seed, --cache, --delete, --offline, --overlay-xattrs, "
			                             "--rate-limit-bps, --uid-shift, --uid-range, --undo-immutable, "
			                             "--punch-holes, --reflink and --hardlink are for extract");
		switch (c) {
		case OPT_SEED: {
			char **n = realloc(a->seeds, (a->n_seeds + 1) * sizeof(char *));
			if (!n)
				return ca_log_error_errno(ENOMEM, "%s", cmd), 1;
			a->seeds = n;
			a->seeds[a->n_seeds++] = optarg;
			break;
		}
		case OPT_CACHE:
			a->cache = optarg;
			break;
		case CAFS_OPT_ALLOW_DOWNGRADE:
		case CAFS_OPT_SIGNED_NAME: {
			int e = cafs_trust_policy_option(cmd, c, optarg, &a->trusted);
			if (e)
				return e;
			break;
		}
		case CAFS_OPT_TRUSTED_KEY: {
			int e = cafs_trusted_key_add(cmd, &a->trusted, optarg);
			if (e)
				return e;
			break;
		}
		case OPT_OFFLINE:
			a->offline = true;
			break;
		case OPT_OVERLAY_XATTRS:
			a->overlay_xattrs = true;
			break;
		case OPT_RATE_LIMIT_BPS:
			if (cafs_parse_size(optarg, &a->rate_limit_bps) < 0 || a->rate_limit_bps == 0)
				return cafs_usage_error(cmd, "invalid rate '%s'", optarg);
			break;
		case OPT_UID_SHIFT:
			if (cafs_parse_uid_shift(optarg, &a->uid_shift) < 0)
				return cafs_usage_error(cmd, "invalid uid shift '%s'", optarg);
			break;
		case OPT_UID_RANGE:
			if (cafs_parse_uid_range(optarg, &a->uid_shift) < 0)
				return cafs_usage_error(cmd, "invalid uid range '%s'", optarg);
			break;
		case OPT_UNDO_IMMUTABLE:
			if (cafs_parse_bool(optarg, &a->undo_immutable) < 0)
				return cafs_usage_error(cmd, "expected yes or no, got '%s'", optarg);
			break;
		case OPT_PUNCH_HOLES: {
			bool holes;
			if (cafs_parse_bool(optarg, &holes) < 0)
				return cafs_usage_error(cmd, "expected yes or no, got '%s'", optarg);
			a->no_holes = !holes;
			break;
		}
		case OPT_REFLINK: {
			bool reflink;
			if (cafs_parse_bool(optarg, &reflink) < 0)
				return cafs_usage_error(cmd, "expected yes or no, got '%s'", optarg);
			a->no_reflink = !reflink;
			break;
		}
		case OPT_HARDLINK:
			if (cafs_parse_bool(optarg, &a->hardlink) < 0)
				return cafs_usage_error(cmd, "expected yes or no, got '%s'", optarg);
			break;
		case OPT_DELETE: {
			bool del;
			if (cafs_parse_bool(optarg, &del) < 0)
				return cafs_usage_error(cmd, "expected yes or no, got '%s'", optarg);
			a->no_delete = !del;
			break;
		}
		case 's': {
			char **n = realloc(a->stores, (a->n_stores + 1) * sizeof(char *));
			if (!n)
				return ca_log_error_errno(ENOMEM, "%s", cmd), 1;
			a->stores = n;
			a->stores[a->n_stores++] = optarg;
			break;
		}
		case 'j':
			if (cafs_parse_threads(optarg, &a->threads) < 0)
				return cafs_usage_error(cmd, "invalid thread count '%s'", optarg);
			break;
		default: {
			int e = cafs_common_option(cmd, c, &verbosity);
			if (e >= 0)
				return e;
			break;
		}
		}
	}
	cafs_set_verbosity(verbosity);
	*ret_pos = argv + optind;
	*ret_npos = argc - optind;
	return -1;
}

/* the parsed arguments into the one core call */
static int extract_image(const struct cafs_extract_args *a)
{
	struct ca_image_opts io = { .stores = a->stores, .n_stores = a->n_stores };
	struct cafs_progress prog = { .label = "extract" };
	cafs_trusted_keys_apply(&a->trusted, &io);
	struct ca_image_seed_extract_opts o = {
		.path = a->path, .io = &io, .threads = a->threads, .seeds = a->seeds, .n_seeds = a->n_seeds,
		.cache = a->cache, .offline = a->offline, .rate_limit_bps = a->rate_limit_bps,
		.no_delete = a->no_delete, .overlay_xattrs = a->overlay_xattrs, .undo_immutable = a->undo_immutable,
		.no_holes = a->no_holes, .uid_shift = a->uid_shift, .no_reflink = a->no_reflink, .hardlink = a->hardlink,
		.cancel = cafs_interrupt_flag(),
		.progress_start = progress_start, .progress = cafs_progress_update, .progress_end = progress_end,
		.progress_userdata = &prog,
	};
	return ca_image_seed_extract(a->in, a->out, &o) < 0 ? 1 : 0; /* logs its errors */
}

int cafs_cmd_extract(int argc, char **argv)
{
	struct cafs_extract_args a = { 0 };
	char **pos;
	int npos, r;
	r = parse_read_opts("extract", argc, argv, &a, &pos, &npos);
	if (r < 0) {
		if (npos != 2 && npos != 3) {
			r = cafs_usage_error("extract", "expected IN OUT [PATH]");
		} else {
			a.in = pos[0];
			a.out = pos[1];
			a.path = npos == 3 ? pos[2] : NULL;
			enum ca_image_kind kind = ca_location_image_kind(a.in);
			if (kind == CA_IMAGE_UNKNOWN) {
				r = cafs_usage_error("extract", "%s: input must end in .caibx, .caidx or .catar", a.in);
			} else if (a.path && kind == CA_IMAGE_BLOB_INDEX) {
				r = cafs_usage_error("extract", "%s: PATH is for archives (.catar, .caidx)", a.in);
			} else if ((r = cafs_interrupt_start()) < 0) {
				ca_log_error_errno(r, "signals");
				r = 1;
			} else {
				r = cafs_interrupt_exit_code(extract_image(&a));
			}
		}
	}
	free(a.stores);
	free(a.seeds);
	cafs_trusted_keys_release(&a.trusted);
	return r;
}

/* digest of a blob index: read the blob back through the store */
static int digest_blob_index(const char *path, char **stores, size_t n_stores, const struct cafs_trusted_keys *tk)
{
	struct ca_image_opts io = { .stores = stores, .n_stores = n_stores };
	uint8_t out[CA_CHUNK_ID_SIZE];
	cafs_trusted_keys_apply(tk, &io);
	if (ca_image_digest_blob(path, &io, out) < 0) /* logs its errors */
		return 1;
	cafs_print_digest(out);
	return 0;
}

static int digest_file(const char *path, enum ca_digest_type t)
{
	uint8_t out[CA_CHUNK_ID_SIZE];
	if (ca_image_digest_file(path, t, out) < 0) /* logs its errors */
		return 1;
	cafs_print_digest(out);
	return 0;
}

int cafs_cmd_digest(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "digest", required_argument, NULL, OPT_DIGEST },
		CAFS_TRUSTED_KEY_OPTION,
		CAFS_TRUST_POLICY_OPTIONS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	enum ca_digest_type t = CA_DIGEST_SHA512_256;
	struct cafs_trusted_keys tk = { 0 };
	char **stores = NULL;
	size_t n_stores = 0;
	int c, r, verbosity = 0;
	struct stat st;

	while ((c = getopt_long(argc, argv, "s:vqh", opts, NULL)) >= 0) {
		switch (c) {
		case 's': {
			char **n = realloc(stores, (n_stores + 1) * sizeof(char *));
			if (!n) {
				free(stores);
				return ca_log_error_errno(ENOMEM, "digest"), 1;
			}
			stores = n;
			stores[n_stores++] = optarg;
			break;
		}
		case OPT_DIGEST:
			if (ca_digest_type_parse(optarg, &t) < 0) {
				r = cafs_usage_error("digest", "unknown digest '%s'", optarg);
				goto out;
			}
			break;
		case CAFS_OPT_ALLOW_DOWNGRADE:
		case CAFS_OPT_SIGNED_NAME:
			r = cafs_trust_policy_option("digest", c, optarg, &tk);
			if (r)
				goto out;
			break;
		case CAFS_OPT_TRUSTED_KEY:
			r = cafs_trusted_key_add("digest", &tk, optarg);
			if (r)
				goto out;
			break;
		default: {
			r = cafs_common_option("digest", c, &verbosity);
			if (r >= 0)
				goto out;
			break;
		}
		}
	}
	cafs_set_verbosity(verbosity);
	if (argc - optind != 1 && argc - optind != 2) {
		r = cafs_usage_error("digest", "expected INPUT [PATH]");
		goto out;
	}
	const char *in = argv[optind], *sub = argc - optind == 2 ? argv[optind + 1] : NULL;
	enum ca_image_kind kind = ca_location_image_kind(in);
	if (sub && kind != CA_IMAGE_ARCHIVE && kind != CA_IMAGE_ARCHIVE_INDEX) {
		r = cafs_usage_error("digest", "%s: PATH is for archives (.catar, .caidx)", in);
		goto out;
	}
	switch (kind) {
	case CA_IMAGE_BLOB_INDEX:
		r = digest_blob_index(in, stores, n_stores, &tk);
		break;
	case CA_IMAGE_ARCHIVE:
	case CA_IMAGE_ARCHIVE_INDEX:
		r = cafs_digest_tree(in, stores, n_stores, sub, &tk, t);
		break;
	default:
		if (strcmp(in, "-") && stat(in, &st) == 0 && S_ISDIR(st.st_mode))
			r = cafs_digest_tree(in, stores, n_stores, NULL, &tk, t);
		else
			r = digest_file(in, t);
	}
out:
	cafs_trusted_keys_release(&tk);
	free(stores);
	return r;
}

int cafs_cmd_info(int argc, char **argv)
{
	struct cafs_extract_args a = { 0 };
	char **pos;
	int npos, r;

	r = parse_read_opts("info", argc, argv, &a, &pos, &npos);
	if (r >= 0)
		goto out;
	if (npos != 1) {
		r = cafs_usage_error("info", "expected one INDEX");
		goto out;
	}
	r = 1;
	struct ca_image_opts io = { 0 };
	struct ca_store_ops_info in;
	cafs_trusted_keys_apply(&a.trusted, &io);
	if (ca_store_ops_info(pos[0], &io, a.stores, a.n_stores, &in) < 0) /* logs its errors */
		goto out;
	printf("Kind: %s\n", in.archive_index ? "archive index" : "blob index");
	printf("Feature flags: 0x%016llx%s%s\n", (unsigned long long)in.flags, *in.flag_names ? " " : "", in.flag_names);
	printf("Digest: %s\n", in.digest);
	printf("Chunk size: min %llu, avg %llu, max %llu\n", (unsigned long long)in.chunk_min,
	       (unsigned long long)in.chunk_avg, (unsigned long long)in.chunk_max);
	printf("Size: %llu bytes\n", (unsigned long long)in.size);
	printf("Chunks: %llu\n", (unsigned long long)in.chunks);
	if (in.chunks)
		printf("Chunk sizes: smallest %llu, median %llu, mean %llu, largest %llu\n",
		       (unsigned long long)in.smallest, (unsigned long long)in.median,
		       (unsigned long long)(in.size / in.chunks), (unsigned long long)in.largest);
	if (in.in_stores) {
		char *shown = a.n_stores == 1 ? ca_location_redact(a.stores[0]) : NULL;
		printf("In %s%s: %llu of %llu chunks, %llu of %llu bytes\n", a.n_stores == 1 ? "store " : "the stores given",
		       a.n_stores == 1 ? (shown ? shown : "(store)") : "", (unsigned long long)in.present,
		       (unsigned long long)in.chunks, (unsigned long long)in.present_bytes, (unsigned long long)in.size);
		free(shown);
	}
	r = 0;
out:
	free(a.stores);
	cafs_trusted_keys_release(&a.trusted);
	return r;
}
