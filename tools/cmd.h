/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd.h - the subcommands of the cafs command and what they share.
 *
 * Each command is a struct cafs_command (defined beside its code in
 * cmd_*.c): its help, one option table, and what it is asked to do as a
 * request, filled by set() per option and operands(), then run(). Both
 * front ends fill requests: the getopt parser (cafs_command_parse, from
 * the table) and the casync front end (casync_cli.c, calling set() with
 * the same ids). Exit codes: 0 success, 1 runtime error (already reported
 * on stderr as "cafs: <what>: <why>"), 2 usage error.
 */
#ifndef CAFS_CMD_H
#define CAFS_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* the image calls' options: their types (digests, uid shifts) are this
 * header's own; an image's options (source.h) only by pointer here, for
 * the commands that open one to include */
#include "image/image_make.h"

struct ca_image_opts;
struct ca_minisign_key;

#define EXIT_USAGE 2

/* The options' ids (cafs_option.id), one per long name across the commands:
 * the casync front end sets a request's field by the same id. */
enum cafs_option_id {
	CAFS_OPT_FIRST = 0x100, /* above the letters getopt returns */
	CAFS_OPT_ALLOW_DOWNGRADE,
	CAFS_OPT_CACHE,
	CAFS_OPT_CHUNK_SIZE,
	CAFS_OPT_COMMENT,
	CAFS_OPT_COMPRESSION,
	CAFS_OPT_DELETE,
	CAFS_OPT_DIGEST,
	CAFS_OPT_DRY_RUN,
	CAFS_OPT_EXCLUDE_FILE,
	CAFS_OPT_EXCLUDE_NODUMP,
	CAFS_OPT_EXCLUDE_SUBMOUNTS,
	CAFS_OPT_FILL,
	CAFS_OPT_FOREGROUND,
	CAFS_OPT_HARDLINK,
	CAFS_OPT_KEEP,
	CAFS_OPT_LEGACY,
	CAFS_OPT_LOG,
	CAFS_OPT_LONG,
	CAFS_OPT_LRU_SIZE,
	CAFS_OPT_META,
	CAFS_OPT_MIN_AGE,
	CAFS_OPT_NAME,
	CAFS_OPT_NO_CACHE,
	CAFS_OPT_OFFLINE,
	CAFS_OPT_OPTIONS,
	CAFS_OPT_OUTPUT,
	CAFS_OPT_OVERLAY_XATTRS,
	CAFS_OPT_PROFILE,
	CAFS_OPT_PUNCH_HOLES,
	CAFS_OPT_RATE_LIMIT_BPS,
	CAFS_OPT_READAHEAD,
	CAFS_OPT_RECORD_PROFILE,
	CAFS_OPT_RECURSIVE,
	CAFS_OPT_REFLINK,
	CAFS_OPT_SECRET_KEY,
	CAFS_OPT_SEED,
	CAFS_OPT_SEED_STORE,
	CAFS_OPT_SIGNED_NAME,
	CAFS_OPT_STORE,
	CAFS_OPT_TAKEOVER,
	CAFS_OPT_THREADS,
	CAFS_OPT_TRUSTED_COMMENT,
	CAFS_OPT_TRUSTED_KEY,
	CAFS_OPT_UID_RANGE,
	CAFS_OPT_UID_SHIFT,
	CAFS_OPT_UNDO_IMMUTABLE,
	CAFS_OPT_WITH,
	CAFS_OPT_WITHOUT,
	CAFS_OPT_MAX_SIZE,
	CAFS_OPT_REPAIR,
	CAFS_OPT_FORMAT,
	CAFS_OPT_JSON,
	CAFS_OPT_TEXTFILE,
	CAFS_OPT_DELTA,
	CAFS_OPT_FROM_STORE,
	CAFS_OPT_LEVEL,
};

/*
 * One option of a command: what its getopt parser, `cafs help` and the
 * casync front end know of it. The table of a command ends with a NULL name.
 */
