/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * profile.h - prefetch profiles: the order in which a mount first read
 * an image's data, recorded at one mount and replayed at the next (the
 * chunks it names fetched in the background, in order, before they are
 * asked for).
 *
 * A profile names data, not chunks, so that it survives a new version of
 * the image (`cafs make --profile` copies one beside a new index): a
 * file's bytes by its path, or image bytes by offset. Text, one item a
 * line, UTF-8 or any bytes but NUL and newline:
 *
 *     cafs-profile 1
 *     index <64 hex: SHA-512/256 of the .caidx/.caibx bytes> | index -
 *     f <start> <length> <path>   bytes [start, start+length) of the
 *                                 regular file <path> (from the root, no
 *                                 leading '/'; bytes <= 0x20, '%' and
 *                                 >= 0x7f written %XX)
 *     r <start> <length>          bytes of the image itself: a blob's, or
 *                                 an archive's stream (a tree mount
 *                                 without a metadata sidecar records these)
 *     #l <path>                   a hint: a name looked up (none with
 *                                 data: one the image does not have, a
 *                                 symlink); no chunk, a replay looks it
 *                                 up again. A comment to older readers,
 *                                 so a profile with hints still serves
 *                                 them; a bad one is skipped, not fatal
 *     # ...                       a comment
 *
 * Numbers are decimal. Anything else (an unknown keyword, a number out of
 * range, a line over CA_PROFILE_LINE_MAX, more than CA_PROFILE_ITEMS_MAX
 * items, a file over CA_PROFILE_FILE_MAX) makes the whole profile invalid
 * (-EBADMSG): a profile is all or nothing. Items that name nothing in the
 * image (a path it does not have, a range past its end) are skipped when
 * resolved: that is what a new version of the image does to them.
 *
 * The index line binds a profile to one index: with trusted keys, a
 * profile found beside an index is used only when it names that index's
 * digest and is signed (X.caprofile.minisig) like the index.
 *
 * Threads: a ca_profile_rec takes reads from any number of threads; a
 * parsed ca_profile is immutable.
 */
#ifndef CA_PROFILE_H
#define CA_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "format/format.h"
#include "format/index.h"
#include "image/sidecar.h"

#define CA_PROFILE_SUFFIX ".caprofile"
#define CA_PROFILE_FILE_MAX ((size_t)16 << 20)
#define CA_PROFILE_ITEMS_MAX ((size_t)1 << 18)
#define CA_PROFILE_LINE_MAX 16384u /* a path of 4095 bytes, escaped */

/* ---- recording ---- */

struct ca_profile_rec;

int ca_profile_rec_new(struct ca_profile_rec **ret);
void ca_profile_rec_free(struct ca_profile_rec *rec); /* accepts NULL */

/* Data read: bytes [off, off+len) of the file whose ENTRY is at archive
 * offset entry (a tree mount), its payload starting at archive offset
 * payload; or, with entry == UINT64_MAX, bytes of the image (payload 0).
 * Reads adjoining or overlapping a recent one of the same file extend it.
 * Past CA_PROFILE_ITEMS_MAX items, further reads are not recorded. */
/* A name looked up in the directory whose ENTRY is at archive offset
 * dir_entry that a replay's walk would not find on its own: one the image
 * does not have (a start probes PATH and ld.so's paths).
 * Each (directory, name) once, at most 16384. With name NULL, the entry
 * at dir_entry itself: a symlink read (readlink). */
void ca_profile_rec_lookup(struct ca_profile_rec *rec, uint64_t dir_entry, const char *name);
void ca_profile_rec_read(struct ca_profile_rec *rec, uint64_t entry, uint64_t payload, uint64_t off, uint64_t len);

/* Write what was recorded to path (atomically, mode 0600): files by
 * their paths when sc (the mount's sidecar) is given, image ranges
 * otherwise. index_digest may be NULL ("index -"). Logs its errors. */
int ca_profile_rec_write(struct ca_profile_rec *rec, const char *path, const uint8_t *index_digest,
                         const struct ca_sidecar *sc);

/* ---- reading ---- */

struct ca_profile;

/* Parse a profile's bytes (not kept): 0, -EBADMSG (why at debug level), -ENOMEM. */
int ca_profile_parse(const void *data, size_t size, struct ca_profile **ret);
void ca_profile_free(struct ca_profile *p); /* accepts NULL */
size_t ca_profile_count(const struct ca_profile *p);
/* Item i's name (an "l" item), true; false for the others. */
bool ca_profile_lookup(const struct ca_profile *p, size_t i, const char **path);
/* Item i's file (an "f" item): its path (from the root, no leading
 * '/') and byte range, true; false for an image range ("r"). */
bool ca_profile_file(const struct ca_profile *p, size_t i, const char **path, uint64_t *start, uint64_t *len);
/* The index digest it names, or NULL ("index -"). */
const uint8_t *ca_profile_index_digest(const struct ca_profile *p);

/* The chunks of idx the profile's items read, in the order of their first
 * use, each once: *ret (malloc'd) and *ret_n. Paths are found through sc
 * (NULL: path items are skipped). *ret_skipped: items that named nothing. */
int ca_profile_resolve(const struct ca_profile *p, const struct ca_index *idx, const struct ca_sidecar *sc,
                       size_t **ret, size_t *ret_n, size_t *ret_skipped);

/* The profile's text again, with another index digest (NULL: "index -"):
 * what `cafs make --profile` writes beside a new index. */
int ca_profile_format(const struct ca_profile *p, const uint8_t *index_digest, struct ca_buf *out);

/* Read and parse the profile file at path: 0, -EBADMSG, -EFBIG (over
 * CA_PROFILE_FILE_MAX), or the errno of reading it. Logs nothing. */
int ca_profile_load(const char *path, struct ca_profile **ret);

/* Write p beside the local index at index_path, as index_path.caprofile
 * (atomically, mode 0644), naming that index's digest: `cafs make
 * --profile`. Logs its errors. */
int ca_profile_write_beside(const struct ca_profile *p, const char *index_path);

/* "<index>.caprofile" (a URL's query kept after it). malloc'd; NULL on ENOMEM. */
char *ca_profile_name_for(const char *index);

#endif
