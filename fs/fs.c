/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs.c - the FUSE low-level operations, the blob mount, reads and stats.
 * The archive tree (lookup, readdir, xattrs of a .caidx/.catar) is tree.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/statvfs.h>
#include <sys/uio.h>

#include "fs_private.h"
#include "warm.h"

#define COUNT(fs, field, n) atomic_fetch_add_explicit(&(fs)->field, (n), memory_order_relaxed)
#define DEFAULT_READAHEAD_CHUNKS 8
#define MAX_READAHEAD_BYTES (UINT64_C(32) << 20)
/* a sequential stream's window doubles with each top-up up to this (or
 * --readahead's, if larger): 32 MiB keeps ~400 chunks of 64 KiB in flight
 * or decoding, enough to fill 8 connections and both cores; a random read
 * starts over with --readahead's */
#define MAX_READAHEAD_WINDOW (UINT64_C(32) << 20)
/* how far a read may land from the previous one and still count as sequential:
 * the kernel's async readahead sends several reads at once, out of order */
#define SEQ_SLACK (UINT64_C(4) << 20)
/* a file up to this size is fetched whole at its first read: a loader's
 * page faults (ld.so, a shell's libraries) come in no order, and one
 * round trip per fault was most of a cold container start */
#define WHOLE_FILE_MAX (UINT64_C(4) << 20)

static bool req_interrupted(void *arg)
{
	return fuse_req_interrupted(arg);
}

/* Every op starts here: libfuse's threads were not made by us, so they
 * learn the fs's logger now (a thread-local store, cheap), and the
 * request a wait for a failing store must give up on when the kernel
 * interrupts it (remote.h; EINTR). The hook goes stale when the op
 * returns, but a worker only waits for a store inside an op, after the
 * next fs_of. */
static struct fs *fs_of(fuse_req_t req)
{
	struct fs *fs = fuse_req_userdata(req);
	ca_log_use(fs->logger);
	ca_chunksrc_wait_hook(req_interrupted, req);
	return fs;
}

int fs_errno(int r)
{
	if (r == -ENOMEM || r == -EINTR)
		return -r;
	return EIO;
}

/* A failure's answer, unless the server is stopping (fs.h): then the
 * store's waits end with -ECANCELED, and an error (EIO; past a read's
 * first page, a short read) would reach a reader whose request the next
 * server, after the keeper's resend, answers right. Left unanswered,
 * the request stays with the kernel for that. */
static void reply_err(fuse_req_t req, int err)
{
	struct fs *fs = fuse_req_userdata(req);
	if (err && atomic_load(&fs->stopping)) {
		atomic_fetch_add(&fs->unanswered, 1);
		fuse_reply_none(req);
		return;
	}
	fuse_reply_err(req, err);
}

void fs_log_io_error(struct fs *fs, struct fs_node *n, int err, const char *what, uint64_t off)
{
	char where[512];
	if (atomic_load(&fs->stopping))
		return; /* not answered (reply_err): not a failure of the mount */
	if (n && atomic_exchange(&n->io_error_logged, true))
		return;
	if (fs->tree)
		snprintf(where, sizeof(where), "%s of the entry at archive offset %" PRIu64 " (at %" PRIu64 ")", what,
		         n ? n->ino - 1 : 0, off);
	else
		snprintf(where, sizeof(where), "%s of %s at %" PRIu64, what, fs->blob_name, off);
	/* the chunk codes (source.h) read as words through ca_strerror */
	ca_log_error_errno(err, "%s", where);
}

/* ---- construction ---- */

static int fs_alloc(struct ca_image *im, const struct fs_options *o, struct fs **ret)
{
	struct fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->im = im;
	/* the cache's writes wait while reads wait for chunks (chunksrc.h) */
	if (ca_image_chunksrc(im))
		ca_chunksrc_set_cache_defer(ca_image_chunksrc(im), true);
	fs->logger = ca_log_current();
	ca_image_archive_source(im, &fs->img);
	fs->o = *o;
	fs->o.blob_name = NULL;
	fs->xattrs = (struct ca_xattr_policy){ .selinux = ca_xattr_host_selinux(), .overlay = o->overlay_xattrs };
	pthread_mutex_init(&fs->stats_lock, NULL);
	unsigned k = o->readahead_chunks ? o->readahead_chunks : DEFAULT_READAHEAD_CHUNKS;
	struct ca_index *idx = ca_image_index(im);
	fs->readahead_bytes = (uint64_t)k * (idx ? ca_index_chunk_size_avg(idx) : 65536);
	if (fs->readahead_bytes > MAX_READAHEAD_BYTES)
		fs->readahead_bytes = MAX_READAHEAD_BYTES;
	int r = fs_inode_table_new(&fs->inodes);
	if (r < 0) {
		free(fs);
		return r;
	}
	/* a test hook: a tiny table makes nearly every request rebuild its
	 * node from the number, as a fresh server on a live mount does */
	const char *cap = getenv("CAFS_TEST_INODES_MAX");
	if (cap && *cap)
		fs_inode_set_max(fs->inodes, strtoull(cap, NULL, 10));
	/* a test hook: a server before FS_IOC_STATS (its clients read the xattrs) */
	const char *old = getenv("CAFS_TEST_NO_STATS_IOCTL");
	fs->no_stats_ioctl = old && *old;
	/* a test hook: recount the cache's size sooner than every 5 minutes */
	const char *every = getenv("CAFS_TEST_CACHE_SIZE_INTERVAL_S");
	if (ca_image_cache_dir(im))
		(void)ca_cache_size_new(ca_image_cache_dir(im), every && *every ? (unsigned)strtoul(every, NULL, 10) : 0,
		                        &fs->cache_size); /* ENOMEM: no size in the metrics */
	*ret = fs;
	return 0;
}

