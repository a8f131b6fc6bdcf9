/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cafs/image.h - opening an image and reading it: a blob's bytes, or an
 * archive's tree (look up, list, stat, read, readlink, extended
 * attributes). Only the chunks a call needs are fetched.
 *
 * A source is a local path, a file:// URL or an http(s):// URL of a
 * .caibx (a blob: one file's bytes), a .caidx (an archive in chunks) or a
 * local .catar (an archive in one file or block device). Chunks come from
 * the stores given, in order, or from default.castr beside the index, as
 * casync does; fetched chunks are verified against their id before use and
 * may be kept in a chunk cache (a store on disk) for the next time.
 *
 * Lifetimes: an image and a node are reference-counted. cafs_image_open
 * and cafs_image_lookup return one reference, owned by the caller, which
 * cafs_image_unref / cafs_node_unref drop. A node holds a reference on its
 * image, and an image on its context: so a node stays usable after the
 * caller has dropped its image (and its context), and the image is freed
 * with its last node. The image of such a node is cafs_node_get_image(),
 * to pass to cafs_image_read and cafs_image_readdir.
 *
 * Threads: an image and its nodes may be used from any number of threads
 * at once, and references dropped on any thread; a callback (walk, readdir,
 * progress) may drop the caller's reference on the image: the call holds
 * its own until it returns. A NULL required argument is -EINVAL. Errors: see
 * cafs/context.h.
 */
#ifndef CAFS_IMAGE_H
#define CAFS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cafs/context.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cafs_image_kind {
	CAFS_IMAGE_BLOB = 1,      /* .caibx */
	CAFS_IMAGE_ARCHIVE_INDEX, /* .caidx */
	CAFS_IMAGE_ARCHIVE,       /* .catar */
};

enum cafs_cache_mode {
	CAFS_CACHE_NONE, /* keep nothing on disk */
	CAFS_CACHE_DIR,  /* keep fetched chunks in cache_dir (made if missing) */
	CAFS_CACHE_AUTO, /* cache_dir, or the user's default cache (as the cafs
	                    command uses it) when anything is remote */
};
/* A cache is private to its owner (made 0700, chunks 0400); one owned by
 * another user, writable by group or others, or a symlink is refused
 * (-EPERM; -ELOOP for a symlink; the reason is logged); see cafs(1) "Cache
 * permissions". */

/* Zero-initialize, then set what you need: all zero means default.castr
 * beside the index, no cache, online, no memory cache. */
struct cafs_image_options {
	size_t size;               /* sizeof(struct cafs_image_options): see cafs/context.h */
	const char *const *stores; /* paths or URLs, tried in order; "URL1|URL2": a failover group */
	size_t n_stores;
	enum cafs_cache_mode cache_mode;
	const char *cache_dir;
	bool offline;                /* only the cache: nothing is downloaded */
	uint64_t memory_cache_bytes; /* decompressed chunks kept in memory */
};

struct cafs_image;

/* Open source. The index (for .caibx/.caidx) is read, or downloaded and
 * checked, now; no chunk is fetched yet. o may be NULL. *ret gets one
 * reference. The image holds a reference on ctx and logs there. */
int cafs_image_open(struct cafs_ctx *ctx, const char *source, const struct cafs_image_options *o,
                    struct cafs_image **ret);
/* Take another reference; returns img (accepts NULL). */
struct cafs_image *cafs_image_ref(struct cafs_image *img);
/* Drop a reference; the last one (the caller's and every node's gone) frees
 * the image. Accepts NULL; returns NULL. A call on img still running on
 * another thread must hold a reference of its own. */
struct cafs_image *cafs_image_unref(struct cafs_image *img);
/* The same as cafs_image_unref, kept for programs written before images
 * were reference-counted. */
void cafs_image_free(struct cafs_image *img);

enum cafs_image_kind cafs_image_get_kind(const struct cafs_image *img);
/* The size of the blob, or of the archive's byte stream. */
uint64_t cafs_image_get_size(const struct cafs_image *img);

/* Read up to len bytes of the blob (or archive stream) at off: the count,
 * short only at the end, 0 at or past it. */
ssize_t cafs_image_pread(struct cafs_image *img, void *buf, size_t len, uint64_t off);

/* ---- archives (.caidx, .catar) ---- */

/* An entry of the archive: immutable, reference-counted; it holds a
 * reference on its image (see Lifetimes above). */
struct cafs_node;