struct cafs_option {
	const char *name;  /* long name, without "--" */
	char short_name;   /* 0: none */
	const char *arg;   /* the argument as the help shows it ("DIR|URL"); NULL: takes none */
	int id;            /* which request field it sets: passed to the command's set() */
	const char *help;  /* the help text; lines after the first are indented to the
	                    * command's column; NULL: accepted but not shown */
	unsigned keep;     /* mount: how the keeper's servers get it again (CAFS_KEEP_*) */
	unsigned verbs;    /* a command with verbs: those it is for (bit i: the
	                    * command's verbs[i]); 0: all of them */
};

/* The signed-index options of every command that opens an index (mount and
 * cache fill word their help for themselves). */
#define CAFS_OPTIONS_TRUST \
	{ "trusted-key", 0, "FILE", CAFS_OPT_TRUSTED_KEY, \
	  .help = "only an index signed by this minisign key (repeatable;\n" \
	          "see SECURITY in cafs(1))" }, \
	{ "allow-downgrade", 0, NULL, CAFS_OPT_ALLOW_DOWNGRADE, \
	  .help = "accept an index signed before the newest accepted" }, \
	{ "signed-name", 0, "NAME", CAFS_OPT_SIGNED_NAME, \
	  .help = "the file name its signature must give (default: IN's)" }

/* cafs_option.keep: saved for the keeper's servers as given, with its path
 * made absolute, or each store of a failover group made absolute, or a
 * profile made absolute unless "none"; 0: this process's (-f, --takeover) */
enum {
	CAFS_KEEP_NO,
	CAFS_KEEP_AS_IS,
	CAFS_KEEP_PATH,
	CAFS_KEEP_STORES,
	CAFS_KEEP_PROFILE,
	CAFS_KEEP_FUSE_OPTIONS, /* -o: the paths inside its list made absolute */
};

/* What every request starts with: filled by the parser (-v, -q) or by the
 * casync front end; the command's own fields follow. */
struct cafs_request {
	int verbosity; /* -1 errors only, 0 warnings, 1 info, 2 debug */
	int verb;      /* a command with verbs: the index of the one given */
};

/*
 * A command: its help, its options, and what it was asked to do (a request
 * of request_size bytes beginning with struct cafs_request) in three steps:
 * init, set() once per option (by the parser or the casync front end) and
 * operands(), then run(); release() frees what the request holds.
 * set() also sees -v and -q (ids 'v' and 'q'; the verbosity is already
 * counted) and ignores ids it does not know. A request keeps the strings
 * given to set() and operands(): they must outlive it.
 * set/operands return 0 or an exit code (already reported); run the exit code.
 * A command with verbs (`cache stat ...`) takes the verb first; its parser
 * then takes only the options whose table entry is for that verb.
 */
struct cafs_command {
	const char *name;
	const char *synopsis;  /* one line: "make [OPTIONS] OUT.caibx|OUT.catar|OUT.caidx INPUT" */
	const char *help_head; /* `cafs help NAME`: text before the options (NULL: none) */
	const struct cafs_option *options;
	int help_column;       /* where the options' help text starts */
	const char *help_tail; /* ... and after them */
	size_t request_size;
	void (*init)(struct cafs_request *q);
	int (*set)(struct cafs_request *q, int id, const char *arg);
	int (*operands)(struct cafs_request *q, int n, char **arg);
	int (*run)(struct cafs_request *q);
	void (*release)(struct cafs_request *q);
	const char *const *verbs; /* NULL, or the verbs (NULL-ended): q->verb */
};

/* the commands (each in its cmd_*.c) */
extern const struct cafs_command cafs_command_make, cafs_command_extract, cafs_command_digest, cafs_command_info,
	cafs_command_list, cafs_command_mtree, cafs_command_meta, cafs_command_mount, cafs_command_stats,
	cafs_command_cache, cafs_command_gc, cafs_command_sign, cafs_command_delta;

