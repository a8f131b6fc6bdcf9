/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_blob.c - make, extract, digest and info: option parsing for all
 * inputs. Each is one core call between parsing and printing: make
 * (ca_image_make), extract (ca_image_seed_extract), digest of a blob index
 * or a file (ca_image_digest_blob, ca_image_digest_file), info
 * (ca_store_ops_info); digest of archives and directories is in cmd_tree_*.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "cmd.h"
#include "image/image_make.h"
#include "image/image_seed.h"
#include "image/store_ops.h"
#include "base/json_out.h"
#include "base/log.h"
#include "interrupt.h"
#include "progress.h"

/* what `cafs digest` is asked to do */
struct cafs_digest_request {
	struct cafs_request base;
	char **stores;
	size_t n_stores;
	enum ca_digest_type type; /* --digest: of a plain file or a directory */
	struct cafs_trusted_keys trusted;
	const char *in, *sub;
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

static void make_init(struct cafs_request *q)
{
	ca_image_make_opts_init(&((struct cafs_make_request *)q)->opts);
}

static int make_set(struct cafs_request *q, int id, const char *arg)
{
	struct cafs_make_request *m = (struct cafs_make_request *)q;
	struct ca_image_make_opts *o = &m->opts;
	bool *bp;

	switch (id) {
	case CAFS_OPT_STORE:
		o->store = arg;
		return 0;
	case CAFS_OPT_CHUNK_SIZE:
		if (ca_image_make_set_chunk_size(o, arg) < 0)
			return cafs_usage_error("make", "invalid chunk size '%s'", arg);
		return 0;
	case CAFS_OPT_DIGEST:
		if (ca_digest_type_parse(arg, &o->digest) < 0)
			return cafs_usage_error("make", "unknown digest '%s'", arg);
		return 0;
	case CAFS_OPT_WITH:
	case CAFS_OPT_WITHOUT:
		if (ca_image_make_set_feature(o, arg, id == CAFS_OPT_WITH) < 0)
			return cafs_usage_error("make", "unknown feature '%s'", arg);
		return 0;
	case CAFS_OPT_EXCLUDE_NODUMP:
	case CAFS_OPT_EXCLUDE_SUBMOUNTS:
	case CAFS_OPT_EXCLUDE_FILE:
		bp = id == CAFS_OPT_EXCLUDE_NODUMP ? &o->exclude_nodump :
		     id == CAFS_OPT_EXCLUDE_SUBMOUNTS ? &o->exclude_submounts : &o->exclude_file;
		if (cafs_parse_bool(arg, bp) < 0)
			return cafs_usage_error("make", "expected yes or no, got '%s'", arg);
		return 0;
	case CAFS_OPT_META: {
		bool meta;
		if (cafs_parse_bool(arg, &meta) < 0)
			return cafs_usage_error("make", "expected yes or no, got '%s'", arg);
		o->no_sidecar = !meta;
		return 0;
	}
	case CAFS_OPT_UID_SHIFT:
		if (cafs_parse_uid_shift(arg, &o->uid_shift) < 0)
			return cafs_usage_error("make", "invalid uid shift '%s'", arg);
		return 0;
	case CAFS_OPT_PROFILE:
		m->profile = arg;
		return 0;
	case CAFS_OPT_CACHE:
		o->cache = arg;
		return 0;
	case CAFS_OPT_UID_RANGE:
		if (cafs_parse_uid_range(arg, &o->uid_shift) < 0)
			return cafs_usage_error("make", "invalid uid range '%s'", arg);
		return 0;
	case CAFS_OPT_THREADS:
		if (cafs_parse_threads(arg, &o->threads) < 0)
			return cafs_usage_error("make", "invalid thread count '%s'", arg);
		return 0;
	case CAFS_OPT_COMPRESSION: {
		int e = ca_image_make_set_compression(o, arg);
		if (e == -EINVAL)
			return cafs_usage_error("make", "unknown compression '%s'", arg);
		if (e == -EOPNOTSUPP)
			return cafs_usage_error("make", "--compression=%s: built without its library", arg);
		if (e < 0)
			return ca_log_error_errno(e, "make"), 1;
		return 0;
	}
	default:
		return 0;
	}
}

static int make_operands(struct cafs_request *q, int n, char **arg)
{
	struct cafs_make_request *m = (struct cafs_make_request *)q;
	if (n != 2)
		return cafs_usage_error("make", "expected OUT and INPUT");
	m->out = arg[0];
	m->input = arg[1];
	return 0;
}

static int make_run(struct cafs_request *q)
{
	struct cafs_make_request *m = (struct cafs_make_request *)q;
	struct ca_image_make_opts o = m->opts;
	struct cafs_progress prog = { .label = "make" };
	struct ca_make_stats stats;
	uint8_t digest[CA_CHUNK_ID_SIZE];
	char msg[512];
	o.profile = m->profile;
	/* the library refuses the same, logged; a command says it as a usage error */
	int r = ca_image_make_check(m->out, &o, msg, sizeof(msg));
	if (r < 0)
		return *msg ? cafs_usage_error("make", "%s", msg) : 1;
	r = cafs_interrupt_start();
	if (r < 0)
		return ca_log_error_errno(r, "signals"), 1;
	enum ca_image_kind kind = ca_location_image_kind(m->out);
	if (kind != CA_IMAGE_BLOB_INDEX)
		cafs_raise_fd_limit();
	o.progress_start = progress_start;
	o.progress = cafs_progress_update;
	o.progress_end = progress_end;
	o.progress_userdata = &prog;
	o.cancel = cafs_interrupt_flag();
	r = ca_image_make(m->out, m->input, &o, digest, &stats); /* logs its errors */
	if (r == 0) {
		if (!stats.digest_partial)
			cafs_print_digest(digest);
		else /* the bytes skipped were not hashed */
			ca_log_info("stream digest not computed (--cache skipped unchanged data): "
			            "cafs digest %s prints it", m->out);
		if (kind != CA_IMAGE_ARCHIVE) /* a .catar has no chunks to count */
			cafs_log_make_stats(&stats);
	}
	return cafs_interrupt_exit_code(r < 0 ? 1 : 0);
}

/* An option of extract or info into a (cmd: which, for messages). */
static int read_set(const char *cmd, struct cafs_extract_args *a, int id, const char *arg)
{
	switch (id) {
	case CAFS_OPT_SEED: {
		char **n = realloc(a->seeds, (a->n_seeds + 1) * sizeof(char *));
		if (!n)
			return ca_log_error_errno(ENOMEM, "%s", cmd), 1;
		a->seeds = n;
		a->seeds[a->n_seeds++] = (char *)arg;
		return 0;
	}
	case CAFS_OPT_CACHE:
		a->cache = arg;
		return 0;
	case CAFS_OPT_DELTA:
		a->delta = arg;
		return 0;
	case CAFS_TRUST_OPTION_IDS:
		return cafs_trust_option(cmd, id, arg, &a->trusted);
	case CAFS_OPT_OFFLINE:
		a->offline = true;
		return 0;
	case CAFS_OPT_OVERLAY_XATTRS:
		a->overlay_xattrs = true;
		return 0;
	case CAFS_OPT_RATE_LIMIT_BPS:
		if (cafs_parse_size(arg, &a->rate_limit_bps) < 0 || a->rate_limit_bps == 0)
			return cafs_usage_error(cmd, "invalid rate '%s'", arg);
		return 0;
	case CAFS_OPT_UID_SHIFT:
		if (cafs_parse_uid_shift(arg, &a->uid_shift) < 0)
			return cafs_usage_error(cmd, "invalid uid shift '%s'", arg);
		return 0;
	case CAFS_OPT_UID_RANGE:
		if (cafs_parse_uid_range(arg, &a->uid_shift) < 0)
			return cafs_usage_error(cmd, "invalid uid range '%s'", arg);
		return 0;
	case CAFS_OPT_UNDO_IMMUTABLE:
		if (cafs_parse_bool(arg, &a->undo_immutable) < 0)
			return cafs_usage_error(cmd, "expected yes or no, got '%s'", arg);
		return 0;
	case CAFS_OPT_PUNCH_HOLES: {
		bool holes;
		if (cafs_parse_bool(arg, &holes) < 0)
			return cafs_usage_error(cmd, "expected yes or no, got '%s'", arg);
		a->no_holes = !holes;
		return 0;
	}
	case CAFS_OPT_REFLINK: {
		bool reflink;
		if (cafs_parse_bool(arg, &reflink) < 0)
			return cafs_usage_error(cmd, "expected yes or no, got '%s'", arg);
		a->no_reflink = !reflink;
		return 0;
	}
	case CAFS_OPT_HARDLINK:
		if (cafs_parse_bool(arg, &a->hardlink) < 0)
			return cafs_usage_error(cmd, "expected yes or no, got '%s'", arg);
		return 0;
	case CAFS_OPT_DELETE: {
		bool del;
		if (cafs_parse_bool(arg, &del) < 0)
			return cafs_usage_error(cmd, "expected yes or no, got '%s'", arg);
		a->no_delete = !del;
		return 0;
	}
	case CAFS_OPT_STORE: {
		char **n = realloc(a->stores, (a->n_stores + 1) * sizeof(char *));
		if (!n)
			return ca_log_error_errno(ENOMEM, "%s", cmd), 1;
		a->stores = n;
		a->stores[a->n_stores++] = (char *)arg;
		return 0;
	}
	case CAFS_OPT_THREADS:
		if (cafs_parse_threads(arg, &a->threads) < 0)
			return cafs_usage_error(cmd, "invalid thread count '%s'", arg);
		return 0;
	default:
		return 0;
	}
}

/* the parsed arguments into the one core call */
static int extract_image(const struct cafs_extract_args *a)
{
	struct ca_image_opts io = { .stores = a->stores, .n_stores = a->n_stores };
	struct cafs_progress prog = { .label = "extract" };
	cafs_trusted_keys_apply(&a->trusted, &io);
	struct ca_image_seed_extract_opts o = {
		.path = a->path, .io = &io, .threads = a->threads, .seeds = a->seeds, .n_seeds = a->n_seeds,
		.cache = a->cache, .delta = a->delta, .offline = a->offline, .rate_limit_bps = a->rate_limit_bps,
		.no_delete = a->no_delete, .overlay_xattrs = a->overlay_xattrs, .undo_immutable = a->undo_immutable,
		.no_holes = a->no_holes, .uid_shift = a->uid_shift, .no_reflink = a->no_reflink, .hardlink = a->hardlink,
		.cancel = cafs_interrupt_flag(),
		.progress_start = progress_start, .progress = cafs_progress_update, .progress_end = progress_end,
		.progress_userdata = &prog,
	};
	return ca_image_seed_extract(a->in, a->out, &o) < 0 ? 1 : 0; /* logs its errors */
}

static int extract_set(struct cafs_request *q, int id, const char *arg)
{
	return read_set("extract", (struct cafs_extract_args *)q, id, arg);
}

static int extract_operands(struct cafs_request *q, int n, char **arg)
{
	struct cafs_extract_args *a = (struct cafs_extract_args *)q;
	if (n != 2 && n != 3)
		return cafs_usage_error("extract", "expected IN OUT [PATH]");
	a->in = arg[0];
	a->out = arg[1];
	a->path = n == 3 ? arg[2] : NULL;
	return 0;
}

static int extract_run(struct cafs_request *q)
{
	struct cafs_extract_args *a = (struct cafs_extract_args *)q;
	enum ca_image_kind kind = ca_location_image_kind(a->in);
	int r;
	if (kind == CA_IMAGE_UNKNOWN)
		return cafs_usage_error("extract", "%s: input must end in .caibx, .caidx or .catar", a->in);
	if (a->path && kind == CA_IMAGE_BLOB_INDEX)
		return cafs_usage_error("extract", "%s: PATH is for archives (.catar, .caidx)", a->in);
	if ((r = cafs_interrupt_start()) < 0)
		return ca_log_error_errno(r, "signals"), 1;
	return cafs_interrupt_exit_code(extract_image(a));
}

/* extract's and info's */
static void read_release(struct cafs_request *q)
{
	struct cafs_extract_args *a = (struct cafs_extract_args *)q;
	free(a->stores);
	free(a->seeds);
	cafs_trusted_keys_release(&a->trusted);
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

static void digest_init(struct cafs_request *q)
{
	((struct cafs_digest_request *)q)->type = CA_DIGEST_SHA512_256;
}

static int digest_set(struct cafs_request *q, int id, const char *arg)
{
	struct cafs_digest_request *d = (struct cafs_digest_request *)q;
	switch (id) {
	case CAFS_OPT_STORE: {
		char **n = realloc(d->stores, (d->n_stores + 1) * sizeof(char *));
		if (!n)
			return ca_log_error_errno(ENOMEM, "digest"), 1;
		d->stores = n;
		d->stores[d->n_stores++] = (char *)arg;
		return 0;
	}
	case CAFS_OPT_DIGEST:
		if (ca_digest_type_parse(arg, &d->type) < 0)
			return cafs_usage_error("digest", "unknown digest '%s'", arg);
		return 0;
	case CAFS_TRUST_OPTION_IDS:
		return cafs_trust_option("digest", id, arg, &d->trusted);
	default:
		return 0;
	}
}

static int digest_operands(struct cafs_request *q, int n, char **arg)
{
	struct cafs_digest_request *d = (struct cafs_digest_request *)q;
	if (n != 1 && n != 2)
		return cafs_usage_error("digest", "expected INPUT [PATH]");
	d->in = arg[0];
	d->sub = n == 2 ? arg[1] : NULL;
	return 0;
}

static void digest_release(struct cafs_request *q)
{
	struct cafs_digest_request *d = (struct cafs_digest_request *)q;
	cafs_trusted_keys_release(&d->trusted);
	free(d->stores);
}

static int digest_run(struct cafs_request *q)
{
	struct cafs_digest_request *d = (struct cafs_digest_request *)q;
	const char *in = d->in, *sub = d->sub;
	struct stat st;
	int r;

	enum ca_image_kind kind = ca_location_image_kind(in);
	if (sub && kind != CA_IMAGE_ARCHIVE && kind != CA_IMAGE_ARCHIVE_INDEX)
		return cafs_usage_error("digest", "%s: PATH is for archives (.catar, .caidx)", in);
	switch (kind) {
	case CA_IMAGE_BLOB_INDEX:
		r = digest_blob_index(in, d->stores, d->n_stores, &d->trusted);
		break;
	case CA_IMAGE_ARCHIVE:
	case CA_IMAGE_ARCHIVE_INDEX:
		r = cafs_digest_tree(in, d->stores, d->n_stores, sub, &d->trusted, d->type);
		break;
	default:
		if (strcmp(in, "-") && stat(in, &st) == 0 && S_ISDIR(st.st_mode))
			r = cafs_digest_tree(in, d->stores, d->n_stores, NULL, &d->trusted, d->type);
		else
			r = digest_file(in, d->type);
	}
	return r;
}

static int info_set(struct cafs_request *q, int id, const char *arg)
{
	switch (id) {
	case CAFS_OPT_STORE:
	case CAFS_OPT_THREADS:
	case CAFS_TRUST_OPTION_IDS:
	case 'v':
	case 'q':
		return read_set("info", (struct cafs_extract_args *)q, id, arg);
	case CAFS_OPT_JSON:
		((struct cafs_extract_args *)q)->json = true;
		return 0;
	default: /* the hidden rest of info's table: extract's */
		return cafs_usage_error("info", "--seed, --cache, --delete, --offline, --overlay-xattrs, "
		                                "--rate-limit-bps, --uid-shift, --uid-range, --undo-immutable, "
		                                "--punch-holes, --reflink and --hardlink are for extract");
	}
}

static int info_operands(struct cafs_request *q, int n, char **arg)
{
	if (n != 1)
		return cafs_usage_error("info", "expected one INDEX");
	((struct cafs_extract_args *)q)->in = arg[0];
	return 0;
}

/* info --json: one object, every key always there (docs/json.md) */
static int info_json(const struct cafs_extract_args *a, const struct ca_store_ops_info *in)
{
	printf("{\"kind\":\"%s\",\"feature_flags\":\"0x%016llx\",\"features\":[",
	       in->archive_index ? "archive_index" : "blob_index", (unsigned long long)in->flags);
	for (const char *p = in->flag_names; *p;) {
		size_t n = strcspn(p, ",");
		if (p != in->flag_names)
			putchar(',');
		ca_json_out_string(stdout, p, n);
		p += n + (p[n] == ',');
	}
	printf("],\"digest\":");
	ca_json_out_string(stdout, in->digest, strlen(in->digest));
	printf(",\"chunk_size_min\":%llu,\"chunk_size_avg\":%llu,\"chunk_size_max\":%llu,"
	       "\"size_bytes\":%llu,\"chunks\":%llu,\"chunk_smallest\":%llu,\"chunk_median\":%llu,"
	       "\"chunk_mean\":%llu,\"chunk_largest\":%llu,\"stores\":[",
	       (unsigned long long)in->chunk_min, (unsigned long long)in->chunk_avg, (unsigned long long)in->chunk_max,
	       (unsigned long long)in->size, (unsigned long long)in->chunks, (unsigned long long)in->smallest,
	       (unsigned long long)in->median, (unsigned long long)(in->chunks ? in->size / in->chunks : 0),
	       (unsigned long long)in->largest);
	for (size_t i = 0; in->in_stores && i < a->n_stores; i++) {
		char *shown = ca_location_redact(a->stores[i]);
		if (!shown)
			return ca_log_error_errno(ENOMEM, "info"), 1;
		if (i)
			putchar(',');
		ca_json_out_string(stdout, shown, strlen(shown));
		free(shown);
	}
	if (in->in_stores)
		printf("],\"present_chunks\":%llu,\"present_bytes\":%llu}\n", (unsigned long long)in->present,
		       (unsigned long long)in->present_bytes);
	else
		printf("],\"present_chunks\":null,\"present_bytes\":null}\n");
	return fflush(stdout) ? (ca_log_error_errno(EIO, "stdout"), 1) : 0;
}

static int info_run(struct cafs_request *q)
{
	const struct cafs_extract_args *a = (const struct cafs_extract_args *)q;
	struct ca_image_opts io = { 0 };
	struct ca_store_ops_info in;
	cafs_trusted_keys_apply(&a->trusted, &io);
	if (ca_store_ops_info(a->in, &io, a->stores, a->n_stores, &in) < 0) /* logs its errors */
		return 1;
	if (a->json)
		return info_json(a, &in);
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
		char *shown = a->n_stores == 1 ? ca_location_redact(a->stores[0]) : NULL;
		printf("In %s%s: %llu of %llu chunks, %llu of %llu bytes\n", a->n_stores == 1 ? "store " : "the stores given",
		       a->n_stores == 1 ? (shown ? shown : "(store)") : "", (unsigned long long)in.present,
		       (unsigned long long)in.chunks, (unsigned long long)in.present_bytes, (unsigned long long)in.size);
		free(shown);
	}
	return 0;
}

/* ---- the commands' options and help ---- */

static const struct cafs_option make_options[] = {
	{ "store", 's', "DIR|S3URL|OCIURL", CAFS_OPT_STORE,
	  .help = "chunk store, a directory, s3+http(s)://HOST/BUCKET/PREFIX or\n"
	  "oci+http(s)://HOST/REPO (default: default.castr beside OUT; OUT's\n"
	  "repository for an oci+ OUT)" },
	{ "chunk-size", 0, "SPEC", CAFS_OPT_CHUNK_SIZE,
	  .help = "AVG or MIN:AVG:MAX (default 16K:64K:256K)" },
	{ "digest", 0, "NAME", CAFS_OPT_DIGEST,
	  .help = "sha512-256 (default) or sha256" },
	{ "with", 0, "FLAG", CAFS_OPT_WITH,
	  .help = "archive only these features (repeatable)" },
	{ "without", 0, "FLAG", CAFS_OPT_WITHOUT,
	  .help = "leave out a feature (repeatable)" },
	{ "exclude-nodump", 0, "no", CAFS_OPT_EXCLUDE_NODUMP,
	  .help = "include files and directories marked chattr +d" },
	{ "exclude-submounts", 0, "yes", CAFS_OPT_EXCLUDE_SUBMOUNTS,
	  .help = "leave out other filesystems mounted below INPUT" },
	{ "exclude-file", 0, "no", CAFS_OPT_EXCLUDE_FILE,
	  .help = "ignore .caexclude files" },
	{ "meta", 0, "no", CAFS_OPT_META,
	  .help = ".caidx: no metadata sidecar OUT.cameta beside it" },
	{ "profile", 0, "FILE", CAFS_OPT_PROFILE,
	  .help = "an index: copy this prefetch profile beside it as\n"
	  "OUT.caprofile, naming the new index" },
	{ "uid-shift", 0, "UID", CAFS_OPT_UID_SHIFT,
	  .help = "archives: store owners as their ids minus UID" },
	{ "uid-range", 0, "N", CAFS_OPT_UID_RANGE,
	  .help = "... modulo N (default 65536; or yes/no), as casync" },
	{ "threads", 'j', "N", CAFS_OPT_THREADS,
	  .help = "worker threads (default: number of CPUs)" },
	{ "compression", 0, "NAME", CAFS_OPT_COMPRESSION,
	  .help = "chunks in zstd (default), xz or gzip, as casync" },
	{ "cache", 0, "DIR", CAFS_OPT_CACHE,
	  .help = "an index: remember this make in DIR, and skip what is\n"
	  "unchanged since the last (same output, same digest)" },
	{ NULL },
};

const struct cafs_command cafs_command_make = {
	.name = "make",
	.synopsis = "make [OPTIONS] OUT.caibx|OUT.caidx|OUT.catar INPUT",
	.options = make_options,
	.help_column = 26,
	.help_tail = "Prints the digest of the whole stream, as casync make does.\n",
	.request_size = sizeof(struct cafs_make_request),
	.init = make_init,
	.set = make_set,
	.operands = make_operands,
	.run = make_run,
};

static const struct cafs_option extract_options[] = {
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE,
	  .help = "chunk store (repeatable; default: default.castr beside IN)" },
	{ "threads", 'j', "N", CAFS_OPT_THREADS,
	  .help = "blob: worker threads (default: number of CPUs); unused\n"
	  "for archives" },
	{ "seed", 0, "PATH", CAFS_OPT_SEED,
	  .help = "take chunks from this local file, device, .catar or index\n"
	  "first (repeatable)" },
	{ "cache", 0, "DIR", CAFS_OPT_CACHE,
	  .help = "keep the chunks fetched in this chunk cache, and use it" },
	{ "delta", 0, "PACK|URL", CAFS_OPT_DELTA,
	  .help = "build chunks from the seeds' with this delta pack (default:\n"
	  "IN.cadelta-<digest of an index --seed, or of the one --cache\n"
	  "kept for IN before>, if there)" },
	{ "delete", 0, "no", CAFS_OPT_DELETE,
	  .help = "archives: keep what OUT has that the archive does not" },
	CAFS_OPTIONS_TRUST,
	{ "offline", 0, NULL, CAFS_OPT_OFFLINE,
	  .help = "only the --cache (and the index kept there for a URL)" },
	{ "overlay-xattrs", 0, NULL, CAFS_OPT_OVERLAY_XATTRS,
	  .help = "archives: apply trusted.overlay.* and user.overlay.* too\n"
	  "(overlayfs instructions; man cafs: SECURITY)" },
	{ "rate-limit-bps", 0, "SIZE", CAFS_OPT_RATE_LIMIT_BPS,
	  .help = "cap the download rate from each store (bytes/s)" },
	{ "uid-shift", 0, "UID", CAFS_OPT_UID_SHIFT,
	  .help = "archives: owners on disk are those stored plus UID" },
	{ "uid-range", 0, "N", CAFS_OPT_UID_RANGE,
	  .help = "... modulo N (default 65536; or yes/no), as casync" },
	{ "undo-immutable", 0, "yes", CAFS_OPT_UNDO_IMMUTABLE,
	  .help = "archives: replace and remove files of OUT that are\n"
	  "chattr +i (clearing the flag), as casync" },
	{ "punch-holes", 0, "no", CAFS_OPT_PUNCH_HOLES,
	  .help = "write zero blocks too (default: left as holes)" },
	{ "reflink", 0, "no", CAFS_OPT_REFLINK,
	  .help = "blob: copy what seed files have (default: clone their\n"
	  "blocks where the file system can)" },
	{ "hardlink", 0, "yes", CAFS_OPT_HARDLINK,
	  .help = "archive: a file a --seed directory holds identically\n"
	  "(contents and metadata) becomes a hard link to it" },
	{ NULL },
};

