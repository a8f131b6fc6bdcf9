/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tree_walk.h - an archive's entries, one call each: what list, mtree,
 * stat and digest (and cafs_image_walk) read, without their printing.
 *
 * Three walks, one callback:
 *   - ca_tree_walk over an opened archive image (.catar, .caidx): with no
 *     path, the whole archive through the streaming decoder, which
 *     validates everything; with a path, that subtree by random access,
 *     so only the chunks on the way to it and under it are read. An image
 *     with a metadata sidecar (sidecar.h) is walked from the sidecar
 *     instead: no chunk is read but the payloads asked for.
 *   - ca_tree_walk_stream over any archive byte stream (a directory's
 *     encoder stream, image_make.h), with the decoder;
 *   - ca_tree_walk_ra from a node of an open random access reader (the
 *     public face's image), handing each entry's catar_ra node too.
 * Entries come in archive order (pre-order, children in name order), the
 * top first. The path is relative to the archive's root ("" for the root,
 * "a/b", components joined by single slashes, as casync prints them).
 *
 * Payload digests (o->digests): each regular file's contents hashed with
 * the archive's digest (casync's payload digest, mtree's field), read
 * before its entry is handed over.
 *
 * Memory: one 1 MiB buffer when digests are asked, the current path, and
 * what the decoder, random access or sidecar hold (catar_dec.h,
 * catar_ra.h). Trees deeper than CA_CATAR_DEPTH_MAX are -EBADMSG.
 *
 * Errors: 0 or a negative errno. The callback's non-zero return stops the
 * walk and is returned as it is, unreported. ca_tree_walk, ca_tree_stat
 * and ca_tree_digest report their own errors in one line ("IN: PATH: not
 * in the archive", or as ca_archive_reader_report); ca_tree_walk_stream
 * and ca_tree_walk_ra log nothing (their callers know their source).
 * Threads: one walk per image at a time on the caller's thread, besides
 * the archive reader's own. No global state.
 */
#ifndef CA_TREE_WALK_H
#define CA_TREE_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "base/digest.h"
#include "catar/catar_node.h"
#include "catar/catar_ra.h"
#include "image/archive_reader.h"
#include "image/source.h"

/* The memory LRU an image walked here should be opened with (its
 * lru_bytes): random access re-reads a directory's GOODBYE chunks. */
#define CA_TREE_WALK_LRU CA_ARCHIVE_READER_LRU

struct ca_tree_entry {
	const char *path;                 /* valid during the call */
	const struct ca_catar_node *node; /* valid during the call */
	/* the contents' digest: regular files when digests were asked, else NULL */
	const uint8_t *digest;
	/* ca_tree_stat: casync's hardlink digest of a non-directory, else NULL */
	const uint8_t *hl_digest;
	/* ca_tree_walk_ra: the node, borrowed (ref it to keep it); else NULL */
	struct ca_catar_ra_node *ra_node;
};

typedef int (*ca_tree_walk_fn)(void *userdata, const struct ca_tree_entry *e);

struct ca_tree_walk_opts {
	/* the subtree to walk from ('/'-separated, relative to the root);
	 * NULL: the whole archive, streamed (an empty string walks it by
	 * random access) */
	const char *path;
	bool flat;    /* the top and its entries only (list --recursive=no) */
	bool digests; /* payload digests of regular files (mtree) */
};

/* Walk the archive image im (a .catar or .caidx; see the top). o may be
 * NULL: the whole archive, no digests. Without digests the reader does not
 * read ahead (payloads are skipped). An image opened with sequential reads
 * (source.h) must be walked whole (no path). */
int ca_tree_walk(struct ca_image *im, const struct ca_tree_walk_opts *o, ca_tree_walk_fn fn, void *userdata);

/* Walk the archive stream s (read front to back, each byte once; see
 * catar_dec.h for size and index_flags); t: the payload digests' type.
 * o->path must be NULL. Logs nothing. */
int ca_tree_walk_stream(const struct ca_catar_source *s, enum ca_digest_type t, const struct ca_tree_walk_opts *o,
                        ca_tree_walk_fn fn, void *userdata);

/* Walk from top (a node of ra; its path: top_path) by random access, each
 * entry with its ra_node. o->path is ignored; with o->digests, t is their
 * type. Logs nothing. */
int ca_tree_walk_ra(struct ca_catar_ra *ra, struct ca_catar_ra_node *top, const char *top_path,
                    enum ca_digest_type t, const struct ca_tree_walk_opts *o, ca_tree_walk_fn fn, void *userdata);

/* The one entry at path (NULL or "": the root) of archive image im, by
 * random access, with casync stat's digests: for a non-directory the
 * hardlink digest (its serialization from ENTRY through its
 * PAYLOAD/SYMLINK/DEVICE header, then its contents), for a regular file
 * the contents' digest too. fn is called once. */
int ca_tree_stat(struct ca_image *im, const char *path, ca_tree_walk_fn fn, void *userdata);

/* The digest `casync digest IN [PATH]` prints of archive image im: of its
 * whole stream (path NULL or ""), of a directory's stream as an archive of
 * its own, or of a regular file's contents; the stream is decoded and
 * validated on the way. Another kind of entry is -ENOTTY ("not a file or
 * directory"). Open im with sequential reads only when path is NULL. */
int ca_tree_digest(struct ca_image *im, const char *path, uint8_t ret[CA_CHUNK_ID_SIZE]);

#endif
