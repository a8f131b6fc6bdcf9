/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * casync_cli.c - casync's command line (`casync [OPTIONS...] VERB [ARGS]`)
 * for cafs invoked as `casync`, and casync's global options before a cafs
 * command.
 *
 * Nothing is done here but translation: the options are parsed once into
 * struct casync_args, and each verb fills the request of the cafs command
 * that does the work (cafs make, extract, list, mtree, digest, gc, mount)
 * through that command's set() (the function its own parser calls for the
 * same option) and calls its run(): no argv is rebuilt, nothing re-enters
 * main.c. So a behaviour lives in one place, whichever name the user typed. casync's SSH remoting
 * (HOST:PATH) is glue here too: what a verb reads is pulled first, what
 * make writes is pushed after (the protocol is core/net/caremote.h), and the
 * remote end is the verbs pull and push. Where a cafs command goes by a
 * name's suffix and casync by --what= or by standard input and output, the
 * command is given a suffixed name for the same bytes (struct stage). What
 * casync has and cafs does not (NBD devices, the encoder cache) is
 * accepted and ignored, as casync
 * ignores options that do not apply to a verb; docs/cafs.1 ("CASYNC
 * COMPATIBILITY") lists them.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "net/caremote.h"
#include "casync_cli.h"
#include "cmd.h"
#include "image/image_make.h"
#include "interrupt.h"
#include "base/location.h"
#include "base/log.h"

/* casync's --what= */
enum what {
	WHAT_ANY,
	WHAT_ARCHIVE,
	WHAT_ARCHIVE_INDEX,
	WHAT_BLOB,
	WHAT_BLOB_INDEX,
	WHAT_DIRECTORY,
};

/* A growing list of strings this file owns. */
struct strv {
	char **v;
	size_t n;
};

/* Every casync option; pointers are into argv. */
struct casync_args {
	enum cafs_casync_mode mode;
	int verbosity; /* cafs's scale: -1 errors only .. 2 debug */
	bool dry_run;
	const char *store, *chunk_size, *digest, *compression, *cache, *rate_limit, *uid_shift, *uid_range;
	const char *exclude_nodump, *exclude_submounts, *exclude_file;
	enum what what;
	struct strv extra_stores, seeds, with, without;
	bool seed_output, recursive, delete_extra, mkdir, undo_immutable, punch_holes, reflink;
	bool hardlink, cache_auto;
};

enum {
	OPT_VERSION = 0x100,
	OPT_STORE,
	OPT_EXTRA_STORE,
	OPT_CHUNK_SIZE,
	OPT_SEED,
	OPT_CACHE,
	OPT_RATE_LIMIT_BPS,
	OPT_WITH,
	OPT_WITHOUT,
	OPT_WHAT,
	OPT_EXCLUDE_NODUMP,
	OPT_EXCLUDE_SUBMOUNTS,
	OPT_EXCLUDE_FILE,
	OPT_UNDO_IMMUTABLE,
	OPT_DELETE,
	OPT_PUNCH_HOLES,
	OPT_REFLINK,
	OPT_HARDLINK,
	OPT_SEED_OUTPUT,
	OPT_UID_SHIFT,
	OPT_UID_RANGE,
	OPT_RECURSIVE,
	OPT_MKDIR,
	OPT_DIGEST,
	OPT_COMPRESSION,
};

/* casync 2's table (src/casync-tool.c parse_argv), option for option */
static const struct option casync_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "log-level", required_argument, NULL, 'l' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "store", required_argument, NULL, OPT_STORE },
	{ "extra-store", required_argument, NULL, OPT_EXTRA_STORE },
	{ "chunk-size", required_argument, NULL, OPT_CHUNK_SIZE },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "cache", required_argument, NULL, OPT_CACHE },
	{ "cache-auto", no_argument, NULL, 'c' },
	{ "rate-limit-bps", required_argument, NULL, OPT_RATE_LIMIT_BPS },
	{ "with", required_argument, NULL, OPT_WITH },
	{ "without", required_argument, NULL, OPT_WITHOUT },
	{ "what", required_argument, NULL, OPT_WHAT },
	{ "exclude-nodump", required_argument, NULL, OPT_EXCLUDE_NODUMP },
	{ "exclude-submounts", required_argument, NULL, OPT_EXCLUDE_SUBMOUNTS },
	{ "exclude-file", required_argument, NULL, OPT_EXCLUDE_FILE },
	{ "undo-immutable", required_argument, NULL, OPT_UNDO_IMMUTABLE },
	{ "delete", required_argument, NULL, OPT_DELETE },
	{ "punch-holes", required_argument, NULL, OPT_PUNCH_HOLES },
	{ "reflink", required_argument, NULL, OPT_REFLINK },
	{ "hardlink", required_argument, NULL, OPT_HARDLINK },
	{ "seed-output", required_argument, NULL, OPT_SEED_OUTPUT },
	{ "uid-shift", required_argument, NULL, OPT_UID_SHIFT },
	{ "uid-range", required_argument, NULL, OPT_UID_RANGE },
	{ "recursive", required_argument, NULL, OPT_RECURSIVE },
	{ "mkdir", required_argument, NULL, OPT_MKDIR },
	{ "digest", required_argument, NULL, OPT_DIGEST },
	{ "compression", required_argument, NULL, OPT_COMPRESSION },
	{}
};

static const char casync_help[] =
	"casync [OPTIONS...] make [ARCHIVE|ARCHIVE_INDEX|BLOB_INDEX] [PATH]\n"
	"casync [OPTIONS...] extract [ARCHIVE|ARCHIVE_INDEX|BLOB_INDEX] [PATH] [SUBTREE]\n"
	"casync [OPTIONS...] list [ARCHIVE|ARCHIVE_INDEX|DIRECTORY] [SUBTREE]\n"
	"casync [OPTIONS...] mtree [ARCHIVE|ARCHIVE_INDEX|DIRECTORY] [SUBTREE]\n"
	"casync [OPTIONS...] stat [ARCHIVE|ARCHIVE_INDEX|DIRECTORY] [PATH]\n"
	"casync [OPTIONS...] digest [ARCHIVE|BLOB|ARCHIVE_INDEX|BLOB_INDEX|DIRECTORY]\n"
	"casync [OPTIONS...] mount [ARCHIVE|ARCHIVE_INDEX] PATH\n"
	"casync [OPTIONS...] mkdev [BLOB|BLOB_INDEX] [NODE]\n"
	"casync [OPTIONS...] gc BLOB_INDEX|ARCHIVE_INDEX...\n"
	"\n"
	"cafs, speaking casync's command line (see cafs(1), CASYNC COMPATIBILITY).\n"
	"\n"
	"  -h --help                  Show this help\n"
	"     --version               Show brief version information\n"
	"  -l --log-level=LEVEL       Set log level (debug, info, err)\n"
	"  -v --verbose               Show more messages\n"
	"  -n --dry-run               When garbage collecting, only print what would be done\n"
	"     --store=PATH            The primary chunk store to use\n"
	"     --extra-store=PATH      Additional chunk store to look for chunks in\n"
	"     --chunk-size=[MIN:]AVG[:MAX]  Chunk sizes\n"
	"     --digest=DIGEST         sha512-256 or sha256\n"
	"     --compression=COMPRESSION  Pick compression algorithm (zstd, xz or gzip)\n"
	"     --seed=PATH             Additional file, device or index to take chunks from\n"
	"     --cache=PATH            make: incremental make cache (cafs make --cache)\n"
	"  -c --cache-auto            make: the cache in ~/.cache/cafs/make\n"
	"     --rate-limit-bps=LIMIT  Maximum bandwidth in bytes/s (per store)\n"
	"     --exclude-nodump=no, --exclude-submounts=yes, --exclude-file=no\n"
	"     --seed-output=no        Don't add the existing output (a blob) as seed\n"
	"     --recursive=no          List non-recursively\n"
	"     --reflink=no            Copy chunks from seed files instead of cloning them\n"
	"     --punch-holes=no        Write zero blocks instead of leaving holes\n"
	"     --delete=no             Keep extra entries in the output directory\n"
	"     --undo-immutable=yes    Replace and remove immutable files when extracting\n"
	"     --mkdir=no              Don't make a missing mount point\n"
	"     --uid-shift=UID, --uid-range=N  Shift owners by UID, modulo N\n"
	"     --hardlink=yes          Hardlink identical files from seed directories\n"
	"     --what=archive|archive-index|blob|blob-index|directory|help\n"
	"     --with=FEATURE, --without=FEATURE  casync's feature and group names\n"
	"                             (best, unix, fat, chattr, fat-attrs, privileged,\n"
	"                             fuse, all, and each flag: see casync --help)\n";