static int new_blob(struct ca_image *im, const struct fs_options *o, struct fs **ret)
{
	struct fs *fs = NULL;
	struct fs_node *root = NULL, *file = NULL;
	uint64_t size = ca_image_size(im);
	int r;

	if (!o->blob_name || !*o->blob_name || strchr(o->blob_name, '/'))
		return -EINVAL;
	r = fs_alloc(im, o, &fs);
	if (r < 0)
		return r;
	fs->blob_name = strdup(o->blob_name);
	fs->xattrs_none = true;
	root = fs_node_new(FUSE_ROOT_ID);
	file = fs_node_new(FS_BLOB_FILE_INO);
	if (!fs->blob_name || !root || !file) {
		r = -ENOMEM;
		goto fail;
	}
	root->st = o->blob_st;
	root->st.st_ino = FUSE_ROOT_ID;
	root->st.st_mode = S_IFDIR | 0555;
	root->st.st_nlink = 2;
	root->st.st_size = 0;
	root->st.st_blksize = 4096;
	root->st.st_blocks = 0;
	root->parent = FUSE_ROOT_ID;
	file->st = root->st;
	file->st.st_ino = FS_BLOB_FILE_INO;
	file->st.st_mode = S_IFREG | (o->blob_st.st_mode & 0555);
	file->st.st_nlink = 1;
	file->st.st_size = (off_t)size;
	file->st.st_blocks = (blkcnt_t)((size + 511) / 512);
	file->parent = FUSE_ROOT_ID;
	fs_inode_pin(fs->inodes, root);
	fs_inode_pin(fs->inodes, file);
	*ret = fs;
	return 0;
fail:
	fs_node_free(root);
	fs_node_free(file);
	fs_free(fs);
	return r;
}

static int new_tree(struct ca_image *im, const struct fs_options *o, struct fs **ret)
{
	struct fs *fs = NULL;
	int r = fs_alloc(im, o, &fs);
	if (r < 0)
		return r;
	fs->tree = true;
	/* with a metadata sidecar, metadata needs no chunk, and a file's read
	 * only its payload's: nothing is read to open the archive */
	fs->sc = ca_image_sidecar(im);
	r = fs->sc ? 0 : ca_catar_ra_open(&fs->img, &fs->ra);
	if (r == 0)
		r = fs_tree_init(fs);
	if (r < 0) {
		fs_free(fs);
		return r;
	}
	/* the sidecar knows which records the entries have; without it only
	 * the feature flags tell, and an archive made with xattrs may have some */
	fs->archive_flags = fs->sc ? ca_sidecar_feature_flags(fs->sc) : ca_catar_ra_feature_flags(fs->ra);
	fs->xattr_sources = fs->sc ? ca_sidecar_xattr_sources(fs->sc) : CA_XATTR_SOURCES_ALL;
	fs->xattrs_none = !ca_xattr_policy_shows_any(&fs->xattrs, fs->archive_flags, fs->xattr_sources);
	ca_log_debug("mount: %s", fs->xattrs_none ? "no entry has an attribute to show: getxattr is ENOSYS" :
	                                            "the archive may have attributes: getxattr is answered");
	*ret = fs;
	return 0;
}

int fs_new(struct ca_image *im, const struct fs_options *o, struct fs **ret)
{
	/* Big buffers (chunks, metadata loads up to 8 MiB) from mmap, always:
	 * glibc otherwise raises its mmap threshold to the largest block
	 * freed, and every worker thread's arena then keeps megabytes it
	 * freed (a GiB of RSS with 64 readers of big xattrs); the budget in
	 * cafs(1) counts what is in use, so freed memory must go back. */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	mallopt(M_ARENA_MAX, 8);
	return ca_image_kind(im) == CA_IMAGE_BLOB_INDEX ? new_blob(im, o, ret) : new_tree(im, o, ret);
}

void fs_free(struct fs *fs)
{
	if (!fs)
		return;
	/* first: nodes and records hold archive node references */
	fs_inode_table_free(fs->inodes);
	if (fs->tree)
		fs_tree_free(fs);
	ca_catar_ra_free(fs->ra);
	ca_cache_size_free(fs->cache_size);
	for (size_t i = 0; i < FS_STATS_KEPT; i++)
		free(fs->stats_kept[i].bytes);
	pthread_mutex_destroy(&fs->stats_lock);
	free(fs->blob_name);
	free(fs);
}

void fs_stop_waits(struct fs *fs)
{
	/* first: a wait the abort ends must find the failure unanswerable */
	atomic_store(&fs->stopping, true);
	ca_image_abort_waits(fs->im);
}

uint64_t fs_unanswered(struct fs *fs)
{
	return atomic_load(&fs->unanswered);
}

