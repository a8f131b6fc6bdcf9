/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_enc.h - serialize a directory tree as a .catar stream, byte for
 * byte what `casync make` writes for the same tree and feature flags.
 *
 * The walk is iterative (heap frames, no recursion) and holds one
 * directory's sorted names and GOODBYE items per level of the current
 * path, plus one open fd per level. Bytes go out through a write callback
 * in pieces of up to CA_CATAR_ENC_BUFSIZE, so the output can be a file, a
 * digest, or the make pipeline (core/store/make.h) for a .caidx.
 *
 * What gets stored follows the feature flags exactly as casync does
 * (see docs in the format reference, sections 6-8): node types, uid/gid
 * widths, user names, time granularity, permission bits, chattr/FAT/btrfs
 * flags, xattrs (user.*, trusted.*), ACLs, SELinux labels, file
 * capabilities, project ids. The EXCLUDE_* bits in the flags turn on the
 * exclusions: chattr +d nodes, other mounts, .caexclude rules. Files on
 * virtual API filesystems (proc, sysfs, ...) are stored without content.
 * Hard links are stored as independent copies.
 *
 * Thread-safety: none; one encode per thread.
 */
#ifndef CA_CATAR_ENC_H
#define CA_CATAR_ENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "catar/uidshift.h"

#define CA_CATAR_ENC_BUFSIZE (1u << 20)

struct ca_catar_enc_opts {
	/* Normalized feature flags (ca_feature_normalize); written into every
	 * ENTRY. Non-normalized or unknown bits are refused with -EINVAL. */
	uint64_t feature_flags;
	/* Receives the stream in order; returns 0 or a negative errno, which
	 * stops the walk and is returned unchanged (and not logged). */
	int (*write)(void *userdata, const void *p, size_t n);
	void *userdata;
	/* Used in error messages as the root's name ("DIR/sub/file: ..."). */
	const char *root_name;
	/* casync's --uid-shift/--uid-range: owners and ACL ids as stored
	 * (uidshift.h); an id below the shift fails the walk (-EINVAL) */
	struct ca_uid_shift uid_shift;
	/* Optional (may be NULL): told of every node as it is written, so
	 * that an index of the stream (the metadata sidecar, sidecar.h) needs
	 * no second pass over the archive. */
	const struct ca_catar_enc_observer *observer;
	/* Optional (may be NULL): offered the payload of every regular file
	 * that has one (st_size > 0), after every byte before it went to
	 * write. Returns 1 when it takes the payload without the encoder
	 * reading it (the stream offset moves on by st_size, the fd stays
	 * the encoder's: dup it to keep it), 0 when the encoder is to read it
	 * (its bytes then go to write as usual), or a negative errno, which
	 * stops the walk as write's do. An incremental make (make_cache.h). */
	int (*payload)(void *userdata, int fd, const struct stat *st);
};

/* Calls come in archive order from the encoding thread, nested like the
 * tree: node() for each node (the root first), end() once that node is
 * complete (a directory after its GOODBYE, so its children's calls come
 * between). They cannot fail the walk: an observer keeps its own error. */
struct ca_catar_enc_observer {
	/* The node whose ENTRY is at entry_off: its bytes up to its content
	 * (ENTRY, metadata records, and the PAYLOAD header, SYMLINK or DEVICE
	 * record), name NULL for the root. */
	void (*node)(void *userdata, uint64_t entry_off, const char *name, const void *rec, size_t n, bool dir);
	/* The last node told ends at end; a directory's GOODBYE is at goodbye_off (0 otherwise). */
	void (*end)(void *userdata, uint64_t goodbye_off, uint64_t end);
	void *userdata;
};

/* Walk the directory open at dir_fd (not closed, position untouched) and
 * write its archive. Returns 0, or a negative errno: filesystem errors and
 * things casync refuses too (a uid above 65535 with 16bit-uids, a bad
 * .caexclude line, a file shrinking while read = -EIO) are logged once as
 * "cafs: <path>: <why>"; errors of the write callback are returned as is.
 * ret_size (may be NULL) receives the number of bytes written. */
int ca_catar_encode(int dir_fd, const struct ca_catar_enc_opts *o, uint64_t *ret_size);

/* The GOODBYE item order for n items sorted by (hash, offset): fills
 * perm[slot] = index into the sorted items, as a complete binary search
 * tree in array form (children of slot i at 2i+1 and 2i+2). Exposed for
 * tests. */
void ca_catar_goodbye_layout(size_t n, size_t *perm);

#endif
