/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * metrics.c - the mount's counters as metrics (fs.h: FS_METRICS_*): one
 * snapshot, read at the time of the getxattr, written by base/metrics.h
 * in the format the xattr's name asks for. The names, types and units are
 * listed in docs/metrics.md; the counters are read where they live
 * (docs/design.md, Metrics): the fs's relaxed atomics, the chunk source's
 * and each HTTP engine's under their own locks, the caches' under theirs.
 * Nothing here keeps state: a scrape changes nothing.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs_private.h"

#define STORE_LABEL_MAX 512

/* store i's label: its URL without credentials (metrics.h), made unique
 * by " #N" when two stores would show the same */
static void store_label(struct fs *fs, size_t i, char *out, size_t cap)
{
	struct ca_remote_store *rs = ca_image_remote(fs->im, i);
	char other[STORE_LABEL_MAX];
	unsigned same = 0;
	ca_metrics_url_label(ca_remote_store_base(rs), out, cap);
	for (size_t j = 0; j < i; j++) {
		ca_metrics_url_label(ca_remote_store_base(ca_image_remote(fs->im, j)), other, sizeof(other));
		same += !strcmp(other, out);
	}
	if (same) {
		size_t n = strlen(out);
		snprintf(out + n, cap - n, " #%u", same + 1);
	}
}

/* a per-store counter family: value(i) of every store */
static void store_counter(struct ca_metrics *m, const struct ca_remote_store_stats *st, char (*labels)[STORE_LABEL_MAX],
                          size_t n, const char *name, const char *unit, const char *help, size_t field)
{
	ca_metrics_family(m, name, CA_METRIC_COUNTER, unit, help);
	for (size_t i = 0; i < n; i++) {
		const char *l[] = { "store", labels[i], NULL };
		ca_metrics_u64(m, "_total", l, *(const uint64_t *)((const char *)&st[i] + field));
	}
}

static void stores(struct ca_metrics *m, struct fs *fs)
{
	size_t n = 0;
	while (ca_image_remote(fs->im, n))
		n++;
	if (!n)
		return;
	struct ca_remote_store_stats *st = calloc(n, sizeof(*st));
	char(*labels)[STORE_LABEL_MAX] = calloc(n, sizeof(*labels));
	if (!st || !labels) {
		m->overflow = true; /* reported as too big: the caller's -EFBIG */
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		ca_remote_store_get_stats(ca_image_remote(fs->im, i), &st[i]);
		store_label(fs, i, labels[i], sizeof(labels[i]));
	}
#define F(x) offsetof(struct ca_remote_store_stats, x)
	store_counter(m, st, labels, n, "cafs_http_requests", NULL, "HTTP requests submitted to the store",
	              F(http.requests));
	store_counter(m, st, labels, n, "cafs_http_attempts", NULL, "HTTP requests sent, retries included",
	              F(http.attempts));
	store_counter(m, st, labels, n, "cafs_http_retries", NULL, "HTTP attempts that failed and were retried",
	              F(http.retries));
	store_counter(m, st, labels, n, "cafs_http_errors", NULL,
	              "HTTP requests that failed for good (after their retries)", F(http.errors));
	store_counter(m, st, labels, n, "cafs_http_missing", NULL, "HTTP requests answered 404 or 410",
	              F(http.missing));
	store_counter(m, st, labels, n, "cafs_store_bytes", "bytes", "body bytes received from the store",
	              F(http.bytes));
	store_counter(m, st, labels, n, "cafs_store_prefetches", NULL, "chunk downloads started ahead of a read",
	              F(prefetches));
	store_counter(m, st, labels, n, "cafs_store_prefetch_hits", NULL, "chunk reads served by a prefetch",
	              F(prefetch_hits));
#undef F
	ca_metrics_family(m, "cafs_http_request_duration_seconds", CA_METRIC_HISTOGRAM, "seconds",
	                  "time from a request's submission to its final outcome, retries included");
	for (size_t i = 0; i < n; i++) {
		const char *l[] = { "store", labels[i], NULL };
		ca_metrics_histogram_us(m, l, ca_http_latency_bounds_us, st[i].http.latency, CA_HTTP_LATENCY_BUCKETS,
		                        st[i].http.latency_sum_us);
	}
	ca_metrics_family(m, "cafs_store_up", CA_METRIC_GAUGE, NULL, "1 while the store answers, 0 while it is failing");
	for (size_t i = 0; i < n; i++) {
		const char *l[] = { "store", labels[i], NULL };
		ca_metrics_u64(m, "", l, !st[i].failing);
	}
out:
	free(st);
	free(labels);
}