/* The background work's progress (prefetch.h), for the stats. */
static size_t prefetch_stats_text(struct ca_prefetch *p, char *buf, size_t len)
{
	struct ca_prefetch_stats s;
	ca_prefetch_get_stats(p, &s);
	const char *fill = !s.fill ? "off" : !s.finished ? "running" : s.fill_done < s.fill_chunks ? "incomplete" : "done";
	int n = snprintf(buf, len,
	                 "profile_chunks: %" PRIu64 "\n"
	                 "profile_chunks_done: %" PRIu64 "\n"
	                 "fill: %s\n"
	                 "fill_chunks: %" PRIu64 "\n"
	                 "fill_chunks_done: %" PRIu64 "\n"
	                 "fill_bytes: %" PRIu64 "\n"
	                 "fill_bytes_done: %" PRIu64 "\n"
	                 "background_errors: %" PRIu64 "\n"
	                 "background_waits: %" PRIu64 "\n",
	                 s.profile_chunks, s.profile_done, fill, s.fill_chunks, s.fill_done, s.fill_bytes,
	                 s.fill_done_bytes, s.errors, s.waits);
	return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

size_t fs_stats_text(struct fs *fs, char *buf, size_t len)
{
	struct ca_chunksrc_stats s = { 0 };
	struct ca_remote_store_stats rs;
	if (ca_image_chunksrc(fs->im))
		ca_chunksrc_get_stats(ca_image_chunksrc(fs->im), &s);
	int n = snprintf(buf, len,
	                 "chunks_fetched: %" PRIu64 "\n"
	                 "bytes_fetched: %" PRIu64 "\n"
	                 "cache_hits: %" PRIu64 "\n"
	                 "lru_hits: %" PRIu64 "\n"
	                 "chunk_errors: %" PRIu64 "\n"
	                 "corrupt_chunks: %" PRIu64 "\n"
	                 "reads: %" PRIu64 "\n"
	                 "bytes_read: %" PRIu64 "\n"
	                 "read_errors: %" PRIu64 "\n"
	                 "metadata_errors: %" PRIu64 "\n"
	                 "metadata_loads: %" PRIu64 "\n"
	                 "inodes: %" PRIu64 "\n",
	                 s.fetched_chunks, s.fetched_bytes, s.cache_hits, s.lru_hits, s.errors, s.corrupt,
	                 (uint64_t)fs->reads, (uint64_t)fs->bytes_read, (uint64_t)fs->read_errors,
	                 (uint64_t)fs->meta_errors, (uint64_t)fs->meta_loads, fs_inode_count(fs->inodes));
	size_t used = n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
	if (ca_image_remote_stats(fs->im, &rs) && used + 1 < len) {
		n = snprintf(buf + used, len - used,
		             "http_requests: %" PRIu64 "\n"
		             "http_attempts: %" PRIu64 "\n"
		             "http_retries: %" PRIu64 "\n"
		             "http_ok: %" PRIu64 "\n"
		             "http_missing: %" PRIu64 "\n"
		             "http_errors: %" PRIu64 "\n"
		             "http_bytes: %" PRIu64 "\n"
		             "prefetches: %" PRIu64 "\n"
		             "prefetch_hits: %" PRIu64 "\n"
		             "http_urgent: %" PRIu64 "\n",
		             rs.http.requests, rs.http.attempts, rs.http.retries, rs.http.ok, rs.http.missing,
		             rs.http.errors, rs.http.bytes, rs.prefetches, rs.prefetch_hits, rs.http.urgent);
		used += n < 0 ? 0 : (size_t)n >= len - used ? len - used - 1 : (size_t)n;
	}
	if (used + 1 < len) {
		n = snprintf(buf + used, len - used,
		             "readahead_decoded: %" PRIu64 "\n"
		             "demand_fetches: %" PRIu64 "\n"
		             "demand_joins: %" PRIu64 "\n"
		             "demand_join_wait_ms: %" PRIu64 "\n"
		             "demand_fetch_ms: %" PRIu64 "\n",
		             s.ra_decoded, s.demand_fetches, s.demand_joins, s.demand_join_wait_us / 1000,
		             s.demand_fetch_us / 1000);
		used += n < 0 ? 0 : (size_t)n >= len - used ? len - used - 1 : (size_t)n;
	}
	struct ca_delta_source_stats ds;
	if (ca_image_delta_stats(fs->im, &ds) && used + 1 < len) {
		n = snprintf(buf + used, len - used,
		             "delta_pack: %s\n"
		             "delta_chunks: %" PRIu64 "\n"
		             "delta_bytes: %" PRIu64 "\n"
		             "delta_requests: %" PRIu64 "\n"
		             "delta_pack_bytes: %" PRIu64 "\n",
		             ds.state, ds.chunks, ds.bytes, ds.requests, ds.wire_bytes);
		used += n < 0 ? 0 : (size_t)n >= len - used ? len - used - 1 : (size_t)n;
	}
	struct ca_failover *g;
	for (size_t i = 0; (g = ca_image_failover(fs->im, i)) && used + 1 < len; i++) {
		struct ca_failover_stats fst;
		char active[512];
		ca_failover_get_stats(g, &fst);
		ca_failover_active_name(g, active, sizeof(active));
		n = snprintf(buf + used, len - used, "failover_active: %s\nfailover_switches: %" PRIu64 "\n", active,
		             fst.switches);
		used += n < 0 ? 0 : (size_t)n >= len - used ? len - used - 1 : (size_t)n;
	}
	struct ca_remote_store *rst;
	for (size_t i = 0; (rst = ca_image_remote(fs->im, i)) && used + 1 < len; i++) {
		char state[1024];
		ca_remote_store_state_text(rst, state, sizeof(state));
		n = snprintf(buf + used, len - used, "store_state: %s\n", state);
		used += n < 0 ? 0 : (size_t)n >= len - used ? len - used - 1 : (size_t)n;
	}
	static const char *const op_names[FS_OP_N] = {
		[FS_OP_LOOKUP] = "lookup",   [FS_OP_GETATTR] = "getattr",         [FS_OP_READLINK] = "readlink",
		[FS_OP_OPENDIR] = "opendir", [FS_OP_READDIR] = "readdir",         [FS_OP_READDIRPLUS] = "readdirplus",
		[FS_OP_OPEN] = "open",       [FS_OP_READ] = "read",               [FS_OP_GETXATTR] = "getxattr",
		[FS_OP_LISTXATTR] = "listxattr",
	};
	for (size_t i = 0; i < FS_OP_N && used + 1 < len; i++) {
		n = snprintf(buf + used, len - used, "fuse_%s: %" PRIu64 "\n", op_names[i], (uint64_t)fs->ops[i]);
		used += n < 0 ? 0 : (size_t)n >= len - used ? len - used - 1 : (size_t)n;
	}
	if (fs->o.prefetch && used + 1 < len)
		used += prefetch_stats_text(fs->o.prefetch, buf + used, len - used);
	if (fs->o.warm && used + 1 < len) {
		uint64_t files, done;
		fs_warm_progress(fs->o.warm, &files, &done);
		n = snprintf(buf + used, len - used, "warm_files: %" PRIu64 "\nwarm_files_done: %" PRIu64 "\n", files, done);
		used += n < 0 ? 0 : (size_t)n >= len - used ? len - used - 1 : (size_t)n;
	}
	return used;
}

ssize_t fs_stats_render(struct fs *fs, enum fs_stats_format f, char *buf)
{
	static const char *const names[FS_STATS_FORMATS] = {
		[FS_STATS_OPENMETRICS] = FS_METRICS_XATTR,
		[FS_STATS_PROMETHEUS] = FS_METRICS_PROM_XATTR,
		[FS_STATS_JSON] = FS_METRICS_JSON_XATTR,
	};
	if (f == FS_STATS_TEXT)
		return (ssize_t)fs_stats_text(fs, buf, FS_METRICS_MAX);
	if ((unsigned)f >= FS_STATS_FORMATS)
		return -EINVAL;
	return fs_metrics(fs, names[f], buf);
}

/* ---- helpers ---- */

/* The node for ino, with a reference (node_put it). A tree mount answers
 * for any entry of its archive, handed out by this process or not (a
 * fresh server on a live connection, a node the table let go); a number
 * that is no entry is ESTALE. */
static int node_get(struct fs *fs, fuse_ino_t ino, struct fs_node **ret)
{
	if (fs->tree)
		return fs_tree_node(fs, ino, ret);
	struct fs_node *n = fs_inode_find(fs->inodes, ino);
	if (!n)
		return -ESTALE;
	*ret = n;
	return 0;
}

static void node_put(struct fs *fs, struct fs_node *n)
{
	fs_node_put(fs->inodes, n);
}

/* node_get's failures: ESTALE as is; the image's (a rebuild reads it) as
 * for any metadata read. */
static int node_errno(struct fs *fs, int r)
{
	if (r == -ESTALE)
		return ESTALE;
	COUNT(fs, meta_errors, 1);
	return fs_errno(r);
}

static void fill_entry(struct fuse_entry_param *e, const struct fs_node *n)
{
	memset(e, 0, sizeof(*e));
	e->ino = n->ino;
	e->generation = 1;
	e->attr = n->st;
	e->attr_timeout = FS_TIMEOUT;
	e->entry_timeout = FS_TIMEOUT;
}

/* ---- operations ---- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;
	ca_log_use(fs->logger);
	/* The largest reads the kernel offers (1 MiB with max_pages) and its
	 * own readahead as far as it goes: both mean fewer round trips. The
	 * kernel offers what its readahead was when it sent INIT (128 KiB) and
	 * keeps the smaller of our answer and what it is now: no limit here,
	 * so the window session.c set after the mount stays. */
	conn->max_readahead = UINT32_MAX;
	/* The kernel's async reads (readahead) queue behind max_background
	 * requests (default 12): let more wait on downloads at once. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* lookups in one directory at once (libfuse 3.14 does not pass the
	 * flag on: init.c does) */
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) {
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
		fs->parallel_dirops = true;
	}
	/* the archived ACLs, served as system.posix_acl_* and enforced by
	 * the kernel along with the modes (default_permissions) */
	if (fs->tree && (conn->capable & FUSE_CAP_POSIX_ACL))
		conn->want |= FUSE_CAP_POSIX_ACL;
	/* nothing ever changes: no need to check mtimes for invalidation */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	/* no OPEN/RELEASE round trips for files (the kernel keeps their cache) */
	if (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) {
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
		fs->no_open = true;
	}
	/* no OPENDIR/RELEASEDIR round trips either: a `find` opened every
	 * directory twice (open, release) for nothing (see op_opendir) */
	if (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) {
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
		fs->no_opendir = true;
	}
	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	ca_log_debug("mount: FUSE capable %#x, want %#x", conn->capable, conn->want);
	if (fs->o.ready && !atomic_exchange(&fs->ready_sent, true))
		fs->o.ready(fs->o.ready_userdata);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fs_of(req);
	COUNT(fs, ops[FS_OP_LOOKUP], 1);
	struct fuse_entry_param e;
	struct fs_node *dir = NULL, *child = NULL;
	int r = node_get(fs, parent, &dir);
	if (r < 0) {
		r = -node_errno(fs, r);
		goto fail;
	}
	if (!S_ISDIR(dir->st.st_mode)) {
		r = -ENOTDIR;
		goto fail;
	}
	if (fs->tree) {
		r = fs_tree_lookup(fs, dir, name, &child);
	} else {
		child = !strcmp(name, fs->blob_name) ? fs_inode_find(fs->inodes, FS_BLOB_FILE_INO) : NULL;
		r = child ? 0 : -ENOENT;
	}
	/* a name a start probes for (PATH, ld.so): a replay's warm looks it
	 * up again (warm.h), as it does the symlinks read (op_readlink) */
	if (fs->o.record && fs->tree && r == -ENOENT)
		ca_profile_rec_lookup(fs->o.record, dir->ino - 1, name);
	if (r == -ENOENT) {
		/* a negative entry the kernel may keep as long as a positive one */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = FS_TIMEOUT;
		fuse_reply_entry(req, &e);
		goto out;
	}
	if (r < 0) {
		COUNT(fs, meta_errors, 1);
		fs_log_io_error(fs, dir, r, "lookup", 0);
		r = -fs_errno(r);
		goto fail;
	}
	fill_entry(&e, child);
	if (fuse_reply_entry(req, &e) < 0)
		fs_inode_forget(fs->inodes, child->ino, 1);
	goto out;