const struct cafs_command cafs_command_extract = {
	.name = "extract",
	.synopsis = "extract [OPTIONS] IN.caibx|IN.caidx|IN.catar OUT [PATH]",
	.help_head = "PATH: only that directory of an archive (found by random access; only its chunks are read)\n",
	.options = extract_options,
	.help_column = 26,
	.request_size = sizeof(struct cafs_extract_args),
	.set = extract_set,
	.operands = extract_operands,
	.run = extract_run,
	.release = read_release,
};

static const struct cafs_option digest_options[] = {
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE,
	  .help = "chunk store for an index (repeatable; default: default.castr\n"
	  "beside it)" },
	{ "digest", 0, "NAME", CAFS_OPT_DIGEST,
	  .help = "for a plain file: sha512-256 (default) or sha256" },
	CAFS_OPTIONS_TRUST,
	{ NULL },
};

const struct cafs_command cafs_command_digest = {
	.name = "digest",
	.synopsis = "digest [OPTIONS] FILE|DIR|INDEX|ARCHIVE [PATH]",
	.options = digest_options,
	.help_column = 26,
	.help_tail = "PATH: in an archive, that directory's stream or that file's contents.\n",
	.request_size = sizeof(struct cafs_digest_request),
	.init = digest_init,
	.set = digest_set,
	.operands = digest_operands,
	.run = digest_run,
	.release = digest_release,
};