static int strv_add(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int strv_add(struct strv *s, const char *fmt, ...)
{
	char **n = realloc(s->v, (s->n + 2) * sizeof(char *));
	va_list ap;
	int k;
	if (!n)
		return -ENOMEM;
	s->v = n;
	va_start(ap, fmt);
	k = vasprintf(&s->v[s->n], fmt, ap);
	va_end(ap);
	if (k < 0)
		return -ENOMEM;
	s->v[++s->n] = NULL;
	return 0;
}

static void strv_release(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct strv){ 0 };
}

/* A usage error: casync's exit code (1) under its name, cafs's (2) else. */
static int usage(const struct casync_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage(const struct casync_args *a, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (a->mode == CAFS_CASYNC_PREFIX)
		return cafs_usage_error(NULL, "%s", msg);
	char shown[520];
	ca_location_redact_text(msg, shown, sizeof(shown)); /* it may quote a URL */
	fprintf(stderr, "cafs: %s\n", shown);
	return 1;
}

/* -l: syslog's level names and numbers, onto cafs's -q/-v scale */
static int parse_log_level(const char *s, int *ret)
{
	static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };
	char *end;
	long v = -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i]))
			v = (long)i;
	if (v < 0) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || *end || end == s || v < 0 || v > 7)
			return -EINVAL;
	}
	*ret = v <= 3 ? -1 : v <= 5 ? 0 : v == 6 ? 1 : 2;
	return 0;
}

static int parse_what(const char *s, enum what *ret)
{
	static const struct {
		const char *name;
		enum what what;
	} table[] = {
		{ "archive", WHAT_ARCHIVE }, { "archive-index", WHAT_ARCHIVE_INDEX }, { "blob", WHAT_BLOB },
		{ "blob-index", WHAT_BLOB_INDEX }, { "directory", WHAT_DIRECTORY },
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(s, table[i].name))
			return *ret = table[i].what, 0;
	return -EINVAL;
}

/* Parses the options into a; *ret_verb_index is argv's index of the verb
 * (argc when none). Returns -1 to go on, or the exit code. */
static int parse_args(int argc, char **argv, struct casync_args *a, int *ret_verb_index)
{
	/* as casync: options anywhere (getopt's permutation); before a cafs
	 * command only ("+": stop at it), the rest is that command's */
	const char *shortopts = a->mode == CAFS_CASYNC_PREFIX ? "+hl:vnc" : "hl:vnc";
	bool b;
	int c, r;

	a->seed_output = a->recursive = a->delete_extra = a->mkdir = a->punch_holes = a->reflink = true;
	optind = 0;
	while ((c = getopt_long(argc, argv, shortopts, casync_opts, NULL)) >= 0) {
		struct strv *list = NULL;
		bool *bp = NULL;
		switch (c) {
		case 'h':
			fputs(casync_help, stdout);
			return 0;
		case OPT_VERSION:
			/* scripts that parse casync's "casync 2" read the
			 * version of casync whose command line this is */
			printf("casync 2 (cafs %s)\n", PACKAGE_VERSION);
			return 0;
		case 'l':
			if (parse_log_level(optarg, &a->verbosity) < 0)
				return usage(a, "unknown log level '%s'", optarg);
			break;
		case 'v':
			if (a->verbosity < 1)
				a->verbosity = 1;
			break;
		case 'n':
			a->dry_run = true;
			break;
		case OPT_RATE_LIMIT_BPS: {
			uint64_t v;
			if (cafs_parse_size(optarg, &v) < 0 || v == 0)
				return usage(a, "bad rate limit '%s'", optarg);
			a->rate_limit = optarg;
			break;
		}
		case OPT_UID_SHIFT:
		case OPT_UID_RANGE: {
			struct ca_uid_shift u = { 0 };
			if ((c == OPT_UID_SHIFT ? cafs_parse_uid_shift(optarg, &u) : cafs_parse_uid_range(optarg, &u)) < 0)
				return usage(a, "bad %s '%s'", c == OPT_UID_SHIFT ? "--uid-shift" : "--uid-range", optarg);
			*(c == OPT_UID_SHIFT ? &a->uid_shift : &a->uid_range) = optarg;
			break;
		}
		case 'c':
			/* make: the cache beside OUT, as OUT.cacache */
			a->cache_auto = true;
			break;
		case OPT_STORE:
			a->store = optarg;
			break;
		case OPT_EXTRA_STORE:
			list = &a->extra_stores;
			break;
		case OPT_SEED:
			list = &a->seeds;
			break;
		case OPT_WITH:
			list = &a->with;
			break;
		case OPT_WITHOUT:
			list = &a->without;
			break;
		case OPT_CHUNK_SIZE:
			a->chunk_size = optarg;
			break;
		case OPT_DIGEST:
			a->digest = optarg;
			break;
		case OPT_COMPRESSION:
			if (strcmp(optarg, "zstd") && strcmp(optarg, "xz") && strcmp(optarg, "gzip") &&
			    strcmp(optarg, "default"))
				return usage(a, "unknown compression '%s'", optarg);
			a->compression = optarg;
			break;
		case OPT_CACHE:
			a->cache = optarg;
			break;
		case OPT_WHAT:
			if (!strcmp(optarg, "help")) {
				/* casync's list leaves out "archive" (an off-by-one) */
				puts("Allowed --what= selectors:\narchive\narchive-index\nblob\nblob-index\ndirectory");
				return 0;
			}
			if (parse_what(optarg, &a->what) < 0)
				return usage(a, "unknown --what '%s'", optarg);
			break;
		case OPT_EXCLUDE_NODUMP:
			a->exclude_nodump = optarg;
			bp = &b;
			break;
		case OPT_EXCLUDE_SUBMOUNTS:
			a->exclude_submounts = optarg;
			bp = &b;
			break;
		case OPT_EXCLUDE_FILE:
			a->exclude_file = optarg;
			bp = &b;
			break;
		case OPT_SEED_OUTPUT:
			bp = &a->seed_output;
			break;
		case OPT_RECURSIVE:
			bp = &a->recursive;
			break;
		case OPT_DELETE:
			bp = &a->delete_extra;
			break;
		case OPT_MKDIR:
			bp = &a->mkdir;
			break;
		case OPT_UNDO_IMMUTABLE:
			bp = &a->undo_immutable;
			break;
		case OPT_PUNCH_HOLES:
			bp = &a->punch_holes;
			break;
		case OPT_REFLINK:
			bp = &a->reflink;
			break;
		case OPT_HARDLINK:
			bp = &a->hardlink;
			break;
		default:
			/* getopt said which option */
			return a->mode == CAFS_CASYNC_PREFIX ? cafs_usage_error(NULL, "bad option") : 1;
		}
		if (bp && cafs_parse_bool(optarg, bp) < 0)
			return usage(a, "expected a boolean, got '%s'", optarg);
		if (list && (r = strv_add(list, "%s", optarg)) < 0)
			return ca_log_error_errno(r, "arguments"), 1;
	}
	*ret_verb_index = optind;
	return -1;
}

/* ---- what each cafs command accepts of the options ---- */

enum {
	T_STORE = 1 << 0,  /* --store as -s */
	T_STORES = 1 << 1, /* --store and each --extra-store as -s, in order */
	T_SEED = 1 << 2,
	T_MAKE = 1 << 3,   /* chunk size, digest, with/without, exclusions */
	T_DIGEST = 1 << 4,
	T_DRY_RUN = 1 << 5,
	T_CACHE = 1 << 6,  /* cafs's chunk cache: only when not named casync */
	T_DELETE = 1 << 7, /* --delete=no */
	T_RATE = 1 << 8,   /* --rate-limit-bps */
	T_UIDS = 1 << 9,   /* --uid-shift, --uid-range (make: with T_MAKE) */
};

static const struct {
	const char *name;
	const struct cafs_command *cmd; /* NULL: no cafs command of that name */
	unsigned takes;
} commands[] = {
	{ "make", &cafs_command_make, T_STORE | T_MAKE },
	{ "extract", &cafs_command_extract, T_STORES | T_SEED | T_CACHE | T_DELETE | T_RATE | T_UIDS },
	{ "list", &cafs_command_list, T_STORES },
	{ "mtree", &cafs_command_mtree, T_STORES | T_DIGEST },
	{ "stat", NULL, T_STORES },
	{ "digest", &cafs_command_digest, T_STORES | T_DIGEST },
	{ "gc", &cafs_command_gc, T_STORE | T_DRY_RUN },
	{ "mount", &cafs_command_mount, T_STORES | T_CACHE | T_RATE },
	{ "mkdev", NULL, 0 },
	{ "info", &cafs_command_info, T_STORE },
};