fail:
	reply_err(req, -r);
out:
	node_put(fs, child);
	node_put(fs, dir);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_inode_forget(fs_of(req)->inodes, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs *fs = fs_of(req);
	for (size_t i = 0; i < count; i++)
		fs_inode_forget(fs->inodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	COUNT(fs, ops[FS_OP_GETATTR], 1);
	struct fs_node *n;
	(void)fi;
	int r = node_get(fs, ino, &n);
	if (r < 0) {
		reply_err(req, node_errno(fs, r));
		return;
	}
	fuse_reply_attr(req, &n->st, FS_TIMEOUT);
	node_put(fs, n);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fs_of(req);
	COUNT(fs, ops[FS_OP_READLINK], 1);
	struct fs_node *n;
	int r = node_get(fs, ino, &n);
	if (r < 0) {
		reply_err(req, node_errno(fs, r));
		return;
	}
	if (!S_ISLNK(n->st.st_mode) || !n->cn || !n->cn->symlink_target) {
		reply_err(req, EINVAL);
	} else {
		/* a symlink a start follows: a replay's warm reads it again */
		if (fs->o.record && fs->tree)
			ca_profile_rec_lookup(fs->o.record, n->ino - 1, NULL);
		fuse_reply_readlink(req, n->cn->symlink_target);
	}
	node_put(fs, n);
}

/* An open directory holds nothing of ours (fh 0): readdir finds the
 * listing by the directory's number, so a handle outlives the process
 * that opened it. */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	COUNT(fs, ops[FS_OP_OPENDIR], 1);
	struct fs_node *n;
	int r = node_get(fs, ino, &n);
	if (r < 0) {
		reply_err(req, node_errno(fs, r));
		return;
	}
	bool dir = S_ISDIR(n->st.st_mode);
	node_put(fs, n);
	if (!dir) {
		reply_err(req, ENOTDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		reply_err(req, EROFS);
		return;
	}
	if (fs->no_opendir) {
		/* "opens succeed without asking": no OPENDIR/RELEASEDIR round
		 * trips, and the kernel's defaults for such a directory are
		 * FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE, as below */
		reply_err(req, ENOSYS);
		return;
	}
	fi->fh = 0;
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Filling one readdir reply. Offsets handed to the kernel: 1 = after ".",
 * 2 = after "..", 3 + i = after child i. */
struct dirbuf {
	fuse_req_t req;
	struct fs *fs;
	char *buf;
	size_t size, used;
	bool plus;
};

static bool dirbuf_add(struct dirbuf *d, const char *name, const struct stat *st, struct fs_node *n,
                       off_t next)
{
	size_t k;
	if (d->plus) {
		struct fuse_entry_param e;
		if (n) {
			fill_entry(&e, n);
		} else {
			memset(&e, 0, sizeof(e));
			e.attr = *st;
		}
		k = fuse_add_direntry_plus(d->req, d->buf + d->used, d->size - d->used, name, &e, next);
	} else {
		k = fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used, name, st, next);
	}
	if (k > d->size - d->used)
		return false;
	d->used += k;
	return true;
}

static bool dirbuf_child(void *userdata, uint64_t index, const char *name, struct fs_node *child)
{
	struct dirbuf *d = userdata;
	return dirbuf_add(d, name, &child->st, child, (off_t)(3 + index));
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi,
                       bool plus)
{
	struct fs *fs = fs_of(req);
	struct fs_node *dir;
	struct dirbuf d = { .req = req, .fs = fs, .size = size, .plus = plus };
	struct stat st = { 0 };
	(void)fi;
	COUNT(fs, ops[plus ? FS_OP_READDIRPLUS : FS_OP_READDIR], 1);

	int r = node_get(fs, ino, &dir);
	if (r < 0) {
		reply_err(req, node_errno(fs, r));
		return;
	}
	if (!S_ISDIR(dir->st.st_mode)) {
		node_put(fs, dir);
		reply_err(req, ENOTDIR);
		return;
	}
	if (size > (1u << 20))
		d.size = size = 1u << 20;
	d.buf = malloc(size);
	if (!d.buf) {
		node_put(fs, dir);
		reply_err(req, ENOMEM);
		return;
	}
	if (off < 1) {
		st.st_ino = dir->ino;
		st.st_mode = S_IFDIR;
		if (!dirbuf_add(&d, ".", &st, NULL, 1))
			goto reply;
	}
	if (off < 2) {
		st.st_ino = dir->parent;
		st.st_mode = S_IFDIR;
		if (!dirbuf_add(&d, "..", &st, NULL, 2))
			goto reply;
	}
	uint64_t from = off < 3 ? 0 : (uint64_t)off - 2;
	if (fs->tree) {
		r = fs_tree_readdir(fs, dir, from, plus, dirbuf_child, &d);
		if (r < 0) {
			COUNT(fs, meta_errors, 1);
			fs_log_io_error(fs, dir, r, "readdir", 0);
		}
	} else if (dir->ino == FUSE_ROOT_ID && from == 0) {
		struct fs_node *f = fs_inode_find(fs->inodes, FS_BLOB_FILE_INO);
		(void)dirbuf_add(&d, fs->blob_name, &f->st, f, 3);
		node_put(fs, f);
	}
reply:
	/* entries already in the buffer are good even if a later one failed */
	if (r < 0 && d.used == 0)
		reply_err(req, fs_errno(r));
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
	node_put(fs, dir);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* nothing to free (see op_opendir): also for a handle another
	 * process of ours opened */
	(void)ino, (void)fi;
	reply_err(req, 0);
}

/* Only reached when the kernel cannot skip opens (FUSE_CAP_NO_OPEN_SUPPORT
 * below): every open and close would be a round trip to us, and a warm
 * `tar` of a tree would be mostly that. The mount is read-only, so the
 * kernel refuses writes itself. */
static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	COUNT(fs, ops[FS_OP_OPEN], 1);
	struct fs_node *n;
	int r = node_get(fs, ino, &n);
	if (r < 0) {
		reply_err(req, node_errno(fs, r));
		return;
	}
	bool dir = S_ISDIR(n->st.st_mode);
	node_put(fs, n);
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		reply_err(req, EROFS);
		return;
	}
	if (dir) {
		reply_err(req, EISDIR);
		return;
	}
	if (fs->no_open) {
		reply_err(req, ENOSYS); /* "opens succeed without asking, keep the cache" */
		return;
	}
	fi->keep_cache = 1;
	fi->direct_io = 0;
	fuse_reply_open(req, fi);
}

