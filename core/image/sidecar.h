/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sidecar.h - the metadata sidecar (X.caidx.cameta): every entry of an
 * archive's metadata, and where each entry and payload sits in the
 * archive, in one small file beside the index, so that listing, stat,
 * readdir, readlink and xattrs need no chunk, and a file's read needs only
 * the chunks of its payload. casync ignores the file; the .caidx, .catar
 * and the store are unchanged.
 *
 * Compatible by construction: the sidecar holds each entry's own archive
 * bytes (ENTRY, metadata records, SYMLINK/DEVICE/PAYLOAD header; for a
 * directory also the 16-byte header after them), and readers parse them
 * with the archive's parser (ca_catar_node_parse), so a node from the
 * sidecar is field for field the node random access would load.
 *
 * File layout (little endian; header 128 bytes, not compressed):
 *     0  magic "CAFSMETA"        8  u32 version (1)   12 u32 header size (128)
 *    16  index digest: SHA-512/256 of the .caidx file's bytes (32)
 *    48  u64 archive size        56 u64 feature flags
 *    64  u64 entry count         72 u64 body size (decompressed)
 *    80  u64 compressed size (the rest of the file, exactly)
 *    88  checksum: SHA-512/256 of header bytes [0, 88) then the body (32)
 *   120  u64 reserved (0)
 * then the body as exactly one zstd frame. The body is the entries in
 * archive order (pre-order; the root first), each:
 *     u64 entry offset, u64 end offset (exclusive),
 *     u64 GOODBYE offset (directories; 0 otherwise),
 *     u32 parent (entry number; the root's is 0), u32 meta length,
 *     u16 name length (0 for the root), name bytes, NUL, meta bytes.
 *
 * Hostile input: the header is checked first (sizes capped: body at most
 * CA_SIDECAR_BODY_MAX, entry count by the body size), the frame must be
 * one frame whose content size is the header's, the checksum must match,
 * then every entry is checked against the archive's rules: offsets
 * strictly increasing, children tiling their directory's children area
 * exactly (the GOODBYE table's size matching the count), names valid and
 * in strcmp order (as casync writes them), every entry's bytes parsed by
 * the archive parser and agreeing with its offsets. Anything wrong is
 * -EBADMSG; a sidecar of another index -ESTALE (the caller warns once and
 * walks the archive instead).
 *
 * Threads: a ca_sidecar is immutable after parse; any number of threads
 * may read it. Nodes it fills point into it: they live as long as it.
 */
#ifndef CA_SIDECAR_H
#define CA_SIDECAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "catar/catar_ra.h"
#include "format/format.h"

#define CA_SIDECAR_SUFFIX ".cameta"
#define CA_SIDECAR_HEADER_SIZE 128u
/* Decompressed body cap (about 2.5 million entries); also caps the file. */
/* within the readers' memory budget (cafs(1), SECURITY): ~1 million entries */
#define CA_SIDECAR_BODY_MAX ((size_t)128 << 20)
#define CA_SIDECAR_FILE_MAX (CA_SIDECAR_HEADER_SIZE + CA_SIDECAR_BODY_MAX)

struct ca_sidecar;

/* The digest that names an index: SHA-512/256 of its bytes. */
int ca_sidecar_index_digest(const void *index, size_t size, uint8_t ret[CA_CHUNK_ID_SIZE]);

/* Check and load a sidecar from its file bytes (not kept). index_digest:
 * the index it must belong to (NULL: any, e.g. the fuzzer); archive_size:
 * the image's size (UINT64_MAX: take the header's). -EBADMSG (malformed,
 * why at debug level), -ESTALE (another index or archive), -ENOMEM. */
int ca_sidecar_parse(const void *data, size_t size, const uint8_t *index_digest, uint64_t archive_size,
                     struct ca_sidecar **ret);
void ca_sidecar_free(struct ca_sidecar *sc); /* accepts NULL */

size_t ca_sidecar_count(const struct ca_sidecar *sc);
uint64_t ca_sidecar_feature_flags(const struct ca_sidecar *sc);
/* The kinds of attribute records any entry has (ca_catar_node_xattr_sources
 * of every entry, or'ed): 0 when the archive has no xattr, ACL, fcaps or
 * SELinux label anywhere. */
unsigned ca_sidecar_xattr_sources(const struct ca_sidecar *sc);

/* Entry i (< count) as a node: the fields random access gives (offsets,
 * GOODBYE position, child count, name; pointers into sc). Entry 0 is the
 * root. */
void ca_sidecar_node(const struct ca_sidecar *sc, size_t i, struct ca_catar_node *ret);
/* The entry whose ENTRY is at entry_offset: 0 and *ret_i, or -ENOENT. */
int ca_sidecar_find(const struct ca_sidecar *sc, uint64_t entry_offset, size_t *ret_i);
/* Where entry i's ENTRY sits in the archive. */
uint64_t ca_sidecar_entry_offset(const struct ca_sidecar *sc, size_t i);
/* Parent of entry i (the root's parent is 0). */
size_t ca_sidecar_parent(const struct ca_sidecar *sc, size_t i);
/* Children of directory i in name order: count, and the k-th's entry number. */
size_t ca_sidecar_n_children(const struct ca_sidecar *sc, size_t i);
size_t ca_sidecar_child(const struct ca_sidecar *sc, size_t i, size_t k);
/* name (len bytes) in directory dir: 0 and *ret_i, -ENOENT, -ENOTDIR. */
int ca_sidecar_lookup(const struct ca_sidecar *sc, size_t dir, const char *name, size_t len, size_t *ret_i);
/* A path from the root as ca_catar_ra_lookup_path takes it. */
int ca_sidecar_lookup_path(const struct ca_sidecar *sc, const char *path, size_t *ret_i);

/* Build the sidecar of the archive behind src (a .caidx read through its
 * chunks) by walking it with random access; out gets the file's bytes.
 * -EBADMSG for an archive a sidecar cannot describe (corrupt, or
 * children not in name order), read errors as the source gives them. */
int ca_sidecar_build(const struct ca_catar_source *src, const uint8_t index_digest[CA_CHUNK_ID_SIZE],
                     struct ca_buf *out);

/* The sidecar's file name for an index path or URL: "<index>.cameta" (a
 * URL's query and fragment kept after it). malloc'd; NULL on ENOMEM. */
char *ca_sidecar_name_for(const char *index);

/* Write bytes to path atomically (mode & 0666). */
int ca_sidecar_write(const char *path, const void *data, size_t size, unsigned mode);

/* Make the sidecar of a local index whose chunks are in the local store
 * (NULL: default.castr beside it) and write it beside the index: what
 * `make` does after writing a .caidx. Logs its errors. */
int ca_sidecar_make_local(const char *index_path, const char *store);

/* The same sidecar built as the archive is made, from the encoder's
 * calls (catar_enc.h), with no read-back: what make does. The observer's
 * calls never fail the encode; the first thing that keeps a sidecar from
 * being made (what ca_sidecar_build refuses, the body cap, ENOMEM) is
 * kept and returned by finish. One encode per builder; not thread-safe. */
struct ca_sidecar_stream;
struct ca_catar_enc_observer;
int ca_sidecar_stream_new(struct ca_sidecar_stream **ret);
void ca_sidecar_stream_observer(struct ca_sidecar_stream *s, struct ca_catar_enc_observer *ret);
/* After the encode succeeded: the file's bytes, as ca_sidecar_build gives them. */
int ca_sidecar_stream_finish(struct ca_sidecar_stream *s, const uint8_t index_digest[CA_CHUNK_ID_SIZE],
                             uint64_t archive_size, struct ca_buf *out);
/* Finish against the committed index at index_path and write the sidecar
 * beside it (its mode). Logs its errors. */
int ca_sidecar_stream_write_local(struct ca_sidecar_stream *s, const char *index_path, uint64_t archive_size);
void ca_sidecar_stream_free(struct ca_sidecar_stream *s); /* accepts NULL */

#endif