/* The cafs command for a verb and the casync options it takes: 0, or -ENOENT. */
static int command_takes(const char *name, const struct cafs_command **ret_cmd, unsigned *ret)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name)) {
			if (ret_cmd)
				*ret_cmd = commands[i].cmd;
			return *ret = commands[i].takes, 0;
		}
	return -ENOENT;
}

/*
 * A cafs command's request, filled here as its own parser would fill it
 * from the same options (through its set(), which checks and reports each
 * as for the command line), then run. The first failing set() is the
 * exit code; the rest are skipped.
 */
struct call {
	const struct cafs_command *c;
	struct cafs_request *q;
	int r;
};

static int call_begin(struct call *k, const struct cafs_command *c)
{
	*k = (struct call){ .c = c, .q = cafs_request_new(c) };
	return k->q ? 0 : -ENOMEM;
}

static void call_set(struct call *k, int id, const char *arg)
{
	if (k->r || !k->q)
		return;
	/* only what the command's own table offers: its parser would take
	 * nothing else either */
	const struct cafs_option *o = cafs_command_option(k->c, id);
	if (!o || !o->arg != !arg) {
		ca_log_error("%s: not an option of cafs %s (id %#x)", o ? o->name : "option", k->c->name, id);
		k->r = 1;
		return;
	}
	k->r = k->c->set(k->q, id, arg);
}

/* The operands (the array is the command's to keep while it runs), then
 * the command: its exit code. */
static int call_run(struct call *k, int n, char **operands)
{
	if (!k->q)
		return 1;
	if (k->r)
		return k->r;
	cafs_set_verbosity(k->q->verbosity);
	int r = k->c->operands(k->q, n, operands);
	return r ? r : k->c->run(k->q);
}

static void call_end(struct call *k)
{
	cafs_request_free(k->c, k->q);
	*k = (struct call){ 0 };
}

/* Sets the options of a command that takes `takes` in its request, in the
 * order and with the meaning of that command's own options. */
static void apply_options(const struct casync_args *a, unsigned takes, struct call *k)
{
	for (int i = 0; i < a->verbosity; i++)
		call_set(k, 'v', NULL);
	if (a->verbosity < 0)
		call_set(k, 'q', NULL);
	k->q->verbosity = a->verbosity;
	if (a->store && (takes & (T_STORE | T_STORES)))
		call_set(k, CAFS_OPT_STORE, a->store);
	for (size_t i = 0; (takes & T_STORES) && i < a->extra_stores.n; i++)
		call_set(k, CAFS_OPT_STORE, a->extra_stores.v[i]);
	for (size_t i = 0; (takes & T_SEED) && i < a->seeds.n; i++)
		call_set(k, CAFS_OPT_SEED, a->seeds.v[i]);
	if ((takes & T_CACHE) && a->cache && a->mode == CAFS_CASYNC_PREFIX)
		call_set(k, CAFS_OPT_CACHE, a->cache);
	if ((takes & T_DELETE) && !a->delete_extra)
		call_set(k, CAFS_OPT_DELETE, "no");
	if ((takes & T_DELETE) && a->undo_immutable)
		call_set(k, CAFS_OPT_UNDO_IMMUTABLE, "yes");
	if ((takes & T_DELETE) && !a->punch_holes)
		call_set(k, CAFS_OPT_PUNCH_HOLES, "no");
	if ((takes & T_DELETE) && !a->reflink)
		call_set(k, CAFS_OPT_REFLINK, "no");
	if ((takes & T_DELETE) && a->hardlink)
		call_set(k, CAFS_OPT_HARDLINK, "yes");
	if ((takes & (T_UIDS | T_MAKE)) && a->uid_shift)
		call_set(k, CAFS_OPT_UID_SHIFT, a->uid_shift);
	if ((takes & (T_UIDS | T_MAKE)) && a->uid_range)
		call_set(k, CAFS_OPT_UID_RANGE, a->uid_range);
	if ((takes & T_RATE) && a->rate_limit)
		call_set(k, CAFS_OPT_RATE_LIMIT_BPS, a->rate_limit);
	if ((takes & T_DRY_RUN) && a->dry_run)
		call_set(k, CAFS_OPT_DRY_RUN, NULL);
	if ((takes & (T_DIGEST | T_MAKE)) && a->digest)
		call_set(k, CAFS_OPT_DIGEST, a->digest);
	if (!(takes & T_MAKE))
		return;
	if (a->chunk_size)
		call_set(k, CAFS_OPT_CHUNK_SIZE, a->chunk_size);
	if (a->compression)
		call_set(k, CAFS_OPT_COMPRESSION, a->compression);
	for (size_t i = 0; i < a->with.n; i++)
		call_set(k, CAFS_OPT_WITH, a->with.v[i]);
	for (size_t i = 0; i < a->without.n; i++)
		call_set(k, CAFS_OPT_WITHOUT, a->without.v[i]);
	if (a->exclude_nodump)
		call_set(k, CAFS_OPT_EXCLUDE_NODUMP, a->exclude_nodump);
	if (a->exclude_submounts)
		call_set(k, CAFS_OPT_EXCLUDE_SUBMOUNTS, a->exclude_submounts);
	if (a->exclude_file)
		call_set(k, CAFS_OPT_EXCLUDE_FILE, a->exclude_file);
	/* casync writes no metadata sidecar: as casync, neither do we */
	call_set(k, CAFS_OPT_META, "no");
}

/* ---- casync's verbs: its defaults, then the cafs command ---- */

/* What a name says it is, by suffix (casync's ca_locator_has_suffix). */
static enum what what_of_name(const char *name)
{
	switch (ca_location_image_kind(name)) {
	case CA_IMAGE_ARCHIVE:
		return WHAT_ARCHIVE;
	case CA_IMAGE_ARCHIVE_INDEX:
		return WHAT_ARCHIVE_INDEX;
	case CA_IMAGE_BLOB_INDEX:
		return WHAT_BLOB_INDEX;
	default:
		return WHAT_ANY;
	}
}

static const char *what_suffix(enum what w)
{
	return w == WHAT_ARCHIVE ? ".catar" : w == WHAT_ARCHIVE_INDEX ? ".caidx" : w == WHAT_BLOB_INDEX ? ".caibx" : "";
}

static bool is_index(enum what w)
{
	return w == WHAT_ARCHIVE_INDEX || w == WHAT_BLOB_INDEX;
}

/*
 * cafs commands tell a file's kind by its suffix; casync also by --what= and
 * by what the input or output is (standard input, a directory). When the
 * two disagree, the cafs command is given a name with the right suffix for
 * the same bytes, in a private directory: a symbolic link to the input (to
 * /proc/self/fd/0 for standard input: the command runs in this process),
 * standard input copied there when it is a pipe, or make's output, renamed
 * to OUT or copied to standard output when made.
 */
struct stage {
	char *dir;   /* mkdtemp'd; removed, with what it holds, by stage_release */
	char *in;    /* the input under its suffixed name */
	char *out;   /* make's output under its suffixed name */
	char *store; /* the store casync uses for an index (set_default_store) */
	char *pulled; /* a store of chunks pulled from HOST:PATH, in dir (removed with it) */
};

