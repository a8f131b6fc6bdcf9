/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs.h - the read-only filesystem the mount serves: FUSE low-level
 * operations over one image (a ca_blob).
 *
 * Two shapes:
 *   blob mount (.caibx): a root directory holding ONE regular file, the image;
 *   tree mount (.caidx, .catar): the archive's directory tree, read lazily
 *     through the random-access decoder (catar_ra.h).
 *
 * Both read the image through its archive source (source.h), so chunk
 * errors arrive as -ENOLINK/-EUCLEAN/-ENOMEDIUM and never as a missing name.
 *
 * The image never changes, so every reply tells the kernel to cache for a
 * long time (entries, attributes, negative lookups, page cache, readdir).
 *
 * Threads: the ops run on libfuse's worker threads, any number at once. A
 * read that needs chunks blocks its worker in ca_blob_get_spans (the chunk
 * source shares one fetch among all waiters); tools/cmd_mount.c sizes the worker pool
 * so blocked readers cannot starve lookups. The fs object itself is
 * immutable after creation except for atomic counters and the inode table
 * (which has its own lock, see inode.h).
 */
#ifndef FS_FS_H
#define FS_FS_H

#define FUSE_USE_VERSION 312

#include <assert.h>
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "image/fs_face.h"

struct fs;
struct fs_warm;

struct fs_options {
	/* Blob mount: the name of the one file (required) and its attributes:
	 * owner, times and permission bits (write bits are dropped). The root
	 * is a 0555 directory with the same owner and times. */
	const char *blob_name;
	struct stat blob_st;
	/* Read-ahead for sequential reads: this many chunks (0: the default,
	 * 8) of the index's average chunk size. */
	unsigned readahead_chunks;
	/* Serve trusted.overlay.* and user.overlay.* too (xattr_policy.h):
	 * for an archive of an overlayfs layer, used as one on purpose. */
	bool overlay_xattrs;
	/* Called once from the first FUSE request (INIT), when the mount can
	 * answer: the daemon uses it to let its parent exit. May be NULL. */
	void (*ready)(void *userdata);
	void *ready_userdata;
	/* --record-profile: every read is told to it (profile.h). May be NULL. */
	struct ca_profile_rec *record;
	/* --profile / --fill: its progress is shown in the stats. May be NULL. */
	struct ca_prefetch *prefetch;
	/* The replayed profile's files warmed through the mount (warm.h): its
	 * progress is shown in the stats. May be NULL. */
	struct fs_warm *warm;
	/* The mount point (absolute), the "mountpoint" label of every metric,
	 * so that mounts of one machine are told apart. May be NULL. */
	const char *mountpoint;
};

/* The fs over an opened image (borrowed: it must outlive the fs): a blob
 * mount for a .caibx, a tree mount for a .caidx or .catar. A tree mount
 * checks the archive root now, so a corrupt archive fails here (-EBADMSG)
 * and not at the first ls. */
int fs_new(struct ca_image *im, const struct fs_options *o, struct fs **ret);
void fs_free(struct fs *fs); /* accepts NULL */

struct fs_serve_opts {
	const char *fsname;    /* what /proc/mounts shows as the source */
	const char *fuse_opts; /* more -o options for libfuse, comma-separated; may be NULL */
	bool allow_other;      /* let other users in (the kernel checks permissions) */
	unsigned max_threads;  /* FUSE workers: readers blocked on downloads must leave room */
	/* Raise the kernel's readahead of the mount to this many KiB (root
	 * only, best effort; 0 keeps the kernel's 128 KiB). The kernel reads
	 * a FUSE file in requests no larger than that window, up to 1 MiB. */
	unsigned kernel_readahead_kb;
	/* Managed by a keeper (fs/keeper.h): the server never unmounts (the
	 * keeper does, on a clean stop), and a stop signal only ends the loop. */
	bool keep_mounted;
	/* Resume a live connection instead of mounting: resume_fd is its
	 * /dev/fuse descriptor (-1: mount), init/init_size the bytes of the
	 * INIT request the first server answered, fed through libfuse again so
	 * its state is what it was (its reply goes to a request long gone:
	 * the kernel says ENOENT, which libfuse ignores). */
	int resume_fd;
	const void *init;
	size_t init_size;
	/* Called once the server can answer, before it reads any request
	 * after INIT: with the descriptor and, for a new mount, the INIT
	 * request's bytes (NULL when resuming). May be NULL. */
	void (*serving)(void *userdata, int fuse_fd, const void *init, size_t init_size);
	void *serving_userdata;
	/* Warm these files into the kernel's caches once a new mount answers
	 * (warm.h; not when resuming: the kernel has kept what it had). May be
	 * NULL. */
	struct fs_warm *warm;
};

/* For a blob mount: a sequential reader's request is then 1 MiB, not
 * 128 KiB (one wake-up and one reply where there were eight), and a
 * random mmap fault's read-around is at most 1 MiB of chunks. */
#define FS_BLOB_KERNEL_READAHEAD_KB 1024

/* Mount fs read-only on mountpoint (or resume o->resume_fd) and serve it
 * until it is unmounted or SIGINT/SIGTERM/SIGHUP arrives; then unmount
 * (unless o->keep_mounted). Returns 0 after a clean stop, a negative errno
 * if it could not mount or the loop failed (logged). */
