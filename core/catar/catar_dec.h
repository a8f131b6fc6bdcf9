/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_dec.h - the streaming catar decoder: walks a whole archive in
 * order (extract, list, mtree, digest) and validates it as casync's
 * decoder does (reference 6.5), plus: children in strictly increasing name
 * order, and every GOODBYE table exactly the one casync writes for the
 * children seen (offsets, sizes, hashes, Eytzinger order), so that a
 * stream this decoder accepts also works through random access.
 *
 * Pull interface: ca_catar_dec_next() returns one event at a time.
 *
 *   NODE     a node's metadata (root first, then children depth first);
 *            for a regular file, ca_catar_dec_read_payload() then reads
 *            its content (optional: next() skips what was not read)
 *   DIR_END  a directory's GOODBYE was checked: its children are done
 *   DONE     the root's GOODBYE ended the stream, nothing follows it
 *
 * Reads: the source is read strictly in order, each byte at most once,
 * in large blocks; payload bytes the caller skips are not read at all.
 * So a reader wrapper sees the stream as a sequence (digests, readahead).
 *
 * Errors: -EBADMSG for anything malformed or truncated, else the reader's
 * errno. After an error every call returns it again. Not thread-safe (one
 * decoder per thread); the source must outlive the decoder.
 */
#ifndef CA_CATAR_DEC_H
#define CA_CATAR_DEC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "catar/catar_node.h"
#include "catar/catar_ra.h" /* struct ca_catar_source */

/* Deeper trees are refused (-EBADMSG): bounds memory and the fds extract holds. */
#define CA_CATAR_DEPTH_MAX 4096u

/* The memory budget. The decoder holds the metadata of every open
 * directory (each up to CA_CATAR_META_MAX) until its GOODBYE, and 24 bytes
 * per child of each open directory for the GOODBYE check (plus as much
 * again while checking one). Whatever the archive, it holds at most:
 *   window      CA_CATAR_META_MAX + 512 KiB
 *   metadata    CA_CATAR_DEC_META_TOTAL over all open directories and the
 *               current node together
 *   children    CA_CATAR_DEC_CHILDREN_MAX of them over all open
 *               directories (24 MiB), twice that during a check
 * about 75 MiB in all (see cafs(1), SECURITY, for the whole budget). An archive that needs more is -EBADMSG: casync
 * itself caps no sum, so a 120-deep chain of 8 MiB-metadata directories
 * (a few KB of index and chunks) would otherwise cost a GiB. */
#define CA_CATAR_DEC_META_TOTAL (16u * 1024u * 1024u)
#define CA_CATAR_DEC_CHILDREN_MAX (1024u * 1024u)

enum ca_catar_dec_event {
	CA_CATAR_DEC_DONE = 0,
	CA_CATAR_DEC_NODE = 1,
	CA_CATAR_DEC_DIR_END = 2,
};

struct ca_catar_dec;

/* src->size must be the stream's size, or UINT64_MAX when it is not known
 * (a pipe): the stream then ends where its source's reads return 0, which
 * must be right after the root's GOODBYE; src->index_flags as for random
 * access. */
int ca_catar_dec_new(const struct ca_catar_source *src, struct ca_catar_dec **ret);
void ca_catar_dec_free(struct ca_catar_dec *d); /* accepts NULL */

/* The next event (>= 0) or a negative errno. For NODE and DIR_END,
 * *ret_node describes the node (for DIR_END the directory, now with
 * end_offset, goodbye_offset and n_children); it stays valid until the
 * next call to next(). ret_node may be NULL. */
int ca_catar_dec_next(struct ca_catar_dec *d, const struct ca_catar_node **ret_node);

/* The current node's path relative to the root: "" for the root, "a/b".
 * Valid until the next call to next(). */
const char *ca_catar_dec_path(const struct ca_catar_dec *d);
/* 0 for the root, 1 for its children, ... */
unsigned ca_catar_dec_depth(const struct ca_catar_dec *d);

/* After a NODE event for a regular file: up to len bytes of its content,
 * in order. Returns the count, 0 once it is all read, or a negative errno. */
ssize_t ca_catar_dec_read_payload(struct ca_catar_dec *d, void *buf, size_t len);

/* The same without a copy where the source allows it (ca_catar_source's
 * peek): *ret points at the bytes, valid until the next call on d.
 * -EOPNOTSUPP (nothing consumed, not an error of d): read them instead. */
ssize_t ca_catar_dec_peek_payload(struct ca_catar_dec *d, size_t len, const void **ret);

/* Stream offset the decoder has consumed up to. */
uint64_t ca_catar_dec_offset(const struct ca_catar_dec *d);

#endif