static void failover(struct ca_metrics *m, struct fs *fs)
{
	struct ca_failover *g;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; (g = ca_image_failover(fs->im, i)); i++) {
			struct ca_failover_stats fst;
			char group[24], active[STORE_LABEL_MAX], shown[STORE_LABEL_MAX];
			snprintf(group, sizeof(group), "%zu", i);
			if (i == 0)
				ca_metrics_family(m, pass ? "cafs_failover_active" : "cafs_failover_switches",
				                  pass ? CA_METRIC_GAUGE : CA_METRIC_COUNTER, NULL,
				                  pass ? "1 for the failover group's active member"
				                       : "times the failover group's active member changed");
			ca_failover_get_stats(g, &fst);
			if (pass) {
				ca_failover_active_name(g, shown, sizeof(shown));
				ca_metrics_url_label(shown, active, sizeof(active));
				const char *l[] = { "group", group, "store", active, NULL };
				ca_metrics_u64(m, "", l, 1);
			} else {
				const char *l[] = { "group", group, NULL };
				ca_metrics_u64(m, "_total", l, fst.switches);
			}
		}
	}
}

static void counter(struct ca_metrics *m, const char *name, const char *unit, const char *help, uint64_t v)
{
	ca_metrics_family(m, name, CA_METRIC_COUNTER, unit, help);
	ca_metrics_u64(m, "_total", NULL, v);
}

static void gauge(struct ca_metrics *m, const char *name, const char *unit, const char *help, uint64_t v)
{
	ca_metrics_family(m, name, CA_METRIC_GAUGE, unit, help);
	ca_metrics_u64(m, "", NULL, v);
}

static void background(struct ca_metrics *m, struct ca_prefetch *p)
{
	struct ca_prefetch_stats s = { 0 }; /* none: zeros, so the series are always there */
	if (p)
		ca_prefetch_get_stats(p, &s);
	gauge(m, "cafs_profile_chunks", NULL, "chunks of the replayed profile", s.profile_chunks);
	gauge(m, "cafs_profile_chunks_done", NULL, "chunks of the replayed profile now local", s.profile_done);
	gauge(m, "cafs_fill_running", NULL, "1 while --fill is fetching the image's chunks", s.fill && !s.finished);
	gauge(m, "cafs_fill_chunks", NULL, "chunks --fill fetches (0: no fill)", s.fill ? s.fill_chunks : 0);
	gauge(m, "cafs_fill_chunks_done", NULL, "chunks --fill has made local", s.fill ? s.fill_done : 0);
	gauge(m, "cafs_fill_size_bytes", "bytes", "bytes --fill fetches", s.fill ? s.fill_bytes : 0);
	gauge(m, "cafs_fill_done_bytes", "bytes", "bytes --fill has made local", s.fill ? s.fill_done_bytes : 0);
	counter(m, "cafs_background_errors", NULL, "background (profile, fill) fetches that failed", s.errors);
}

/* the delta pack (delta_source.h): zeros and "none" without one, so the
 * series are always there */
static void delta(struct ca_metrics *m, struct fs *fs)
{
	static const char *const states[] = { "none", "loading", "filling", "ready", "unusable" };
	struct ca_delta_source_stats ds = { .state = "none" };
	ca_image_delta_stats(fs->im, &ds);
	counter(m, "cafs_delta_chunks", NULL, "chunks rebuilt from the delta pack (not fetched)", ds.chunks);
	counter(m, "cafs_delta_bytes", "bytes", "bytes of the chunks rebuilt from the delta pack (uncompressed)",
	        ds.bytes);
	counter(m, "cafs_delta_pack_requests", NULL, "requests for the delta pack (its table's included)",
	        ds.requests);
	counter(m, "cafs_delta_pack_bytes", "bytes", "bytes of the delta pack read", ds.wire_bytes);
	ca_metrics_family(m, "cafs_delta_pack_state", CA_METRIC_GAUGE, NULL,
	                  "1 for the delta pack's state: none, loading, filling, ready, unusable");
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		const char *l[] = { "state", states[i], NULL };
		ca_metrics_u64(m, "", l, !strcmp(states[i], ds.state));
	}
}

