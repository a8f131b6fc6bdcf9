/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * delta_pack.h - the static delta pack (cafs's own format, not casync's):
 * one plain file holding what a holder of image FROM needs to build image
 * TO, served by any HTTP server as it is and read by byte ranges.
 *
 * Layout, all integers little-endian, offsets from the start of the file:
 *
 *   header, CA_DELTA_HEADER_SIZE (128) bytes:
 *     0   u8[8]  magic "CADELTA\n"
 *     8   le32   version (1)
 *     12  le32   header size (128)
 *     16  le64   TO's index feature flags (the chunk ids' digest)
 *     24  u8[32] SHA-256 of FROM's index file (the bytes of the .caibx/.caidx)
 *     56  u8[32] SHA-256 of TO's index file
 *     88  le64   FROM's image size (bytes of its stream)
 *     96  le64   TO's image size
 *     104 le64   n: entries in the table
 *     112 le64   table size in bytes: the entries and the table digest
 *     120 le64   data size in bytes
 *   table, at 128:
 *     n entries, each 64 bytes then n_refs * 40 bytes:
 *       0   u8[32] the TO chunk's id
 *       32  u8     encoding: 0 a chunk file (one zstd frame of the chunk,
 *                  as a store holds it); 1 one zstd frame compressed with
 *                  the concatenated references as prefix (zstd's
 *                  refPrefix, `zstd --patch-from` style)
 *       33  u8     n_refs: 0 for encoding 0, 1..CA_DELTA_REFS_MAX (8) for
 *                  1, their sizes together at most CA_DELTA_PREFIX_MAX
 *       34  u8[6]  zero
 *       40  le64   the chunk's size (uncompressed)
 *       48  le64   offset of its bytes in the data section
 *       56  le64   length of its bytes
 *       64  n_refs * { u8[32] a FROM chunk's id, le64 its size }
 *     u8[32] SHA-256 of the header and the entries (everything before it)
 *   data, at 128 + table size: data size bytes, the entries' bytes in TO's
 *   stream order (so that a client needing most of them reads one range),
 *   in table order: no entry's bytes begin before the end of the one
 *   before it (refused: a reader cutting ranges relies on it).
 *   The file ends there: its size is 128 + table size + data size.
 *
 * The parser checks everything it can without the data: the magic,
 * version, sizes, every entry's encoding, reference count, zero padding,
 * sizes within the caller's maximum, bytes inside the data section, and
 * the table digest. The data is checked by its users: each chunk rebuilt
 * is verified against its id before anything uses it.
 *
 * Memory: a parsed table costs about its own size, which the header
 * bounds by CA_DELTA_TABLE_MAX and by its entry count (at most 384 bytes
 * an entry): a reader that bounds the entries (by TO's chunk count)
 * bounds what it reads before the table is checked.
 * Errors: -EBADMSG for anything malformed (why at debug level), -ENOMEM.
 * No global state; a parsed table is immutable and may be shared.
 */
#ifndef CA_DELTA_PACK_H
#define CA_DELTA_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

#define CA_DELTA_MAGIC "CADELTA\n"
#define CA_DELTA_VERSION 1u
#define CA_DELTA_HEADER_SIZE 128u
#define CA_DELTA_ENTRY_SIZE 64u
#define CA_DELTA_REF_SIZE 40u
#define CA_DELTA_DIGEST_SIZE 32u
#define CA_DELTA_REFS_MAX 8u
/* the most one prefix holds (a reader refuses more), and the zstd window
 * (log2) of an encoding-1 frame, which a reader enforces: the prefix and
 * the chunk */
#define CA_DELTA_PREFIX_MAX ((uint64_t)2 << 20)
#define CA_DELTA_WINDOW_LOG 23
/* the largest table a reader accepts: 64 MiB, a million-chunk image's */
#define CA_DELTA_TABLE_MAX ((uint64_t)64 << 20)

enum ca_delta_encoding {
	CA_DELTA_PLAIN = 0, /* a chunk file */
	CA_DELTA_PREFIX = 1, /* zstd with the references as prefix */
};

struct ca_delta_header {
	uint64_t feature_flags;
	uint8_t from_digest[CA_DELTA_DIGEST_SIZE];
	uint8_t to_digest[CA_DELTA_DIGEST_SIZE];
	uint64_t from_size, to_size;
	uint64_t n_entries, table_size, data_size;
};

struct ca_delta_ref {
	uint8_t id[CA_CHUNK_ID_SIZE];
	uint64_t size;
};

struct ca_delta_entry {
	uint8_t id[CA_CHUNK_ID_SIZE];
	uint8_t encoding;
	uint8_t n_refs;
	uint64_t size, offset, length;
	struct ca_delta_ref refs[CA_DELTA_REFS_MAX];
};

/* Parse the first CA_DELTA_HEADER_SIZE bytes of p (n: how many there are). */
int ca_delta_header_parse(const void *p, size_t n, struct ca_delta_header *ret);
/* The header's bytes. */
void ca_delta_header_write(const struct ca_delta_header *h, uint8_t out[CA_DELTA_HEADER_SIZE]);

/* Parse the table (h->table_size bytes at table; hdr: the header's own
 * 128 bytes, part of the digest). size_max bounds every chunk and
 * reference size. *ret_entries (malloc'd, h->n_entries of them). */
int ca_delta_table_parse(const struct ca_delta_header *h, const uint8_t hdr[CA_DELTA_HEADER_SIZE],
                         const void *table, size_t n, uint64_t size_max, struct ca_delta_entry **ret_entries);

/* The bytes of one entry (CA_DELTA_ENTRY_SIZE + n_refs * CA_DELTA_REF_SIZE
 * of them, returned) into out, which holds at least that many. */
size_t ca_delta_entry_write(const struct ca_delta_entry *e, uint8_t *out);

/* The digest that ends the table: SHA-256 of hdr and the entries' bytes. */
int ca_delta_table_digest(const uint8_t hdr[CA_DELTA_HEADER_SIZE], const void *entries, size_t n,
                          uint8_t out[CA_DELTA_DIGEST_SIZE]);

#endif