/* Sequential reading: ask for the next few chunks before the kernel does,
 * so their downloads overlap with this read and the application's work. */
static void maybe_readahead(struct fs *fs, struct fs_node *n, uint64_t off, uint64_t end)
{
	uint64_t prev = atomic_exchange(&n->next_off, end);
	bool sequential = off + SEQ_SLACK >= prev && off <= prev + SEQ_SLACK;
	if (!sequential || fs->readahead_bytes == 0) {
		atomic_store(&n->readahead_window, 0);
		return;
	}
	uint64_t win = atomic_load(&n->readahead_window);
	if (win < fs->readahead_bytes)
		win = fs->readahead_bytes;
	uint64_t size = (uint64_t)n->st.st_size;
	uint64_t want = end + win;
	if (want > size)
		want = size;
	uint64_t have = atomic_load(&n->readahead_end);
	if (have < end)
		have = end;
	/* top up in steps of half the window, not on every read */
	if (want <= have + win / 2 && want != size)
		return;
	if (want <= have)
		return;
	uint64_t seen = atomic_exchange(&n->readahead_end, want);
	if (seen > have)
		have = seen;
	/* still sequential a window later: as the kernel does, read further
	 * ahead next time, so downloads and decoding keep up with the reader */
	uint64_t max = fs->readahead_bytes > MAX_READAHEAD_WINDOW ? fs->readahead_bytes : MAX_READAHEAD_WINDOW;
	atomic_store(&n->readahead_window, win * 2 < max ? win * 2 : max);
	if (want > have && fs->img.readahead)
		fs->img.readahead(fs->img.userdata, n->data_off + have, want - have);
}