int fs_serve(struct fs *fs, const char *mountpoint, const struct fs_serve_opts *o);

/* Answer the kernel's INIT on se's freshly mounted descriptor (call it
 * right after fuse_session_mount, before the loop): through libfuse, with
 * the flags libfuse 3.14 leaves out of its reply (FUSE_PARALLEL_DIROPS:
 * lookups in one directory run in parallel) added. fs is se's userdata. */
int fs_session_init(struct fuse_session *se, struct fs *fs);
/* The same with INIT's bytes already read (in[0, len): from the kernel,
 * or kept by a keeper from the first server); without answer the reply
 * is dropped (a resumed connection: the kernel finished that INIT long
 * ago). libfuse's state and op_init run as for a first INIT. */
int fs_session_init_with(struct fuse_session *se, struct fs *fs, void *in, size_t len, bool answer);
/* The server is stopping: end every wait for the store now, and any
 * later one (source.h, ca_image_abort_waits: -ECANCELED, also a download
 * under way). From now on a request that fails is not answered: its
 * failure may be the stop's own doing, and it is no answer to give a
 * reader. With a keeper, the kernel sends such requests again to the next
 * server (FUSE_NOTIFY_RESEND, keeper.h); without one, the connection's end
 * fails them. Requests that succeed are answered as ever. */
void fs_stop_waits(struct fs *fs);
/* How many requests fs_stop_waits left unanswered so far. */
uint64_t fs_unanswered(struct fs *fs);

/* The operations; pass the fs as userdata to fuse_session_new. */
extern const struct fuse_lowlevel_ops fs_ops;

/* The name of the virtual xattr on the mount root that holds the stats. */
#define FS_STATS_XATTR "user.cafs.stats"

/* The stats text (what FS_STATS_XATTR returns), NUL-terminated into buf;
 * returns its length (truncated to len - 1). */
size_t fs_stats_text(struct fs *fs, char *buf, size_t len);

/* The virtual xattrs on the mount root that hold the metrics (fs/metrics.c,
 * docs/metrics.md): OpenMetrics text, Prometheus text 0.0.4, JSON. At most
 * FS_METRICS_MAX bytes each (the kernel's bound on an xattr value). */
#define FS_METRICS_XATTR "user.cafs.metrics"
#define FS_METRICS_PROM_XATTR "user.cafs.metrics.prom"
#define FS_METRICS_JSON_XATTR "user.cafs.metrics.json"
#define FS_METRICS_MAX 65536
/* The metrics of the xattr name (one of the three above) into buf
 * (FS_METRICS_MAX bytes): their length, 0 if name is none of them, or
 * -EFBIG when they do not fit. */
ssize_t fs_metrics(struct fs *fs, const char *name, char *buf);

/* The stats channel that needs no xattrs: FS_IOC_STATS on a descriptor of
 * the mount root (open(MNT, O_RDONLY | O_DIRECTORY)). An image with no
 * attribute to show answers getxattr ENOSYS (the kernel then asks no more:
 * see docs/design.md, Kernel caching), which closes the xattrs above on
 * that mount; this ioctl works on every mount of a server that has it.
 *
 * FUSE passes a file system's ioctl restricted: the kernel copies
 * _IOC_SIZE bytes in and out, at most 16 KiB, so a document comes in
 * pages. Page 0 (offset 0) renders the document anew and names the
 * rendering by its digest; later pages give that digest and are cut from
 * the same rendering (the server keeps the last few, a new one replacing
 * its own user's oldest first), so a reader never
 * joins two snapshots; a rendering no longer kept is ESTALE (start over).
 * Unknown format: EINVAL; not the root: ENOTTY; a document over
 * FS_METRICS_MAX: EFBIG. Another file system leaves magic unset. */
enum fs_stats_format { FS_STATS_TEXT, FS_STATS_OPENMETRICS, FS_STATS_PROMETHEUS, FS_STATS_JSON, FS_STATS_FORMATS };
#define FS_STATS_MAGIC 0x53464143u /* "CAFS" */
#define FS_STATS_PAGE 16320u
struct fs_stats_page {
	uint32_t magic;  /* out: FS_STATS_MAGIC */
	uint32_t format; /* in: enum fs_stats_format */
	uint64_t offset; /* in: where this page starts in the document */
	uint64_t digest; /* in: 0 at offset 0, else page 0's; out: the rendering's (never 0) */
	uint32_t total;  /* out: the document's length */
	uint32_t len;    /* in: at most this many bytes (0: FS_STATS_PAGE); out: bytes in data */
	char data[FS_STATS_PAGE];
};
#define FS_IOC_STATS _IOWR(0xCA, 0x24, struct fs_stats_page)
/* _IOC_SIZE has 14 bits; the same layout for 32- and 64-bit callers */
static_assert(sizeof(struct fs_stats_page) < (1u << 14) && sizeof(struct fs_stats_page) == 32 + FS_STATS_PAGE,
              "fs_stats_page");

/* The document of format f into buf (FS_METRICS_MAX bytes): its length,
 * or -EINVAL (no such format), -EFBIG (it does not fit). */
ssize_t fs_stats_render(struct fs *fs, enum fs_stats_format f, char *buf);

#endif