static void memory(struct ca_metrics *m, struct fs *fs, const struct ca_chunksrc_stats *s)
{
	uint64_t tree[4];
	fs_tree_memory(fs, tree);
	const char *pools[] = { "chunk_lru", "records", "listings" };
	uint64_t used[] = { s->lru_bytes, tree[0], tree[2] }, limit[] = { s->lru_limit, tree[1], tree[3] };
	for (int pass = 0; pass < 2; pass++) {
		ca_metrics_family(m, pass ? "cafs_memory_limit_bytes" : "cafs_memory_bytes", CA_METRIC_GAUGE, "bytes",
		                  pass ? "the bound of a pool of the mount's memory budget"
		                       : "memory in use in a pool of the mount's memory budget");
		for (size_t i = 0; i < 3; i++) {
			const char *l[] = { "pool", pools[i], NULL };
			ca_metrics_u64(m, "", l, pass ? limit[i] : used[i]);
		}
	}
	/* the process as a whole against the documented budget: what an
	 * operator alerts on (the pools above are LRUs: full is normal) */
	uint64_t pages = 0, rss;
	FILE *f = fopen("/proc/self/statm", "re");
	if (!f || fscanf(f, "%*u %" SCNu64, &pages) != 1)
		pages = 0;
	if (f)
		fclose(f);
	rss = pages * (uint64_t)sysconf(_SC_PAGESIZE);
	gauge(m, "cafs_memory_resident_bytes", "bytes", "resident memory of the mount's server process", rss);
	gauge(m, "cafs_memory_budget_bytes", "bytes", "the mount's memory budget: lru_size + 192 MiB (cafs(1))",
	      s->lru_limit + FS_MEMORY_BUDGET_FIXED);
	gauge(m, "cafs_inodes", NULL, "inodes the mount holds", fs_inode_count(fs->inodes));
	gauge(m, "cafs_inodes_limit", NULL, "inodes the mount holds at most beyond the kernel's", FS_INODES_MAX);
}

ssize_t fs_metrics(struct fs *fs, const char *name, char *buf)
{
	enum ca_metrics_format format;
	struct ca_metrics m;
	struct ca_chunksrc_stats s = { 0 };
	if (!strcmp(name, FS_METRICS_XATTR))
		format = CA_METRICS_OPENMETRICS;
	else if (!strcmp(name, FS_METRICS_PROM_XATTR))
		format = CA_METRICS_PROMETHEUS;
	else if (!strcmp(name, FS_METRICS_JSON_XATTR))
		format = CA_METRICS_JSON;
	else
		return 0;
	if (ca_image_chunksrc(fs->im))
		ca_chunksrc_get_stats(ca_image_chunksrc(fs->im), &s);
	const char *common[] = { "mountpoint", fs->o.mountpoint, NULL };
	ca_metrics_begin(&m, format, buf, FS_METRICS_MAX);
	if (fs->o.mountpoint)
		m.common_labels = common;
	counter(&m, "cafs_reads", NULL, "read requests answered", fs->reads);
	counter(&m, "cafs_read_errors", NULL, "read requests that failed (EIO and the like)", fs->read_errors);
	counter(&m, "cafs_read_bytes", "bytes", "bytes served to readers", fs->bytes_read);
	counter(&m, "cafs_metadata_errors", NULL, "metadata requests that failed on the image", fs->meta_errors);
	counter(&m, "cafs_cache_hits", NULL, "chunks found in the disk cache", s.cache_hits);
	counter(&m, "cafs_cache_misses", NULL, "chunks fetched from a store (not in any cache, not built from a delta pack)", s.fetched_chunks);
	counter(&m, "cafs_lru_hits", NULL, "chunks found in the memory LRU", s.lru_hits);
	counter(&m, "cafs_fetched_bytes", "bytes", "chunk file bytes (as stored: compressed) fetched from stores", s.fetched_bytes);
	counter(&m, "cafs_chunk_errors", NULL, "chunk fetches that failed", s.errors);
	counter(&m, "cafs_chunk_corrupt", NULL, "chunks that failed their digest check", s.corrupt);
	const char *cache = ca_image_cache_dir(fs->im);
	struct statvfs sv;
	if (cache && statvfs(cache, &sv) == 0) {
		gauge(&m, "cafs_cache_fs_size_bytes", "bytes", "size of the file system holding the disk cache",
		      (uint64_t)sv.f_blocks * sv.f_frsize);
		gauge(&m, "cafs_cache_fs_avail_bytes", "bytes", "bytes free for the disk cache on its file system",
		      (uint64_t)sv.f_bavail * sv.f_frsize);
	}
	/* the last count of a background walk (cache_size.h): a scrape never walks */
	struct ca_cache_size_stats cz;
	if (fs->cache_size && ca_cache_size_get(fs->cache_size, &cz)) {
		gauge(&m, "cafs_cache_size_bytes", "bytes", "bytes of the disk cache's chunk files, as last counted",
		      cz.bytes);
		gauge(&m, "cafs_cache_chunks", NULL, "chunk files in the disk cache, as last counted", cz.chunks);
		ca_metrics_family(&m, "cafs_cache_size_age_seconds", CA_METRIC_GAUGE, "seconds",
		                  "time since the disk cache's size was counted");
		ca_metrics_real(&m, "", NULL, (double)cz.age_ms / 1000);
	}
	stores(&m, fs);
	failover(&m, fs);
	background(&m, fs->o.prefetch);
	delta(&m, fs);
	memory(&m, fs, &s);
	size_t len = ca_metrics_end(&m);
	return len ? (ssize_t)len : -EFBIG;
}