/* The generic parser: argv (argv[0] the command name; the array may be
 * permuted) into q, which init() (and the casync front end) already filled.
 * Sets the log level. -1 to go on, or the exit code (-h: 0 after the help). */
int cafs_command_parse(const struct cafs_command *c, struct cafs_request *q, int argc, char **argv);
/* c's option of that id, or a common one (-v, -q, -h); NULL: none. */
const struct cafs_option *cafs_command_option(const struct cafs_command *c, int id);
/* Parse argv and run c: its exit code. */
int cafs_command_main(const struct cafs_command *c, int argc, char **argv);
/* A request for c, init()ed (NULL: out of memory, reported), and its end. */
struct cafs_request *cafs_request_new(const struct cafs_command *c);
void cafs_request_free(const struct cafs_command *c, struct cafs_request *q);

/* Print "cafs: usage: ..." hint to stderr and return EXIT_USAGE. */
int cafs_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print a command's help to f. */
void cafs_command_help(const struct cafs_command *c, FILE *f);

/* A stream digest as make and digest print it: 64 hex digits and a newline on stdout. */
void cafs_print_digest(const uint8_t d[CA_CHUNK_ID_SIZE]);
struct ca_make_stats;
/* make's closing info line (shown with -v). */
void cafs_log_make_stats(const struct ca_make_stats *stats);

/* --json: "KEY":STRING on stdout (s escaped, base/json_out.h), and when s
 * is not UTF-8 (shown with U+FFFD) also "KEY_hex":"<its exact bytes in
 * hex>" (docs/json.md). */
void cafs_json_name(const char *key, const char *s);

/* Options several commands share. */
/* -v/-q: the level of the command's logger (main's). */
void cafs_set_verbosity(int level);

/* The options every command takes and the answer to an unknown one: -1
 * when c was -v or -q (parsing goes on), else the exit code the command
 * returns at once: 0 after -h printed its help, 2 for an unknown option. */
int cafs_common_option(const struct cafs_command *cmd, int c, int *verbosity);
/* yes/no as casync's parse_boolean reads it (1/0, y/n, true/false, t/f,
 * on/off, any case): 0, or -EINVAL. */
int cafs_parse_bool(const char *s, bool *ret);
/* casync's --uid-shift (a uid, or yes/no) and --uid-range (1..2^32, or
 * yes/no) into u, which starts zeroed: either turns the mapping on (range
 * 65536 unless given). 0 or -EINVAL. */
int cafs_parse_uid_shift(const char *s, struct ca_uid_shift *u);
int cafs_parse_uid_range(const char *s, struct ca_uid_shift *u);
/* -j/--threads: 0..64 */
int cafs_parse_threads(const char *s, unsigned *ret);

/* --trusted-key FILE (repeatable), taken by every command that opens an
 * image: the keys go into the image options (source.h), where the one
 * check is made. */
struct cafs_trusted_keys {
	struct ca_minisign_key *keys;
	size_t n;
	bool allow_downgrade;    /* --allow-downgrade (source.h) */
	const char *signed_name; /* --signed-name=NAME (source.h) */
};
/* The trust options every command that opens an image takes, and the one
 * place they are parsed: --trusted-key FILE (the file is read now, so that
 * a bad one is reported before anything is opened), --allow-downgrade and
 * --signed-name=NAME (what an index's signature must say besides
 * verifying; cafs(1) SECURITY). Its ids as case labels, for set():
 *   case CAFS_TRUST_OPTION_IDS: return cafs_trust_option(cmd, id, arg, &tk);
 * Returns 0, or the exit code (2: a usage error, the key file unreadable or
 * not a key, an empty or path-like name; reported). */