/* Reply with the chunks' own bytes, one iovec each, no copy: the chunk
 * source's references keep them alive until the reply is written. Returns
 * the bytes sent, or a negative errno with nothing sent. */
static ssize_t reply_spans(fuse_req_t req, struct ca_blob *blob, uint64_t off, size_t size)
{
	struct ca_blob_span *spans;
	size_t n, total = 0;
	int r = ca_blob_get_spans(blob, off, size, &spans, &n);
	if (r < 0)
		return r;
	struct iovec stack[32], *iov = n <= 32 ? stack : calloc(n, sizeof(*iov));
	if (!iov) {
		ca_blob_put_spans(blob, spans, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		iov[i] = (struct iovec){ .iov_base = (void *)spans[i].data, .iov_len = spans[i].len };
		total += spans[i].len;
	}
	if (total < size)
		r = -EBADMSG; /* the image ends inside a file: a lying archive */
	else
		fuse_reply_iov(req, iov, (int)n);
	if (iov != stack)
		free(iov);
	ca_blob_put_spans(blob, spans, n);
	return r < 0 ? r : (ssize_t)total;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = fs_of(req);
	COUNT(fs, ops[FS_OP_READ], 1);
	struct fs_node *n;
	int r = node_get(fs, ino, &n);
	if (r < 0) {
		reply_err(req, node_errno(fs, r));
		return;
	}
	uint64_t fsize = (uint64_t)n->st.st_size;
	(void)fi;

	if (off < 0) {
		reply_err(req, EINVAL);
		node_put(fs, n);
		return;
	}
	if ((uint64_t)off >= fsize || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		node_put(fs, n);
		return;
	}
	if (size > fsize - (uint64_t)off)
		size = (size_t)(fsize - (uint64_t)off);
	struct ca_blob *blob = ca_image_blob(fs->im);
	if (fs->tree && fsize <= WHOLE_FILE_MAX && fs->readahead_bytes && fs->img.readahead &&
	    !atomic_exchange(&n->read_once, true)) {
		/* this read's own chunks first: queueing the rest of the file
		 * takes a while, and the server starts on what is queued */
		if (blob && !(n->cn && fs->ra))
			ca_blob_hurry(blob, n->data_off + (uint64_t)off, size);
		fs->img.readahead(fs->img.userdata, n->data_off, fsize);
		atomic_store(&n->readahead_end, fsize);
	}
	maybe_readahead(fs, n, (uint64_t)off, (uint64_t)off + size);
	char *buf = NULL;
	ssize_t k;
	if (blob && !(n->cn && fs->ra)) {
		k = reply_spans(req, blob, n->data_off + (uint64_t)off, size);
	} else if (!(buf = malloc(size))) {
		k = -ENOMEM;
	} else {
		if (n->cn && fs->ra)
			k = ca_catar_ra_read(fs->ra, n->cn, buf, size, (uint64_t)off);
		else
			k = fs->img.read(fs->img.userdata, buf, size, n->data_off + (uint64_t)off);
		if (k >= 0 && (size_t)k < size)
			k = -EBADMSG; /* the image ends inside a file: a lying archive */
		if (k >= 0)
			fuse_reply_buf(req, buf, (size_t)k);
	}
	COUNT(fs, reads, 1);
	if (k < 0) {
		COUNT(fs, read_errors, 1);
		fs_log_io_error(fs, n, (int)k, "read", (uint64_t)off);
		reply_err(req, fs_errno((int)k));
	} else {
		COUNT(fs, bytes_read, (uint64_t)k);
		if (fs->o.record)
			ca_profile_rec_read(fs->o.record, fs->tree ? n->ino - 1 : UINT64_MAX, n->data_off, (uint64_t)off,
			                    (uint64_t)k);
	}
	free(buf);
	node_put(fs, n);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fs_of(req);
	struct statvfs sv = { 0 };
	(void)ino;
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = (fs->img.size + 4095) / 4096;
	sv.f_files = fs_inode_count(fs->inodes);
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

/* trusted.* goes to root only, as on a disk file system: the kernel
 * refuses others a trusted.* getxattr (without CAP_SYS_ADMIN) but passes
 * a FUSE listxattr on unfiltered, so the names are left out here. */
static bool caller_is_root(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	return c && c->uid == 0;
}

/* Reply to getxattr/listxattr with data of length len. */
static void reply_xattr(fuse_req_t req, const char *data, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, data, len);
}

/* Reply with what fs_tree_getxattr/listxattr returned: no such attribute
 * and a small buffer are the caller's business; other failures are I/O on
 * the image, counted, logged once and turned into EIO. */
static void reply_xattr_result(fuse_req_t req, struct fs *fs, struct fs_node *n, int r, const char *op,
                               const char *buf, size_t len, size_t size)
{
	if (r == -ENODATA || r == -ERANGE) {
		reply_err(req, -r);
	} else if (r < 0) {
		COUNT(fs, meta_errors, 1);
		fs_log_io_error(fs, n, r, op, 0);
		reply_err(req, fs_errno(r));
	} else if (size == 0) {
		fuse_reply_xattr(req, len);
	} else {
		fuse_reply_buf(req, buf, len);
	}
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fs *fs = fs_of(req);
	COUNT(fs, ops[FS_OP_GETXATTR], 1);
	struct fs_node *n;
	char *buf = NULL;
	size_t len = 0;
	if (fs->xattrs_none) {
		/* nothing to find: the kernel's fuse_getxattr marks the
		 * connection no_getxattr and answers every later getxattr
		 * (ls -l's security.selinux probe, exec's security.capability,
		 * overlayfs's trusted.overlay.*) EOPNOTSUPP itself; the stats
		 * go through FS_IOC_STATS instead */
		reply_err(req, ENOSYS);
		return;
	}
	int r = node_get(fs, ino, &n);
	if (r < 0) {
		reply_err(req, node_errno(fs, r));
		return;
	}
	if (ino == FUSE_ROOT_ID && !strcmp(name, FS_STATS_XATTR)) {
		char text[4096];
		len = fs_stats_text(fs, text, sizeof(text));
		reply_xattr(req, text, len, size);
	} else if (ino == FUSE_ROOT_ID && !strncmp(name, FS_METRICS_XATTR, strlen(FS_METRICS_XATTR))) {
		ssize_t k = (buf = malloc(FS_METRICS_MAX)) ? fs_metrics(fs, name, buf) : -ENOMEM;
		if (k > 0)
			reply_xattr(req, buf, (size_t)k, size);
		else
			reply_err(req, k == 0 ? ENODATA : (int)-k);
	} else if (!fs->tree || fs_tree_xattr_absent(fs, name)) {
		reply_err(req, ENODATA);
	} else if (size > 0 && !(buf = malloc(size))) {
		reply_err(req, ENOMEM);
	} else {
		r = fs_tree_getxattr(fs, n, caller_is_root(req), name, buf, size, &len);
		reply_xattr_result(req, fs, n, r, "getxattr", buf, len, size);
	}
	free(buf);
	node_put(fs, n);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs *fs = fs_of(req);
	COUNT(fs, ops[FS_OP_LISTXATTR], 1);
	struct fs_node *n;
	char *buf = NULL;
	size_t len = 0;
	int r = node_get(fs, ino, &n);
	if (r < 0) {
		reply_err(req, node_errno(fs, r));
		return;
	}
	if (!fs->tree) {
		reply_xattr(req, "", 0, size);
	} else if (size > 0 && !(buf = malloc(size))) {
		reply_err(req, ENOMEM);
	} else {
		r = fs_tree_listxattr(fs, n, caller_is_root(req), buf, size, &len);
		reply_xattr_result(req, fs, n, r, "listxattr", buf, len, size);
	}
	free(buf);
	node_put(fs, n);
}

/* FNV-1a, 64 bits, of a rendering: its name for the later pages (never 0) */
static uint64_t stats_digest(uint32_t format, const char *p, size_t n)
{
	uint64_t h = UINT64_C(14695981039346656037) ^ format;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * UINT64_C(1099511628211);
	return h ? h : 1;
}

/* Where a new rendering of uid's is kept (stats_lock held): an empty
 * slot, else uid's oldest, else the oldest (fs_private.h: a user's own
 * renderings are what its next one replaces). */
static struct fs_stats_doc *stats_slot(struct fs *fs, uid_t uid)
{
	struct fs_stats_doc *oldest = NULL, *own = NULL;
	for (size_t i = 0; i < FS_STATS_KEPT; i++) {
		struct fs_stats_doc *d = &fs->stats_kept[i];
		if (!d->digest)
			return d;
		if (!oldest || d->age < oldest->age)
			oldest = d;
		if (d->uid == uid && (!own || d->age < own->age))
			own = d;
	}
	return own ? own : oldest;
}

/* One page of a stats document (fs.h, FS_IOC_STATS): page 0 renders and
 * keeps the document, later pages are cut from the kept one. */
static void stats_ioctl(fuse_req_t req, struct fs *fs, const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct fs_stats_page *pg = NULL;
	char *doc = NULL;
	int err = 0;
	/* restricted ioctls come with _IOC_SIZE bytes both ways */
	if (in_bufsz != sizeof(*pg) || out_bufsz != sizeof(*pg)) {
		err = EINVAL;
		goto out;
	}
	if (!(pg = malloc(sizeof(*pg)))) {
		err = ENOMEM;
		goto out;
	}
	memcpy(pg, in_buf, offsetof(struct fs_stats_page, data));
	uint32_t want = pg->len && pg->len < FS_STATS_PAGE ? pg->len : FS_STATS_PAGE;
	if (pg->format >= FS_STATS_FORMATS || (pg->digest == 0 && pg->offset != 0)) {
		err = EINVAL;
		goto out;
	}
	if (pg->digest == 0) {
		ssize_t k = (doc = malloc(FS_METRICS_MAX)) ? fs_stats_render(fs, pg->format, doc) : -ENOMEM;
		if (k < 0) {
			err = (int)-k;
			goto out;
		}
		pg->digest = stats_digest(pg->format, doc, (size_t)k);
		const struct fuse_ctx *ctx = fuse_req_ctx(req);
		uid_t uid = ctx ? ctx->uid : (uid_t)-1;
		pthread_mutex_lock(&fs->stats_lock);
		struct fs_stats_doc *d = stats_slot(fs, uid);
		free(d->bytes);
		*d = (struct fs_stats_doc){ pg->digest, pg->format, (uint32_t)k, doc, ++fs->stats_clock, uid };
		doc = NULL; /* the ring's now */
		pthread_mutex_unlock(&fs->stats_lock);
	}
	err = ESTALE;
	pthread_mutex_lock(&fs->stats_lock);
	for (size_t i = 0; i < FS_STATS_KEPT; i++) {
		const struct fs_stats_doc *d = &fs->stats_kept[i];
		if (d->digest != pg->digest || d->format != pg->format)
			continue;
		if (pg->offset > d->len) {
			err = EINVAL;
			break;
		}
		pg->len = d->len - pg->offset < want ? (uint32_t)(d->len - pg->offset) : want;
		memcpy(pg->data, d->bytes + pg->offset, pg->len);
		pg->total = d->len;
		pg->magic = FS_STATS_MAGIC;
		err = 0;
		break;
	}
	pthread_mutex_unlock(&fs->stats_lock);
out:
	if (err)
		reply_err(req, err);
	else
		fuse_reply_ioctl(req, 0, pg, offsetof(struct fs_stats_page, data) + pg->len);
	free(doc);
	free(pg);
}

/* lsattr: the archived chattr flags; on the root, the stats (fs.h).
 * Nothing else is answered. */
static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg, struct fuse_file_info *fi,
                     unsigned flags, const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct fs *fs = fs_of(req);
	struct fs_node *n;
	(void)arg, (void)fi;
	if (cmd == (unsigned)FS_IOC_STATS && ino == FUSE_ROOT_ID && !fs->no_stats_ioctl) {
		/* the same layout for a 32-bit caller (fs.h) */
		stats_ioctl(req, fs, in_buf, in_bufsz, out_bufsz);
		return;
	}
	if (cmd != (unsigned)FS_IOC_GETFLAGS || (flags & FUSE_IOCTL_COMPAT) || !fs->tree) {
		reply_err(req, ENOTTY);
		return;
	}
	int r = node_get(fs, ino, &n);
	if (r < 0) {
		reply_err(req, node_errno(fs, r));
		return;
	}
	unsigned v = fs_tree_chattr(n);
	node_put(fs, n);
	fuse_reply_ioctl(req, 0, &v, out_bufsz < sizeof(v) ? out_bufsz : sizeof(v));
}

/* ---- everything that would write ---- */

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	(void)ino, (void)attr, (void)to_set, (void)fi;
	reply_err(req, EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	reply_err(req, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent, (void)name, (void)mode;
	reply_err(req, EROFS);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	reply_err(req, EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link, (void)parent, (void)name;
	reply_err(req, EROFS);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	reply_err(req, EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	reply_err(req, EROFS);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)size, (void)off, (void)fi;
	reply_err(req, EROFS);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
                        int flags)
{
	(void)ino, (void)name, (void)value, (void)size, (void)flags;
	reply_err(req, EROFS);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino, (void)name;
	reply_err(req, EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	(void)parent, (void)name, (void)mode, (void)fi;
	reply_err(req, EROFS);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                         struct fuse_file_info *fi)
{
	(void)ino, (void)mode, (void)offset, (void)length, (void)fi;
	reply_err(req, EROFS);
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.open = op_open,
	.read = op_read,
	.statfs = op_statfs,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.ioctl = op_ioctl,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.write = op_write,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.fallocate = op_fallocate,
};
