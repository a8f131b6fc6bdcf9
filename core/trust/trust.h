/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trust.h - which minisign keys an image must be signed by, and the check
 * of a file's bytes against its signature file (minisign.h does the
 * format and the cryptography; source.h decides when to check).
 *
 * The keys: those the caller gives (--trusted-key FILE, libcafs's
 * cafs_ctx_add_trusted_key) and every *.pub file of the trusted key
 * directory. With none, nothing is checked; with any, a file is accepted
 * only with a valid signature (trusted comment included) by one of them.
 * A key file that cannot be read or parsed is an error, never skipped:
 * skipping the only key of the directory would turn checking off. Whoever
 * can change a key file or add one to the directory chooses what is
 * trusted: the directory and every key file (given or found there) must
 * be root's or the user's and not writable by group or others, as the
 * store settings file (trusted_file.h); otherwise an error (-EPERM).
 *
 * The check takes bytes already in memory, so the bytes verified are the
 * bytes then used (no second read of a file that may have changed).
 * Anything else read from beside an index and trusted like it (a metadata
 * sidecar, a prefetch profile) is checked the same way, against its own
 * NAME.minisig: ca_trust_check is not index-specific.
 *
 * Functions log their errors ("cafs: <name>: <why>", one line) and return
 * a negative errno. No global state; thread-safe.
 */
#ifndef CA_TRUST_H
#define CA_TRUST_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "trust/minisign.h"

#define CA_TRUST_DIR_DEFAULT "/etc/cafs/trusted-keys.d"

/* The trusted key directory: $CAFS_TRUSTED_KEYS_DIR when set and not
 * empty, else CA_TRUST_DIR_DEFAULT. Points into the environment or a
 * constant. */
const char *ca_trust_dir(void);

/* A minisign public key file name in directory dfd (AT_FDCWD: a path),
 * opened once, checked and read through that fd. 0, or (not logged; why
 * says it for "NAME: <why>"): -EBADMSG not a key file; -EPERM another
 * user's, or writable by others; -EINVAL not a regular file; -errno. */
#define CA_TRUST_WHY_MAX 128
int ca_trust_read_key(int dfd, const char *name, struct ca_minisign_key *ret, char why[CA_TRUST_WHY_MAX]);

/* ca_trust_read_key of a path, logging "PATH: <why>". */
int ca_trust_load_key(const char *path, struct ca_minisign_key *ret);

/* Append to *keys (malloc'd, *n entries; the caller frees) the keys of
 * dir's *.pub files (dir and each file checked as above). A missing directory holds none when missing_ok (the
 * default one), else it is an error (a mistyped $CAFS_TRUSTED_KEYS_DIR
 * must not turn checking off). Logs. */
int ca_trust_load_dir(const char *dir, bool missing_ok, struct ca_minisign_key **keys, size_t *n);

/* The trusted key directory's keys, as ca_trust_load_dir: a missing
 * default directory holds none; a missing $CAFS_TRUSTED_KEYS_DIR is an
 * error. */
int ca_trust_load_system(struct ca_minisign_key **keys, size_t *n);

/* The name of source's signature: source + ".minisig", before a URL's
 * query or fragment (http(s) only; malloc'd; NULL on ENOMEM). */
char *ca_trust_signature_name(const char *source);


/* What a signature says beside "these bytes": its trusted comment, as
 * minisign writes it by default and cafs sign always does,
 *     timestamp:<unix seconds><tab>file:<name>[<tab>hashed][<tab>...]
 * (fields split at tabs, in any order; the first of each kind counts). A
 * comment of another form (`minisign -t TEXT`) binds neither: has_* are
 * false. A file: name longer than NAME_MAX is kept as "" (it names no
 * file this machine can ask for). */
struct ca_trust_claim {
	bool has_timestamp, has_file;
	uint64_t timestamp;
	char file[NAME_MAX + 1];
};
void ca_trust_parse_claim(const char *trusted_comment, struct ca_trust_claim *ret);

/* Is sig_text (the bytes of name's signature file) a valid signature of
 * data by one of keys[0..n)? 0, or one line logged and:
 *   -EKEYREJECTED  not a signature file, signed by no trusted key, the
 *                  signature or its trusted comment does not verify
 *   -ENOMEM, -EIO  (OpenSSL)
 * The trusted comment is logged at info level; on success, ret_claim
 * (may be NULL) gets what it says. */
int ca_trust_check(const char *name, const void *data, size_t len, const void *sig_text, size_t sig_len,
                   const struct ca_minisign_key *keys, size_t n, struct ca_trust_claim *ret_claim);

/* What an index's signature must say besides verifying (issue 21: a
 * server serving another image signed by the same key, or an older one).
 * The caller's choices, travelling with the keys. */
struct ca_trust_policy {
	const struct ca_minisign_key *keys;
	size_t n_keys;
	/* the cache that keeps the newest signing time accepted for each
	 * index (index_cache.h ca_index_cache_check_rollback); NULL: none
	 * could be found (a warning says a rollback cannot be detected) */
	const char *record_dir;
	/* the name the signature's file: must give; NULL: the one asked for */
	const char *signed_name;
	/* accept an index signed before the newest accepted (and make it the
	 * record) */
	bool allow_downgrade;
};

/* The name check: does claim's file: name source? source's name is its
 * last path component (a URL's before its query, %XX decoded); a local
 * path that is a symbolic link may also name the file it points to (the
 * same file under its published name). signed_name (may be NULL) replaces
 * both. 0, or one line logged and -EKEYREJECTED. A claim without file:
 * passes (said by ca_trust_warn_unbound). */
int ca_trust_check_name(const char *source, const struct ca_trust_claim *claim, const char *signed_name);

/* One warning when claim binds neither a time nor a name, or only one:
 * what then cannot be detected. */
void ca_trust_warn_unbound(const char *source, const struct ca_trust_claim *claim);

/* ---- signing (cafs sign) ---- */

/* A minisign secret key file, decrypted with password when it is
 * encrypted. -ENOKEY (not logged): encrypted and password is NULL; ask for
 * one and call again. Other errors are logged (-EKEYREJECTED: wrong
 * password). The caller wipes *ret (OPENSSL_cleanse). */
int ca_trust_load_secret(const char *path, const char *password, struct ca_minisign_secret *ret);

/* Sign the local file at path (at most 1 GiB) as `minisign -S [-l]`
 * does: writes path.minisig, atomically. The trusted comment is always
 * minisign's default, "timestamp:T<tab>file:NAME[<tab>hashed]", which
 * cafs checks (ca_trust_claim), with name (NULL: path's file name: the
 * name the file is published under) and <tab>trusted_comment after it
 * when not NULL; untrusted_comment NULL: minisign's. Logs. */
int ca_trust_sign_file(const char *path, const struct ca_minisign_secret *key, bool legacy, const char *name,
                       const char *trusted_comment, const char *untrusted_comment);

#endif