#define CAFS_TRUST_OPTION_IDS CAFS_OPT_TRUSTED_KEY: case CAFS_OPT_ALLOW_DOWNGRADE: case CAFS_OPT_SIGNED_NAME
int cafs_trust_option(const char *cmd, int id, const char *arg, struct cafs_trusted_keys *tk);
void cafs_trusted_keys_release(struct cafs_trusted_keys *tk); /* accepts a zeroed one */
/* Give io tk's keys (tk may be NULL: none beyond the trusted key directory's). */
void cafs_trusted_keys_apply(const struct cafs_trusted_keys *tk, struct ca_image_opts *io);


/* cmd_tree_make.c: archives are made and digested walking a tree, with one
 * fd open per directory level: raise the soft RLIMIT_NOFILE to the hard one
 * (process state, so the command's business and not the library's). */
void cafs_raise_fd_limit(void);

/* Parsed `cafs extract` arguments (and info's: in, stores, trusted). */
struct cafs_extract_args {
	struct cafs_request base;
	const char *in, *out;
	const char *path; /* an archive's directory to extract instead of the root */
	char **stores;
	size_t n_stores;
	unsigned threads;
	char **seeds;      /* --seed (repeatable): local data to take chunks from */
	size_t n_seeds;
	const char *cache; /* --cache: keep fetched chunks in this store */
	const char *delta; /* --delta: a static delta pack (path or URL) */
	bool no_delete;    /* --delete=no: keep entries of OUT the archive does not have */
	struct cafs_trusted_keys trusted; /* --trusted-key */
	bool offline;      /* --offline: only the cache (and the index kept there by URL) */
	bool overlay_xattrs; /* --overlay-xattrs: apply trusted.overlay.* / user.overlay.* too */
	uint64_t rate_limit_bps; /* --rate-limit-bps: per HTTP transfer, 0 = none */
	struct ca_uid_shift uid_shift; /* --uid-shift, --uid-range */
	bool undo_immutable;           /* --undo-immutable */
	bool no_holes;                 /* --punch-holes=no */
	bool no_reflink;               /* --reflink=no */
	bool hardlink;                 /* --hardlink=yes: archives: link identical seed files */
	bool json;                     /* info --json */
};

/* extract --cache and --seed are core's: image/image_seed.h */

/* cmd_tree_make.c: print the digest casync digest would for a directory or an
 * archive(-index), or sub inside the archive (NULL: all of it); t (--digest)
 * for a directory (an archive's own flags say its digest). */
int cafs_digest_tree(const char *path, char **stores, size_t n_stores, const char *sub,
                     const struct cafs_trusted_keys *tk, enum ca_digest_type t);
/* cmd_tree_read.c: decode and validate an archive (.catar, .caidx) and print
 * the digest of its stream, as casync digest does; with sub, of that
 * directory's stream or that file's contents. 0 or an exit code. */
int cafs_digest_archive(const char *path, char **stores, size_t n_stores, const char *sub,
                        const struct cafs_trusted_keys *tk);
/* cmd_tree_read.c: print one entry of an archive (sub, or the root when
 * NULL) as casync stat does; 0 or an exit code. */
/* cmd_blob.c: what `cafs make` is asked to do (the casync front end also
 * reads a directory as the archive these options would make of it). */
struct cafs_make_request {
	struct cafs_request base;
	struct ca_image_make_opts opts;
	const char *profile; /* --profile */
	const char *out, *input;
};
/* cmd_tree_read.c: list (flat: --recursive=no), mtree (digest_label:
 * --digest's field name, NULL: sha512256digest) or stat of directory dir,
 * as of the archive `make` with mo would write of it, without writing it
 * anywhere: encoded into a pipe on a thread, decoded from it. 0 or an exit
 * code; errors logged. */
int cafs_tree_read_dir(const char *verb, const char *dir, const struct ca_image_make_opts *mo, bool flat,
                       const char *digest_label);
int cafs_stat_archive(const char *in, char **stores, size_t n_stores, const char *sub,
                      const struct cafs_trusted_keys *tk);

#endif
