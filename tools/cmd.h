/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd.h - the subcommands of the cafs command and what they share.
 *
 * Each command is `int cafs_cmd_NAME(int argc, char **argv)`: argv[0] is
 * the command name, it parses its own options with getopt_long and returns
 * an exit code: 0 success, 1 runtime error (already reported on stderr as
 * "cafs: <what>: <why>"), 2 usage error.
 */
#ifndef CAFS_CMD_H
#define CAFS_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/digest.h"
#include "format/format.h"
#include "trust/minisign.h"
#include "image/source.h"
#include "catar/uidshift.h"

#define EXIT_USAGE 2

struct cafs_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis; /* one line: "make [OPTIONS] OUT.caibx|OUT.catar|OUT.caidx INPUT" */
	const char *help;     /* the options, one per line, for `cafs help NAME` */
};

/* the commands; the table that names them lives in main.c */
int cafs_cmd_make(int argc, char **argv);
int cafs_cmd_extract(int argc, char **argv);
int cafs_cmd_digest(int argc, char **argv);
int cafs_cmd_info(int argc, char **argv);
int cafs_cmd_list(int argc, char **argv);
int cafs_cmd_mtree(int argc, char **argv);
int cafs_cmd_meta(int argc, char **argv);
int cafs_cmd_mount(int argc, char **argv);
int cafs_cmd_stats(int argc, char **argv);
int cafs_cmd_cache(int argc, char **argv);
int cafs_cmd_gc(int argc, char **argv);
int cafs_cmd_sign(int argc, char **argv);


const struct cafs_command *cafs_command_find(const char *name);
/* Run c with argv (argv[0] its name; the array may be permuted): its exit code. */
int cafs_command_run(const struct cafs_command *c, int argc, char **argv);

/* Print "cafs: usage: ..." hint to stderr and return EXIT_USAGE. */
int cafs_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print a command's help to f. */
void cafs_command_help(const struct cafs_command *c, FILE *f);


/* A stream digest as make and digest print it: 64 hex digits and a newline on stdout. */
void cafs_print_digest(const uint8_t d[CA_CHUNK_ID_SIZE]);
struct ca_make_stats;
/* make's closing info line (shown with -v). */
void cafs_log_make_stats(const struct ca_make_stats *stats);

/* Options several commands share. */
/* -v/-q: the level of the command's logger (main's). */
void cafs_set_verbosity(int level);

/* The options every command takes and the answer to an unknown one: -1
 * when c was -v or -q (parsing goes on), else the exit code the command
 * returns at once: 0 after -h printed its help, 2 for an unknown option. */
int cafs_common_option(const char *cmd, int c, int *verbosity);
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
#define CAFS_OPT_TRUSTED_KEY 0x200
#define CAFS_TRUSTED_KEY_OPTION { "trusted-key", required_argument, NULL, CAFS_OPT_TRUSTED_KEY }
struct cafs_trusted_keys {
	struct ca_minisign_key *keys;
	size_t n;
	bool allow_downgrade;    /* --allow-downgrade (source.h) */
	const char *signed_name; /* --signed-name=NAME (source.h) */
};
/* --allow-downgrade and --signed-name=NAME, beside --trusted-key: what an
 * index's signature must say besides verifying (cafs(1) SECURITY) */
#define CAFS_OPT_ALLOW_DOWNGRADE 0x201
#define CAFS_OPT_SIGNED_NAME 0x202
#define CAFS_TRUST_POLICY_OPTIONS                                                       \
	{ "allow-downgrade", no_argument, NULL, CAFS_OPT_ALLOW_DOWNGRADE },              \
	{ "signed-name", required_argument, NULL, CAFS_OPT_SIGNED_NAME }
/* Take CAFS_OPT_ALLOW_DOWNGRADE or CAFS_OPT_SIGNED_NAME (c) into tk: 0,
 * or the exit code (2: an empty or path-like name; reported). */
int cafs_trust_policy_option(const char *cmd, int c, const char *arg, struct cafs_trusted_keys *tk);
/* Read the key file now, so that a bad one is reported before anything is
 * opened, and append its key: 0, or the exit code (2: a usage error, the
 * file unreadable or not a key; reported). */
int cafs_trusted_key_add(const char *cmd, struct cafs_trusted_keys *tk, const char *path);
void cafs_trusted_keys_release(struct cafs_trusted_keys *tk); /* accepts a zeroed one */
/* Give io tk's keys (tk may be NULL: none beyond the trusted key directory's). */
void cafs_trusted_keys_apply(const struct cafs_trusted_keys *tk, struct ca_image_opts *io);


/* cmd_tree_make.c: archives are made and digested walking a tree, with one
 * fd open per directory level: raise the soft RLIMIT_NOFILE to the hard one
 * (process state, so the command's business and not the library's). */
void cafs_raise_fd_limit(void);

/* Parsed `cafs extract` arguments. */
struct cafs_extract_args {
	const char *in, *out;
	const char *path; /* an archive's directory to extract instead of the root */
	char **stores;
	size_t n_stores;
	unsigned threads;
	char **seeds;      /* --seed (repeatable): local data to take chunks from */
	size_t n_seeds;
	const char *cache; /* --cache: keep fetched chunks in this store */
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
};

struct ca_reflink;
/* cache_seed.c: extract --cache and --seed. Makes a->cache (or, for seeds
 * without a cache, a private temporary store) src's cache and puts the
 * chunks idx needs that the seeds yield into it. *ret_tmp is that temporary
 * store, to pass to cafs_extract_seed_cleanup when done. With reflink
 * (may be NULL), where each chunk found in a seed file is, too. Logs its
 * errors. */
int cafs_extract_cache_seeds(struct ca_chunksrc *src, const struct ca_index *idx, const struct cafs_extract_args *a,
                             char **ret_tmp, struct ca_reflink *reflink);
void cafs_extract_seed_cleanup(char *tmp); /* removes and frees; accepts NULL */

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
/* cmd_blob.c: cafs make's options into *ret (argv[0] is the command
 * name; optind is left at the operands), sets the verbosity. Returns -1
 * to go on, or an exit code. */
struct ca_image_make_opts;
int cafs_make_parse(int argc, char **argv, struct ca_image_make_opts *ret, const char **ret_profile);
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
