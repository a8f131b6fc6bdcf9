/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * store.h - a local chunk store in casync's layout:
 *   <dir>/<first 4 hex of id>/<64 hex of id>.cacnk
 * A bare "<prefix>/<id>" file is an uncompressed chunk (read only).
 *
 * The store only moves compressed bytes; ca_codec (compress.h) turns them
 * into verified data. Writes are atomic (O_EXCL temp file, then
 * renameat2(RENAME_NOREPLACE)) so any number of processes and threads may
 * write the same store at once. All functions are thread-safe.
 *
 * Only regular files are chunks: a chunk file is opened O_NOFOLLOW |
 * O_NONBLOCK and checked on the open fd, so a FIFO, device, directory or
 * symlink at a chunk path is a miss (logged once per store), and writing
 * that chunk replaces it. So does writing over an empty or torn .cacnk.
 *
 * An encrypted store (ca_store_set_crypt, crypt.h) names its chunk files
 * "<id>.cacnk.<algorithm>-<key id>" and holds them sealed: get/put below
 * still move the plain compressed bytes, sealing and opening on the way;
 * a file that does not authenticate is -EBADMSG (corrupt). It has no bare
 * chunks, and its walk, gc and verify see only the chunks under its key:
 * plain ones and other keys' are not its chunks. A miss where the chunk is
 * there under another key (or plain) is logged once per store, naming the
 * key id (a warning: another store of the chain may still have it), since
 * it means a wrong key far more often than a missing chunk.
 *
 * Two kinds of store:
 *  - a published store (ca_store_open, what make writes and casync reads):
 *    directories 0777 and chunk files 0444, minus the umask, as casync's;
 *  - a private store (ca_store_open_private, a chunk cache): directories
 *    0700 and chunk files 0400, and a directory owned by someone else or
 *    writable by group or others is refused. The checks are made with
 *    fstat on the O_NOFOLLOW | O_DIRECTORY fd then used, never on a path.
 */
#ifndef CA_STORE_H
#define CA_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "format/format.h"

struct ca_store;

/* Opens (never creates) a store rooted at path; the directory may not exist
 * yet, it is made by the first write. Returns 0 or a negative errno. */
int ca_store_open(const char *path, struct ca_store **ret);
void ca_store_free(struct ca_store *s); /* accepts NULL */

/* Opens a private store (a cache) at path; with create, makes it and its
 * missing parents (0700). The directory must be owned by the effective
 * user and not writable by group or others (-EPERM); a symlink there is
 * refused (-ELOOP). One of ours that others may read (a cache of an older
 * cafs, 0755 and 0444) is made private, with a warning. Without create, a
 * missing directory is an empty store that cannot be written. Logs its
 * errors ("cache <path>: <why>"). */
int ca_store_open_private(const char *path, bool create, struct ca_store **ret);

/* Seal this store's chunks under c (a reference is taken): before any
 * other use. -EINVAL for a private store (a cache keeps chunks plain) or
 * a second call. */
struct ca_crypt;
int ca_store_set_crypt(struct ca_store *s, struct ca_crypt *c);
/* The store's encryption, or NULL. */
const struct ca_crypt *ca_store_crypt(const struct ca_store *s);

/* Make what was written to the store durable: syncfs(2) on its file
 * system. 0 (also when the store does not exist) or negative errno. */
int ca_store_sync(struct ca_store *s);
const char *ca_store_path(const struct ca_store *s);

/* 1 if the chunk is present (compressed or bare), 0 if not, negative errno
 * on error. Present means a regular file, a .cacnk at least as long as the
 * smallest compressed frame, a bare file not empty. */
int ca_store_has(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE]);

/* Read the chunk file into out. *ret_compressed says whether it is a
 * .cacnk (true) or a bare uncompressed file (false). -ENOENT if absent. */
int ca_store_get_raw(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out,
                     bool *ret_compressed);

/* Store compressed bytes under id. Returns 1 if written, 0 if a .cacnk of
 * that id was already there, negative errno on failure (nothing is left
 * behind). Does not look for a bare uncompressed copy: check with
 * ca_store_has first to avoid compressing a chunk the store holds. */
int ca_store_put_raw(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], const void *p, size_t n);

/* Remove a chunk (both names). 0, or -ENOENT if neither existed. */
int ca_store_remove(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE]);

/* Mark a chunk as used now (mtime), for LRU pruning of caches. */
int ca_store_touch(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE]);

/* What the walker finds in a prefix directory. */
enum ca_store_kind {
	CA_STORE_CHUNK, /* <prefix>/<id>.cacnk */
	CA_STORE_BARE,  /* <prefix>/<id>: an uncompressed chunk */
	CA_STORE_TMP,   /* <prefix>/<id>.<hex>.tmp: a chunk being written (or left by a killed writer) */
};

/* One regular file of the store, as ca_store_walk reports it. dirfd and
 * name locate it (for unlinkat), st is its lstat (sizes, LRU times). All
 * of it is valid only during the callback. */
struct ca_store_entry {
	enum ca_store_kind kind;
	uint8_t id[CA_CHUNK_ID_SIZE];
	int dirfd;
	const char *name;
	struct stat st;
};

/* Call fn for every chunk, bare chunk and temporary file of the store
 * (regular files only: symlinks are casync's "known missing" markers, not
 * chunks; names that are not ids are skipped). A missing store is an empty
 * one. fn may unlink the entry it is given. Non-zero from fn stops the walk
 * and is returned; otherwise 0, or a negative errno if a directory could
 * not be read. Runs in the calling thread. */
typedef int (*ca_store_walk_fn)(const struct ca_store_entry *e, void *userdata);
int ca_store_walk(struct ca_store *s, ca_store_walk_fn fn, void *userdata);

/* Read / remove exactly one file of a chunk: kind CA_STORE_CHUNK or
 * CA_STORE_BARE (as the walker reported it), unlike ca_store_get_raw and
 * ca_store_remove, which take whichever exists. -ENOENT if it is not there;
 * -EINVAL for CA_STORE_TMP. */
int ca_store_get_file(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], enum ca_store_kind kind,
                      struct ca_buf *out);
int ca_store_remove_file(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], enum ca_store_kind kind);

/* "<prefix>/<id>.cacnk" (a plain store's name; crypt.h's ca_crypt_chunk_rel for any store) into out. */
#define CA_STORE_REL_PATH_LEN (4 + 1 + 64 + 6)
void ca_store_rel_path(const uint8_t id[CA_CHUNK_ID_SIZE], char out[CA_STORE_REL_PATH_LEN + 1]);

#endif