static int stage_dir(struct stage *st, const char *beside)
{
	const char *tmp = getenv("TMPDIR");
	char *d;
	int r;
	if (st->dir)
		return 0;
	if (beside) {
		/* beside OUT, so that the made file is renamed into place */
		const char *slash = strrchr(beside, '/');
		r = slash ? asprintf(&d, "%.*s/.cafs-casync.XXXXXX", (int)(slash - beside + 1), beside) :
		            asprintf(&d, ".cafs-casync.XXXXXX");
	} else {
		r = asprintf(&d, "%s/cafs-casync.XXXXXX", tmp && *tmp ? tmp : "/var/tmp");
	}
	if (r < 0)
		return -ENOMEM;
	if (!mkdtemp(d)) {
		r = -errno;
		free(d);
		return r;
	}
	st->dir = d;
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

static void stage_release(struct stage *st)
{
	if (st->pulled)
		(void)nftw(st->pulled, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(st->pulled);
	if (st->in)
		unlink(st->in);
	if (st->out)
		unlink(st->out);
	if (st->dir)
		rmdir(st->dir);
	free(st->in);
	free(st->out);
	free(st->dir);
	free(st->store);
	*st = (struct stage){ 0 };
}

/* Copies from fd in to fd out until in's end: 0 or a negative errno. */
static int copy_fd(int in, int out)
{
	static const size_t size = 1 << 20;
	char *buf = malloc(size);
	int r = buf ? 0 : -ENOMEM;
	while (r == 0) {
		ssize_t k = read(in, buf, size);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : 0;
			break;
		}
		for (ssize_t done = 0, w; r == 0 && done < k; done += w > 0 ? w : 0) {
			w = write(out, buf + done, (size_t)(k - done));
			if (w < 0 && errno != EINTR)
				r = -errno;
		}
	}
	free(buf);
	return r;
}

/* *ret: in (NULL: standard input) under a name a cafs command reads as w.
 * A pipe on standard input is copied (extract streams; casync reads it). */
static int stage_input(struct stage *st, const char *in, enum what w, const char **ret)
{
	struct stat s;
	char *target = NULL;
	int fd, r;
	if (in && (what_of_name(in) == w || ((w == WHAT_BLOB || w == WHAT_DIRECTORY) && what_of_name(in) == WHAT_ANY))) {
		*ret = in;
		return 0;
	}
	if (in && ca_location_kind(in) != CA_LOCATION_PATH)
		return ca_log_error_errno(EINVAL, "%s: --what=%s needs a URL ending in %s", in,
		                          w == WHAT_BLOB ? "blob" : "...", what_suffix(w));
	r = stage_dir(st, NULL);
	if (r < 0)
		return ca_log_error_errno(r, "temporary directory");
	if (asprintf(&st->in, "%s/in%s", st->dir, what_suffix(w)) < 0) {
		st->in = NULL;
		return ca_log_error_errno(ENOMEM, "temporary directory");
	}
	if (in) {
		in = ca_location_path(in);
		if (in[0] == '/') {
			target = strdup(in);
		} else {
			char *cwd = getcwd(NULL, 0);
			if (cwd && asprintf(&target, "%s/%s", cwd, in) < 0)
				target = NULL;
			free(cwd);
		}
		if (!target)
			return ca_log_error_errno(ENOMEM, "%s", in);
		r = symlink(target, st->in) < 0 ? -errno : 0;
		free(target);
	} else if (fstat(STDIN_FILENO, &s) == 0 && (S_ISREG(s.st_mode) || S_ISBLK(s.st_mode) || S_ISDIR(s.st_mode))) {
		r = symlink("/proc/self/fd/0", st->in) < 0 ? -errno : 0;
	} else {
		fd = open(st->in, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		r = fd < 0 ? -errno : copy_fd(STDIN_FILENO, fd);
		if (fd >= 0 && close(fd) < 0 && r == 0)
			r = -errno;
	}
	if (r < 0)
		return ca_log_error_errno(r, "%s", in ? in : "standard input");
	*ret = st->in;
	return 0;
}

/* casync's set_default_store: --store, else $CASYNC_STORE, else
 * default.castr beside the index (in the current directory for standard
 * input or output). Given to the cafs command explicitly, because its
 * name for the index may be staged, and because casync adds it to the
 * --extra-store's. */
static int stage_store(const struct casync_args *a, struct stage *st, const char *index)
{
	const char *e = getenv("CASYNC_STORE");
	if (a->store)
		st->store = strdup(a->store);
	else if (e)
		st->store = strdup(e);
	else if (index && strcmp(index, "-"))
		st->store = ca_location_default_store(index);
	else
		st->store = strdup("default.castr");
	return st->store ? 0 : ca_log_error_errno(ENOMEM, "store");
}

/* call_run with standard output on /dev/null (make's digest line where
 * casync prints none). */
static int call_run_quiet(struct call *k, int n, char **operands)
{
	int saved, null, r;
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (saved < 0 || null < 0 || dup2(null, STDOUT_FILENO) < 0) {
		r = ca_log_error_errno(errno, "stdout");
		r = 1;
	} else {
		r = call_run(k, n, operands);
		fflush(stdout);
		if (dup2(saved, STDOUT_FILENO) < 0 && r == 0)
			r = (ca_log_error_errno(errno, "stdout"), 1);
	}
	if (saved >= 0)
		close(saved);
	if (null >= 0)
		close(null);
	return r;
}

/* ---- casync's SSH remoting: HOST:PATH through $CASYNC_SSH_PATH ----
 *
 * As casync: `$CASYNC_SSH_PATH HOST $CASYNC_REMOTE_PATH pull|push - ARCHIVE
 * INDEX STORE` (ssh and casync by default), speaking caremote.h over its
 * standard input and output. A read pulls what it needs into the stage
 * directory (the index or archive, then the chunks of the index the
 * store lacks) and runs on those; make makes into the stage directory and
 * then pushes, the remote asking for the chunks it lacks. */

static bool is_ssh(const char *s)
{
	return s && ca_location_ssh_host_len(s) > 0;
}

/* The peer may stay silent this long: $CAFS_REMOTE_TIMEOUT, 1 to 86400 s. */
static unsigned remote_timeout(void)
{
	const char *e = getenv("CAFS_REMOTE_TIMEOUT");
	char *end;
	unsigned long v;
	if (!e || !*e)
		return 120;
	errno = 0;
	v = strtoul(e, &end, 10);
	if (errno || *end || v < 1 || v > 86400) {
		ca_log_warning("CAFS_REMOTE_TIMEOUT=%s: not 1 to 86400 seconds, using 120", e);
		return 120;
	}
	return (unsigned)v;
}

struct ssh_conn {
	pid_t pid;
	int in, out; /* the command's standard output, its standard input */
	char host[256];
	struct ca_remote *r;
	void (*sigpipe)(int); /* restored by ssh_close */
};

/* Starts the remote casync for loc's host: verb, then ARCHIVE INDEX STORE
 * (each the path part of a location on that host, or NULL for "-"). */
static int ssh_open(const struct casync_args *a, const char *loc, bool push, const char *archive, const char *index,
                    const char *store, struct ssh_conn *c)
{
	size_t hl = ca_location_ssh_host_len(loc);
	const char *ssh = getenv("CASYNC_SSH_PATH"), *casync = getenv("CASYNC_REMOTE_PATH");
	const char *paths[3] = { archive, index, store };
	char *argv[12], rate[64];
	int to[2] = { -1, -1 }, from[2] = { -1, -1 }, n = 0, e;
	*c = (struct ssh_conn){ .pid = -1, .in = -1, .out = -1, .sigpipe = SIG_ERR };
	if (hl >= sizeof(c->host))
		return ca_log_error_errno(ENAMETOOLONG, "%.64s...", loc);
	memcpy(c->host, loc, hl);
	c->host[hl] = 0;
	argv[n++] = (char *)(ssh && *ssh ? ssh : "ssh");
	argv[n++] = c->host;
	argv[n++] = (char *)(casync && *casync ? casync : "casync");
	if (a->rate_limit) {
		snprintf(rate, sizeof(rate), "--rate-limit-bps=%s", a->rate_limit);
		argv[n++] = rate;
	}
	argv[n++] = push ? "push" : "pull";
	argv[n++] = "-";
	for (int i = 0; i < 3; i++)
		argv[n++] = (char *)(paths[i] ? paths[i] + ca_location_ssh_host_len(paths[i]) + 1 : "-");
	argv[n] = NULL;
	/* a remote that went away is an error on the write, not a signal */
	c->sigpipe = signal(SIGPIPE, SIG_IGN);
	if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0) {
		e = ca_log_error_errno(errno, "%s: pipe", c->host);
		goto fail;
	}
	fflush(stdout);
	c->pid = fork();
	if (c->pid < 0) {
		e = ca_log_error_errno(errno, "%s: fork", c->host);
		goto fail;
	}
	if (c->pid == 0) {
		/* the command gets what it would from a shell: no signal
		 * blocked (our interrupt handling blocks some), SIGPIPE default */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(to[0], STDIN_FILENO) < 0 || dup2(from[1], STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "cafs: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->out = to[1];
	c->in = from[0];
	e = ca_remote_new(c->in, c->out, c->host, remote_timeout(), &c->r);
	if (e < 0)
		ca_log_error_errno(e, "%s", c->host);
	else
		ca_remote_set_cancel(c->r, cafs_interrupt_flag());
	return e;
fail:
	for (int i = 0; i < 2; i++) {
		if (to[i] >= 0)
			close(to[i]);
		if (from[i] >= 0)
			close(from[i]);
	}
	return e;
}

/* Hangs up and waits for the remote command (SIGTERM when it outlives the
 * timeout, or 2 s after a failure; SIGKILL 2 s after that). ok: the transfer went well, so its
 * exit status counts (a pushed index is installed when it exits). */
static int ssh_close(struct ssh_conn *c, bool ok)
{
	int status = 0, e = 0;
	ca_remote_free(c->r);
	if (c->out >= 0)
		close(c->out);
	if (c->in >= 0)
		close(c->in);
	if (c->pid > 0) {
		struct timespec tick = { 0, 10 * 1000 * 1000 };
		/* after a failure, a moment to see our hang-up and end on its own */
		unsigned long waited = 0, limit = ok ? remote_timeout() * 100ul : 200;
		pid_t p;
		while ((p = waitpid(c->pid, &status, WNOHANG)) == 0 && waited++ < limit)
			nanosleep(&tick, NULL);
		if (p == 0) {
			/* a command that shrugs off SIGTERM gets 2 s, then SIGKILL:
			 * never a hang on what the other end chose to do */
			kill(c->pid, SIGTERM);
			for (waited = 0; (p = waitpid(c->pid, &status, WNOHANG)) == 0 && waited < 200; waited++)
				nanosleep(&tick, NULL);
			if (p == 0) {
				kill(c->pid, SIGKILL);
				(void)waitpid(c->pid, &status, 0);
			}
			if (ok)
				e = ca_log_error_errno(ETIMEDOUT, "%s: the remote command did not end", c->host);
		} else if (ok && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
			e = ca_log_error_errno(EPROTO, "%s: the remote command failed (%s %d)", c->host,
			                       WIFEXITED(status) ? "exit status" : "signal",
			                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		}
	}
	if (c->sigpipe != SIG_ERR)
		signal(SIGPIPE, c->sigpipe);
	*c = (struct ssh_conn){ .pid = -1, .in = -1, .out = -1, .sigpipe = SIG_ERR };
	return e;
}

static bool same_host(const char *x, const char *y)
{
	size_t n = ca_location_ssh_host_len(x);
	return n && n == ca_location_ssh_host_len(y) && !strncmp(x, y, n);
}

/* The path of an empty store in the stage directory, for chunks pulled or
 * made (made by the first chunk written into it). */
static int stage_pulled_store(struct stage *st)
{
	int e = stage_dir(st, NULL);
	if (e == 0 && !st->pulled && asprintf(&st->pulled, "%s/store", st->dir) < 0)
		st->pulled = NULL, e = -ENOMEM;
	return e < 0 ? ca_log_error_errno(e, "temporary store") : 0;
}

/* Pulls the chunks of the index at path that its store lacks over c,
 * into the stage's store, which then is the store. */
static int pull_chunks(struct ssh_conn *c, struct stage *st, const char *path)
{
	int e = stage_pulled_store(st);
	if (e == 0)
		e = ca_remote_pull_index_chunks(c->r, path, st->pulled);
	if (e == 0) {
		free(st->store);
		st->store = strdup(st->pulled);
		e = st->store ? 0 : ca_log_error_errno(ENOMEM, "store");
	}
	return e;
}

/* Before a read of *in as w: a HOST:PATH input is pulled into the stage
 * directory (*in then names the copy), and a HOST:PATH store (st->store)
 * gives the chunks of the index it lacks (st->store then names the copy).
 * Returns 0 or the exit code (failures logged; Ctrl-C: 128 + signal). */
static int remote_pull(const struct casync_args *a, struct stage *st, const char **in, enum what w)
{
	struct ssh_conn c = { .pid = -1, .in = -1, .out = -1, .sigpipe = SIG_ERR };
	const char *store = is_index(w) && is_ssh(st->store) ? st->store : NULL;
	int e = 0, fd = -1;
	for (size_t i = 0; i < a->extra_stores.n; i++)
		if (is_ssh(a->extra_stores.v[i]))
			return ca_log_error("%s: an extra store cannot be HOST:PATH (only --store)", a->extra_stores.v[i]),
			       1;
	if (!is_ssh(*in) && !store)
		return 0;
	if ((e = cafs_interrupt_start()) < 0)
		return ca_log_error_errno(e, "signals"), 1;
	if (is_ssh(*in)) {
		bool chunks = store && same_host(*in, store);
		e = ssh_open(a, *in, false, is_index(w) ? NULL : *in, is_index(w) ? *in : NULL, chunks ? store : NULL, &c);
		if (e == 0)
			e = ca_remote_hello(c.r, (is_index(w) ? CA_PROTOCOL_PULL_INDEX : CA_PROTOCOL_PULL_ARCHIVE) |
			                             (chunks ? CA_PROTOCOL_PULL_CHUNKS : 0));
		if (e == 0 && (e = stage_dir(st, NULL)) < 0)
			ca_log_error_errno(e, "temporary directory");
		if (e == 0 && asprintf(&st->in, "%s/in%s", st->dir, what_suffix(w)) < 0)
			st->in = NULL, e = ca_log_error_errno(ENOMEM, "%s", *in);
		if (e == 0 && (fd = open(st->in, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
			e = ca_log_error_errno(errno, "%s", st->in);
		if (e == 0)
			e = ca_remote_recv_file(c.r, !is_index(w), fd, is_index(w) ? CA_REMOTE_INDEX_MAX : UINT64_MAX);
		if (fd >= 0 && close(fd) < 0 && e == 0)
			e = ca_log_error_errno(errno, "%s", st->in);
		if (e == 0 && chunks) {
			e = pull_chunks(&c, st, st->in);
			store = NULL;
		} else if (e == 0) {
			e = ca_remote_goodbye(c.r);
		}
		e = ssh_close(&c, e == 0) < 0 && e == 0 ? -EIO : e;
		if (e == 0)
			*in = st->in;
	}
	if (e == 0 && store) {
		/* the index is here, its chunks there */
		if (!*in)
			e = ca_log_error_errno(EINVAL, "%s: a store on another host needs the index in a file", store);
		if (e == 0)
			e = ssh_open(a, store, false, NULL, NULL, store, &c);
		if (e == 0)
			e = ca_remote_hello(c.r, CA_PROTOCOL_PULL_CHUNKS);
		if (e == 0)
			e = pull_chunks(&c, st, ca_location_path(*in));
		e = ssh_close(&c, e == 0) < 0 && e == 0 ? -EIO : e;
	}
	return cafs_interrupt_exit_code(e < 0 ? 1 : 0);
}

/* After make into made (and chunks into local_store): pushes it to dst,
 * HOST:PATH, with the chunks the remote lacks when store is on dst's
 * host (else the chunks stay in the store they were made into). Returns
 * 0 or the exit code. */
static int remote_push(const struct casync_args *a, const char *dst, enum what w, const char *made,
                       const char *store, const char *local_store)
{
	struct ssh_conn c = { .pid = -1, .in = -1, .out = -1, .sigpipe = SIG_ERR };
	bool chunks = is_index(w) && is_ssh(store);
	int fd = open(made, O_RDONLY | O_CLOEXEC), e = 0;
	if (fd < 0)
		return ca_log_error_errno(errno, "%s", made), 1;
	if ((e = cafs_interrupt_start()) < 0) {
		close(fd);
		return ca_log_error_errno(e, "signals"), 1;
	}
	e = ssh_open(a, dst, true, is_index(w) ? NULL : dst, is_index(w) ? dst : NULL, chunks ? store : NULL, &c);
	if (e == 0)
		e = ca_remote_hello(c.r, !is_index(w) ? CA_PROTOCOL_PUSH_ARCHIVE
		                         : chunks     ? CA_PROTOCOL_PUSH_INDEX | CA_PROTOCOL_PUSH_CHUNKS |
		                                            CA_PROTOCOL_PUSH_INDEX_CHUNKS
		                                      : CA_PROTOCOL_PUSH_INDEX);
	if (e == 0)
		e = ca_remote_send_file(c.r, !is_index(w), fd);
	if (e == 0) /* until the remote's goodbye */
		e = ca_remote_push_store_chunks(c.r, chunks ? local_store : NULL);
	e = ssh_close(&c, e == 0) < 0 && e == 0 ? -EIO : e;
	close(fd);
	return cafs_interrupt_exit_code(e < 0 ? 1 : 0);
}

/* `casync pull|push - ARCHIVE INDEX WSTORE [RSTORE...]`: the remote end,
 * on standard input and output (run by the ssh of remote_pull or of
 * casync itself). */
static int verb_serve(const struct casync_args *a, bool push, char **pos, int npos)
{
	struct ca_remote *r = NULL;
	const char *p[4];
	int e;
	(void)a;
	if (npos < 4)
		return usage(a, "%s: expected at least 4 arguments", push ? "push" : "pull");
	for (int i = 0; i < 4; i++)
		p[i] = strcmp(pos[i], "-") && *pos[i] ? pos[i] : NULL;
	if (p[0])
		return ca_log_error("%s: a base is not supported", push ? "push" : "pull"), 1;
	if (!p[1] && !p[2] && !p[3] && npos == 4)
		return ca_log_error("%s: nothing to do", push ? "push" : "pull"), 1;
	signal(SIGPIPE, SIG_IGN);
	/* ssh's hang-up or a SIGTERM: a pushed file half-written is removed */
	if ((e = cafs_interrupt_start()) < 0)
		return ca_log_error_errno(e, "signals"), 1;
	e = ca_remote_new(STDIN_FILENO, STDOUT_FILENO, "client", remote_timeout(), &r);
	if (e == 0) {
		ca_remote_set_cancel(r, cafs_interrupt_flag());
		e = ca_remote_serve(r, push, p[1], p[2], p[3], pos + 4, (size_t)(npos - 4));
	} else {
		ca_log_error_errno(e, "%s", push ? "push" : "pull");
	}
	ca_remote_free(r);
	return cafs_interrupt_exit_code(e < 0 ? 1 : 0);
}

/* list/mtree/stat of a directory are of the archive casync would make of
 * it: its stream, made with cafs make's options (the same translation as
 * for make) and decoded as it is made, never written anywhere (`casync
 * list /` must not copy the file system into $TMPDIR). */
static int tree_read_dir(const struct casync_args *a, const char *verb, const char *dir)
{
	struct call k;
	const char *label = NULL;
	int r;
	if (call_begin(&k, &cafs_command_make) < 0)
		return ca_log_error_errno(ENOMEM, "%s", dir), 1;
	apply_options(a, T_MAKE, &k);
	cafs_set_verbosity(k.q->verbosity);
	r = k.r;
	if (r == 0) {
		/* mtree names its digest field after --digest */
		enum ca_digest_type t;
		if (a->digest && ca_digest_type_parse(a->digest, &t) == 0)
			label = t == CA_DIGEST_SHA256 ? "sha256digest" : "sha512256digest";
		r = cafs_tree_read_dir(verb, dir, &((struct cafs_make_request *)k.q)->opts, !a->recursive, label);
	}
	call_end(&k);
	return r;
}

/* stat has no cafs command of its own: the function behind it, with the
 * stores the other verbs get as -s */
static int verb_stat(const struct casync_args *a, const char *in, const char *sub)
{
	size_t n = 0;
	char **stores = calloc(a->extra_stores.n + 1, sizeof(char *));
	int r;
	if (!stores)
		return ca_log_error_errno(ENOMEM, "stat"), 1;
	if (a->store)
		stores[n++] = (char *)a->store;
	for (size_t i = 0; i < a->extra_stores.n; i++)
		stores[n++] = a->extra_stores.v[i];
	cafs_set_verbosity(a->verbosity);
	r = cafs_stat_archive(in, stores, n, sub, NULL);
	free(stores);
	return r;
}

/* What an input named in (NULL: standard input) is to list, mtree, stat
 * and digest, as casync decides: --what, the suffix, then what the file
 * is. Returns -1 to go on, else an exit code. */
static int read_what(const struct casync_args *a, const char *verb, const char *in, bool digest, bool seek,
                     enum what *ret)
{
	enum what w = a->what;
	struct stat s;
	int r;
	if (!digest && (w == WHAT_BLOB || w == WHAT_BLOB_INDEX))
		return usage(a, "\"%s\" operation may only be combined with --what=archive, archive-index, or directory.",
		             verb);
	if (w == WHAT_ANY && in) {
		w = what_of_name(in);
		if (w == WHAT_BLOB_INDEX && !digest)
			w = WHAT_ANY; /* list goes by .catar and .caidx only */
	}
	if (in && (ca_location_kind(in) != CA_LOCATION_PATH || is_ssh(in))) {
		if (w == WHAT_DIRECTORY)
			return usage(a, "Input must be local path: %s", in);
		if (w == WHAT_ANY)
			return usage(a, "%s: cannot tell what to read: use --what=", in);
		*ret = w;
		return -1;
	}
	r = in ? stat(ca_location_path(in), &s) : fstat(STDIN_FILENO, &s);
	if (r < 0)
		return ca_log_error_errno(errno, "%s", in ? in : "standard input"), 1;
	if (S_ISDIR(s.st_mode)) {
		if (w == WHAT_ANY)
			w = WHAT_DIRECTORY;
		else if (w != WHAT_DIRECTORY)
			return ca_log_error("%s: a directory, but not read as one (--what=)", in ? in : "standard input"), 1;
	} else if (S_ISREG(s.st_mode) || (digest && S_ISBLK(s.st_mode))) {
		if (w == WHAT_ANY && digest)
			w = seek ? WHAT_ARCHIVE : WHAT_BLOB;
		else if (w == WHAT_ANY && in)
			return ca_log_error("%s: input should be a directory, .catar or .caidx file", in), 1;
		else if (w == WHAT_ANY)
			w = WHAT_ARCHIVE;
		else if (w == WHAT_DIRECTORY)
			return ca_log_error("%s: a file, but --what=directory", in ? in : "standard input"), 1;
	} else {
		return ca_log_error("%s: neither a directory nor a regular file", in ? in : "standard input"), 1;
	}
	if (seek && w != WHAT_ARCHIVE && w != WHAT_ARCHIVE_INDEX)
		return usage(a, "%s: subtree path only supported for an archive or archive index", verb);
	*ret = w;
	return -1;
}

/* list, mtree, stat, digest: INPUT defaults to "." (standard input with a
 * --what= other than directory); a directory is read as the stream of its
 * archive (tree_read_dir) */
static int verb_read(const struct casync_args *a, const char *verb, char **pos, int npos)
{
	struct stage st = { 0 };
	struct casync_args b = *a;
	bool digest = !strcmp(verb, "digest");
	const char *in = npos > 0 ? pos[0] : NULL, *sub = npos > 1 ? pos[1] : NULL;
	unsigned takes = 0;
	enum what w = WHAT_ANY;
	int r;

	if (npos > 2)
		return usage(a, "%s: input path/URL and subtree path expected", verb);
	if (!in && (a->what == WHAT_ANY || a->what == WHAT_DIRECTORY))
		in = ".";
	if (in && !strcmp(in, "-"))
		in = NULL;
	r = read_what(a, verb, in, digest, sub != NULL, &w);
	if (r >= 0)
		return r;
	if (w == WHAT_DIRECTORY && sub)
		return usage(a, "%s: subtree path only supported for an archive or archive index", verb);
	if (is_index(w)) {
		if (stage_store(a, &st, in) < 0) {
			r = 1;
			goto out;
		}
		b.store = st.store;
	}
	if ((r = remote_pull(a, &st, &in, w)) != 0)
		goto out;
	if (is_index(w))
		b.store = st.store;
	if (w == WHAT_BLOB && !in) {
		in = "-"; /* cafs digest reads standard input */
	} else if (w == WHAT_DIRECTORY && !digest) {
		r = tree_read_dir(&b, verb, in ? in : "/proc/self/fd/0");
		goto out;
	} else if (stage_input(&st, in, w, &in) < 0) {
		r = 1;
		goto out;
	}
	if (!strcmp(verb, "stat")) {
		r = verb_stat(&b, in, sub);
		goto out;
	}
	const struct cafs_command *c = NULL;
	struct call k;
	(void)command_takes(verb, &c, &takes);
	if (call_begin(&k, c) < 0) {
		r = 1;
		goto out;
	}
	apply_options(&b, takes, &k);
	if (!a->recursive && !strcmp(verb, "list"))
		call_set(&k, CAFS_OPT_RECURSIVE, "no");
	char *operands[2] = { (char *)in, (char *)sub };
	r = call_run(&k, sub ? 2 : 1, operands);
	call_end(&k);
out:
	stage_release(&st);
	return r;
}

/* -c: the user's make cache, $XDG_CACHE_HOME/cafs/make (else
 * ~/.cache/cafs/make): its records are keyed by the input, and the input
 * is left as it is (casync writes INPUT/.cacac). NULL: no home. */
static char *auto_make_cache(void)
{
	const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	char *p = NULL;
	if (x && *x == '/')
		return asprintf(&p, "%s/cafs/make", x) < 0 ? NULL : p;
	if (h && *h == '/')
		return asprintf(&p, "%s/.cache/cafs/make", h) < 0 ? NULL : p;
	return NULL;
}

static int verb_make(const struct casync_args *a, char **pos, int npos)
{
	struct call mk = { 0 };
	struct stage st = { 0 };
	struct casync_args b = *a;
	char *auto_cache = NULL;
	const char *dst = npos > 0 && strcmp(pos[0], "-") ? pos[0] : NULL, *in = npos > 1 ? pos[1] : NULL;
	enum what w = a->what;
	struct stat s;
	int r;

	if (npos > 2)
		return usage(a, "make: a pair of output and input path/URL expected");
	if (w == WHAT_BLOB || w == WHAT_DIRECTORY)
		return usage(a, "\"make\" operation may only be combined with --what=archive, --what=archive-index or "
		                "--what=blob-index.");
	if (w == WHAT_ANY && dst) {
		w = what_of_name(dst);
		if (w == WHAT_ANY)
			return usage(a, "%s: output must end in .catar, .caidx or .caibx", dst);
	}
	if (!in && (w == WHAT_ARCHIVE || w == WHAT_ARCHIVE_INDEX))
		in = ".";
	if (in && !strcmp(in, "-"))
		in = NULL;
	if (in && ca_location_kind(in) != CA_LOCATION_PATH)
		return usage(a, "make: input must be local path: %s", in);
	if (in ? stat(ca_location_path(in), &s) < 0 : fstat(STDIN_FILENO, &s) < 0)
		return ca_log_error_errno(errno, "%s", in ? in : "standard input"), 1;
	if (S_ISDIR(s.st_mode)) {
		if (w == WHAT_ANY)
			w = WHAT_ARCHIVE;
		else if (w == WHAT_BLOB_INDEX)
			return ca_log_error("%s: a directory, but the output is a blob index", in ? in : "standard input"), 1;
		if (!in)
			in = "/proc/self/fd/0";
	} else if (S_ISREG(s.st_mode) || S_ISBLK(s.st_mode) || !in) {
		/* cafs make also reads a pipe, where casync refuses */
		if (w == WHAT_ANY)
			w = WHAT_BLOB_INDEX;
		else if (w != WHAT_BLOB_INDEX)
			return ca_log_error("%s: a file, but the output is an archive", in ? in : "standard input"), 1;
		if (!in)
			in = "-";
	} else {
		return ca_log_error("%s: neither a directory, a regular file, nor a block device", in), 1;
	}
	r = 0;
	if (is_index(w)) {
		r = stage_store(a, &st, dst);
		b.store = st.store;
	}
	/* HOST:PATH: made here (chunks for a store on that host into a
	 * private one), then pushed */
	bool push = is_ssh(dst);
	if (r == 0 && is_index(w) && is_ssh(st.store) && !same_host(dst, st.store)) {
		r = ca_log_error_errno(EINVAL, "%s: chunks are pushed to a HOST:PATH store with an index on the same host",
		                       st.store);
	} else if (r == 0 && is_index(w) && is_ssh(st.store)) {
		r = stage_pulled_store(&st);
		b.store = st.pulled;
	}
	if (r == 0 && push) {
		r = stage_dir(&st, NULL);
		if (r < 0)
			ca_log_error_errno(r, "temporary directory");
		else if (asprintf(&st.out, "%s/out%s", st.dir, what_suffix(w)) < 0)
			r = ca_log_error_errno(ENOMEM, "make"), st.out = NULL;
	}
	/* made under the suffix of w: in a private directory for standard
	 * output, else beside OUT, to be renamed */
	if (r == 0 && !push && (!dst || what_of_name(dst) != w)) {
		r = stage_dir(&st, dst ? ca_location_path(dst) : NULL);
		if (r < 0)
			ca_log_error_errno(r, "%s", dst ? dst : "temporary directory");
		else if (asprintf(&st.out, "%s/out%s", st.dir, what_suffix(w)) < 0)
			r = ca_log_error_errno(ENOMEM, "make"), st.out = NULL;
	}
	if (r == 0 && call_begin(&mk, &cafs_command_make) < 0)
		r = ca_log_error_errno(ENOMEM, "make");
	if (r < 0) {
		r = 1;
		goto out;
	}
	apply_options(&b, T_STORE | T_MAKE, &mk);
	/* casync's encoder cache is cafs make's incremental make cache */
	if (a->cache)
		call_set(&mk, CAFS_OPT_CACHE, a->cache);
	else if (a->cache_auto && (auto_cache = auto_make_cache()))
		call_set(&mk, CAFS_OPT_CACHE, auto_cache);
	char *operands[2] = { st.out ? st.out : (char *)dst, (char *)in };
	/* casync prints no digest when the archive goes to standard output */
	r = dst ? call_run(&mk, 2, operands) : call_run_quiet(&mk, 2, operands);
	call_end(&mk);
	if (r == 0 && push)
		r = remote_push(a, dst, w, st.out, st.store, st.pulled);
	else if (r == 0 && st.out && dst && rename(st.out, ca_location_path(dst)) < 0)
		r = (ca_log_error_errno(errno, "%s", dst), 1);
	if (r == 0 && !dst) {
		int fd = open(st.out, O_RDONLY | O_CLOEXEC);
		int k = fd < 0 ? -errno : copy_fd(fd, STDOUT_FILENO);
		if (fd >= 0)
			close(fd);
		if (k < 0)
			r = (ca_log_error_errno(k, "standard output"), 1);
	}
out:
	stage_release(&st);
	free(auto_cache);
	return r;
}

/* 1 when directory path holds nothing but . and .., 0 when it holds
 * something, or a negative errno. */
static int dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int r = 1;
	if (!d)
		return -errno;
	errno = 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			r = 0;
			break;
		}
	if (r == 1 && errno)
		r = -errno;
	closedir(d);
	return r;
}

static int verb_extract(const struct casync_args *a, char **pos, int npos)
{
	struct strv out = { 0 }; /* the operands */
	const struct cafs_command *c = NULL;
	struct call k = { 0 };
	struct stage st = { 0 };
	struct casync_args b = *a;
	struct stat s;
	const char *in = npos > 0 && strcmp(pos[0], "-") ? pos[0] : NULL, *dest = npos > 1 ? pos[1] : NULL;
	enum what w = a->what;
	unsigned takes = 0;
	int r;
	if (npos > 3)
		return usage(a, "extract: input path/URL, output path, and subtree path expected");
	if (w == WHAT_BLOB || w == WHAT_DIRECTORY)
		return usage(a, "\"extract\" operation may only be combined with --what=archive, --what=archive-index, "
		                "--what=blob-index.");
	if (w == WHAT_ANY && in) {
		w = what_of_name(in);
		if (w == WHAT_ANY)
			return usage(a, "%s: input must end in .catar, .caidx or .caibx", in);
	}
	/* as casync: an archive into the current directory, a blob to stdout;
	 * but casync's --delete=yes would then remove whatever the current
	 * directory held (a workspace, a home): unless it is empty, it must be
	 * named (cafs(1), CASYNC COMPATIBILITY) */
	if (!dest && (w == WHAT_ARCHIVE || w == WHAT_ARCHIVE_INDEX)) {
		dest = ".";
		r = dir_is_empty(dest);
		if (r < 0)
			return ca_log_error_errno(r, "current directory"), 1;
		if (r == 0)
			return usage(a, "extract: no output directory given, and the current directory is not empty: "
			                "name it ('.') to extract into it (and delete what the archive does not hold)");
	}
	if (dest && !strcmp(dest, "-"))
		dest = NULL;
	/* what the output is decides when nothing else did */
	r = dest ? stat(dest, &s) : fstat(STDOUT_FILENO, &s);
	if (r == 0 && S_ISDIR(s.st_mode)) {
		if (w == WHAT_ANY)
			w = WHAT_ARCHIVE_INDEX;
		else if (w == WHAT_BLOB_INDEX)
			return ca_log_error("%s: a directory, but the input is a blob index", dest ? dest : "standard output"), 1;
	} else if (r == 0 && (S_ISREG(s.st_mode) || S_ISBLK(s.st_mode))) {
		if (w == WHAT_ANY)
			w = WHAT_BLOB_INDEX;
		else if (w != WHAT_BLOB_INDEX)
			return ca_log_error("%s: a file, but the input is an archive", dest ? dest : "standard output"), 1;
	} else if (r == 0 && dest) {
		return ca_log_error("%s: neither a directory, a regular file, nor a block device", dest), 1;
	}
	if (w == WHAT_ANY)
		return usage(a, "extract: cannot tell what to extract: use --what=archive, --what=archive-index or "
		                "--what=blob-index");
	if (npos > 2 && w == WHAT_BLOB_INDEX)
		return usage(a, "extract: subtree path only supported for an archive or archive index");
	(void)command_takes("extract", &c, &takes);
	r = 0;
	if (is_index(w))
		r = stage_store(a, &st, in);
	if (r == 0 && (r = remote_pull(a, &st, &in, w)) != 0) {
		stage_release(&st);
		return r;
	}
	if (is_index(w))
		b.store = st.store;
	if (r == 0)
		r = stage_input(&st, in, w, &in) < 0 ? -EIO : 0;
	if (r == 0 && call_begin(&k, c) < 0)
		r = -EIO; /* reported */
	if (r == 0)
		apply_options(&b, takes, &k);
	/* casync seeds from what the output already holds (--seed-output=yes):
	 * for a blob, that file or device is one more seed */
	if (r == 0 && w == WHAT_BLOB_INDEX && a->seed_output && dest && stat(dest, &s) == 0 &&
	    ((S_ISREG(s.st_mode) && s.st_size > 0) || S_ISBLK(s.st_mode)))
		call_set(&k, CAFS_OPT_SEED, dest);
	if (r == 0)
		r = strv_add(&out, "%s", in);
	if (r == 0 && npos < 3) {
		r = strv_add(&out, "%s", dest ? dest : "-");
	} else if (r == 0) {
		/* casync extracts SUBTREE as OUT/<its last component>, making
		 * OUT if need be; cafs extract puts SUBTREE's contents in OUT */
		const char *sub = pos[2], *e = sub + strlen(sub);
		while (e > sub && e[-1] == '/')
			e--;
		const char *bn = e;
		while (bn > sub && bn[-1] != '/')
			bn--;
		if (mkdir(dest, 0777) < 0 && errno != EEXIST)
			r = -errno;
		else if (bn == e || (e - bn == 1 && *bn == '.'))
			r = strv_add(&out, "%s", dest);
		else
			r = strv_add(&out, "%s/%.*s", dest, (int)(e - bn), bn);
		if (r == 0)
			r = strv_add(&out, "%s", sub);
	}
	if (r == -EIO)
		r = 1; /* stage_input or call_begin logged */
	else
		r = r < 0 ? (ca_log_error_errno(r, "extract"), 1) : call_run(&k, (int)out.n, out.v);
	call_end(&k);
	strv_release(&out);
	stage_release(&st);
	return r;
}

static int verb_simple(const struct casync_args *a, const char *verb, char **pos, int npos, int min, int max)
{
	const struct cafs_command *c = NULL;
	struct call k;
	unsigned takes = 0;
	int r;
	if (npos < min || (max >= 0 && npos > max))
		return usage(a, "%s: wrong number of arguments (see 'casync --help')", verb);
	(void)command_takes(verb, &c, &takes);
	if (call_begin(&k, c) < 0)
		return 1;
	apply_options(a, takes, &k);
	/* gc: casync's store for the first index: --store, else $CASYNC_STORE */
	if (!strcmp(verb, "gc") && !a->store && getenv("CASYNC_STORE"))
		call_set(&k, CAFS_OPT_STORE, getenv("CASYNC_STORE"));
	r = call_run(&k, npos, pos);
	call_end(&k);
	return r;
}

/* mount [IN] MOUNTPOINT: IN an archive (standard input without it), or an
 * index by --what or its suffix; a .caibx (cafs's: one file) as it is */
static int verb_mount(const struct casync_args *a, char **pos, int npos)
{
	const struct cafs_command *c = NULL;
	struct call k = { 0 };
	struct stage st = { 0 };
	struct casync_args b = *a;
	const char *in = npos > 1 && strcmp(pos[0], "-") ? pos[0] : NULL, *mnt = pos[npos - 1];
	enum what w = a->what;
	unsigned takes = 0;
	int r = 0;
	if (npos < 1 || npos > 2)
		return usage(a, "mount: an archive path/URL expected, followed by a mount path");
	if (w != WHAT_ANY && w != WHAT_ARCHIVE && w != WHAT_ARCHIVE_INDEX)
		return usage(a, "\"mount\" operation may only be combined with --what=archive and --what=archive-index.");
	if (w == WHAT_ANY)
		w = in && what_of_name(in) != WHAT_ANY ? what_of_name(in) : WHAT_ARCHIVE;
	if (is_index(w))
		r = stage_store(a, &st, in) < 0 ? -EIO : 0;
	if (r == 0 && (r = remote_pull(a, &st, &in, w)) != 0) {
		stage_release(&st);
		return r;
	}
	b.store = st.store ? st.store : a->store;
	if (r == 0 && stage_input(&st, in, w, &in) < 0)
		r = -EIO;
	(void)command_takes("mount", &c, &takes);
	if (r == 0 && call_begin(&k, c) < 0)
		r = -EIO; /* reported */
	if (r == 0) {
		apply_options(&b, takes, &k);
		call_set(&k, CAFS_OPT_FOREGROUND, NULL); /* casync mount stays until unmounted */
	}
	/* casync mount makes a missing mount point (--mkdir=no: not) */
	if (r == 0 && a->mkdir && mkdir(mnt, 0777) < 0 && errno != EEXIST)
		r = ca_log_error_errno(errno, "%s", mnt);
	char *operands[2] = { (char *)in, (char *)mnt };
	r = r < 0 ? 1 : call_run(&k, 2, operands);
	call_end(&k);
	stage_release(&st);
	return r;
}

static int casync_verb(const struct casync_args *a, char **pos, int npos)
{
	const char *verb = pos[0];
	pos++;
	npos--;
	if (!strcmp(verb, "help")) {
		fputs(casync_help, stdout);
		return 0;
	}
	if (!strcmp(verb, "make"))
		return verb_make(a, pos, npos);
	if (!strcmp(verb, "extract"))
		return verb_extract(a, pos, npos);
	if (!strcmp(verb, "list") || !strcmp(verb, "mtree") || !strcmp(verb, "stat") || !strcmp(verb, "digest"))
		return verb_read(a, verb, pos, npos);
	if (!strcmp(verb, "gc"))
		return verb_simple(a, "gc", pos, npos, 1, -1);
	if (!strcmp(verb, "mount"))
		return verb_mount(a, pos, npos);
	/* casync's remote end: not in its --help, run over ssh by the other end */
	if (!strcmp(verb, "pull") || !strcmp(verb, "push"))
		return verb_serve(a, !strcmp(verb, "push"), pos, npos);
	if (!strcmp(verb, "mkdev")) {
		if (npos > 2)
			return usage(a, "mkdev: input path/URL and node expected");
		ca_log_error("mkdev: NBD block devices are not supported by cafs (use 'casync mount' of a .caibx)");
		return 1;
	}
	return usage(a, "unknown verb '%s' (invoke 'casync --help' for a list of available verbs)", verb);
}

/* `cafs [CASYNC-OPTIONS] COMMAND ARGS`: the translated options, then ARGS
 * as the command's own */
static int prefixed_command(const struct casync_args *a, char **rest, int nrest)
{
	const struct cafs_command *c = NULL;
	struct call k;
	unsigned takes;
	int r;
	if (command_takes(rest[0], &c, &takes) < 0 || !c)
		return cafs_usage_error(NULL, "%s: global options before this command are not supported", rest[0]);
	if (call_begin(&k, c) < 0)
		return 1;
	apply_options(a, takes, &k);
	/* the command's own arguments, parsed into the same request */
	r = k.r ? k.r : cafs_command_parse(c, k.q, nrest, rest);
	if (r < 0)
		r = c->run(k.q);
	call_end(&k);
	return r;
}

int cafs_casync_main(int argc, char **argv, enum cafs_casync_mode mode)
{
	struct casync_args a = { .mode = mode };
	int verb = 0, r;
	/* getopt's own messages start with argv[0]: "cafs" */
	char *arg0 = argv[0];
	argv[0] = "cafs";
	r = parse_args(argc, argv, &a, &verb);
	argv[0] = arg0;
	if (r >= 0)
		goto out;
	if (verb >= argc) {
		r = usage(&a, "missing verb (invoke '%s --help' for a list of available verbs)",
		          mode == CAFS_CASYNC_PREFIX ? "cafs" : "casync");
		goto out;
	}
	if (mode == CAFS_CASYNC_PREFIX) {
		r = prefixed_command(&a, argv + verb, argc - verb);
	} else {
		r = casync_verb(&a, argv + verb, argc - verb);
		/* casync exits 1 on every failure, usage errors included */
		if (r == EXIT_USAGE)
			r = 1;
	}
out:
	strv_release(&a.extra_stores);
	strv_release(&a.seeds);
	strv_release(&a.with);
	strv_release(&a.without);
	return r;
}