/* Resolve path from the root ("" or "/" is the root; "a/b/c"; symlinks are
 * not followed; ".." is refused with -EINVAL). -ENOENT if absent, -ENOTDIR
 * if a component is not a directory, -EMEDIUMTYPE for a blob. */
int cafs_image_lookup(struct cafs_image *img, const char *path, struct cafs_node **ret);
struct cafs_node *cafs_node_ref(struct cafs_node *node);
struct cafs_node *cafs_node_unref(struct cafs_node *node); /* accepts NULL; returns NULL */
/* The image the node belongs to: borrowed, valid as long as the node
 * (cafs_image_ref it to keep it longer). */
struct cafs_image *cafs_node_get_image(const struct cafs_node *node);

/* The entry's name ("" for the root). Lives as long as the node. */
const char *cafs_node_get_name(const struct cafs_node *node);
/* mode, uid, gid, size, mtime (nanoseconds), rdev; st_ino is stable for
 * the image (the entry's offset + 1); st_nlink is 1 (2 for directories). */
void cafs_node_get_stat(const struct cafs_node *node, struct stat *st);

/* A symlink's target into buf (not NUL-terminated, as readlink(2)):
 * its length; -EINVAL if not a symlink; -ERANGE if size is too small. */
ssize_t cafs_node_readlink(const struct cafs_node *node, char *buf, size_t size);

/* Extended attributes as the kernel names them (user.*, trusted.*,
 * security.capability, security.selinux, system.posix_acl_access and
 * _default), with getxattr(2)'s rules: size 0 asks for the length;
 * -ERANGE if buf is too small; -ENODATA if there is no such attribute.
 * All the archive has: a program that applies or serves them should keep
 * to the rules of cafs(1) SECURITY, Extended attributes (trusted.overlay.*
 * and security.* are instructions to the kernel). */
ssize_t cafs_node_getxattr(const struct cafs_node *node, const char *name, void *buf, size_t size);
/* The names, each NUL-terminated, with listxattr(2)'s rules. */
ssize_t cafs_node_listxattr(const struct cafs_node *node, char *buf, size_t size);

/* Call fn for each entry of directory dir, in name order. The child is
 * borrowed for the call (cafs_node_ref it to keep it). A non-zero return
 * from fn stops the walk and is returned. -ENOTDIR if dir is not one;
 * -EINVAL if dir is a node of another image. */
typedef int (*cafs_readdir_fn)(void *userdata, struct cafs_node *child);
int cafs_image_readdir(struct cafs_image *img, const struct cafs_node *dir, cafs_readdir_fn fn, void *userdata);

/* Read up to len bytes of a regular file at off: the count (0 at or past
 * its end); -EISDIR or -EINVAL for other kinds of entries; -EINVAL if
 * file is a node of another image than img. */
ssize_t cafs_image_read(struct cafs_image *img, const struct cafs_node *file, void *buf, size_t len,
                        uint64_t off);

/* What cafs_image_walk walks; zero-initialize, set size, then what you need. */
struct cafs_walk_options {
	size_t size;      /* sizeof(struct cafs_walk_options): see cafs/context.h */
	const char *path; /* the entry to walk from, as cafs_image_lookup takes it; NULL: the root */
	bool flat;        /* that entry and its children only, not deeper */
	bool digests;     /* each regular file's contents' digest (every file is read) */
};

/* path: the entry's path from the root ("" for the root, "a/b"); node:
 * borrowed for the call (cafs_node_ref it to keep it); digest: the 32
 * bytes (CAFS_DIGEST_SIZE) of a regular file's contents hashed with the
 * archive's digest, as casync's payload digest, when asked, else NULL. */
typedef int (*cafs_walk_fn)(void *userdata, const char *path, struct cafs_node *node, const uint8_t *digest);

/* Call fn for each entry of the subtree at o->path, that entry first, then
 * depth first, each directory's children in name order (the archive's
 * order, what casync list prints). Only the chunks of the entries walked
 * are fetched (and of the files' contents with digests). A non-zero
 * return from fn stops the walk and is returned. -ENOENT, -ENOTDIR and
 * -EINVAL for o->path as cafs_image_lookup; -EMEDIUMTYPE for a blob. */
int cafs_image_walk(struct cafs_image *img, const struct cafs_walk_options *o, cafs_walk_fn fn, void *userdata);

#ifdef __cplusplus
}
#endif

#endif