static const struct cafs_option info_options[] = {
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE,
	  .help = "also report how much of the index this store holds\n"
	  "(repeatable: what any of them holds)" },
	{ "threads", 'j', "N", CAFS_OPT_THREADS,
	  .help = "accepted, as for extract; has no effect" },
	CAFS_OPTIONS_TRUST,
	{ "json", 0, NULL, CAFS_OPT_JSON,
	  .help = "one JSON object (docs/json.md)" },
	/* extract's, refused by name (info_set) */
	{ "seed", 0, "PATH", .id = CAFS_OPT_SEED },
	{ "cache", 0, "DIR", .id = CAFS_OPT_CACHE },
	{ "delete", 0, "no", .id = CAFS_OPT_DELETE },
	{ "offline", 0, NULL, .id = CAFS_OPT_OFFLINE },
	{ "overlay-xattrs", 0, NULL, .id = CAFS_OPT_OVERLAY_XATTRS },
	{ "rate-limit-bps", 0, "SIZE", .id = CAFS_OPT_RATE_LIMIT_BPS },
	{ "uid-shift", 0, "UID", .id = CAFS_OPT_UID_SHIFT },
	{ "uid-range", 0, "N", .id = CAFS_OPT_UID_RANGE },
	{ "undo-immutable", 0, "yes", .id = CAFS_OPT_UNDO_IMMUTABLE },
	{ "punch-holes", 0, "no", .id = CAFS_OPT_PUNCH_HOLES },
	{ "reflink", 0, "no", .id = CAFS_OPT_REFLINK },
	{ "hardlink", 0, "yes", .id = CAFS_OPT_HARDLINK },
	{ NULL },
};

const struct cafs_command cafs_command_info = {
	.name = "info",
	.synopsis = "info [OPTIONS] INDEX",
	.options = info_options,
	.help_column = 26,
	.request_size = sizeof(struct cafs_extract_args),
	.set = info_set,
	.operands = info_operands,
	.run = info_run,
	.release = read_release,
};

