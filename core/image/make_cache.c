/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * make_cache.c - incremental make (make_cache.h): the record file, and
 * the state machine between the encoder and the make pipeline.
 *
 * The machine is either at a cut of the chunker (at_cut) with a queue of
 * items proven equal to the old stream at one offset difference (qd),
 * waiting to cover the old chunk ci; or mid-chunk, feeding real bytes to
 * its own chunker (to see the cuts) and to the pipeline (which cuts the
 * same). Items not yet handled wait in the inbox; giving up on a queue
 * puts its items back at the inbox's front, to be run as real bytes.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/buf.h"
#include "base/digest.h"
#include "base/fdio.h"
#include "base/log.h"
#include "chunk/chunker.h"
#include "format/index.h"
#include "image/make_cache.h"

#define MAGIC "CAFSMKC1"
#define FILE_VERSION 1
#define HEADER_SIZE 128
#define CHUNK_REC 40
#define ITEM_REC 64
#define TRAILER CA_DIGEST_SIZE
#define GAP_MAX (1u << 20)   /* metadata between payloads kept to compare; beyond: not reused */
#define QUEUE_MAX 1024       /* items (and so open files) waiting for one chunk */
#define READ_SIZE (1u << 20)
#define RACY_NS 2000000000ull /* a timestamp this close to the recording make is not trusted */

enum { REC_GAP = 1, REC_FILE = 2 };
enum { REC_RACY = 1 };

struct rec {
	uint8_t kind, flags;
	uint64_t off, len;
	uint8_t digest[CA_DIGEST_SIZE]; /* a gap */
	uint64_t dev, ino, mtime, ctime; /* a file */
};

/* what an item's bytes come from: memory (fd < 0) or a file, shared by
 * the pieces of an item */
struct src {
	unsigned refs;
	int fd;
	uint8_t data[];
};

struct item {
	struct src *src;     /* NULL: borrowed memory, handled before the call returns */
	const uint8_t *mem;  /* memory items: their bytes */
	uint64_t foff, len;  /* file items: where in the file */
	bool mapped;
	int64_t delta;       /* new offset - old offset, when mapped */
};

struct ca_make_cache {
	char *dir, *name;
	bool usable; /* the directory is trusted: records may be read and written */
	/* the directory checked at open, kept: the record is written into it,
	 * not into whatever its name leads to by then (a parent that another
	 * user can write may have had it swapped for a symlink meanwhile) */
	int dfd;
	struct ca_make_cache_key key;
	uint64_t started_ns;

	/* the old make */
	bool have_old, old_digest_known;
	uint64_t old_total;
	uint8_t old_digest[CA_CHUNK_ID_SIZE];
	size_t n_chunks;
	uint64_t *ends;
	uint8_t (*ids)[CA_CHUNK_ID_SIZE];
	size_t n_recs;
	struct rec *recs;
	size_t *by_ino, n_by_ino, *by_digest, n_by_digest;

	/* this make */
	struct ca_maker *m;
	struct ca_chunker ch;
	struct ca_digest *gd;
	struct rec *nrecs;
	size_t n_nrecs, cap_nrecs;
	bool too_big; /* over the caps: not recorded */
	uint64_t in_pos;   /* bytes received from the encoder */
	uint64_t pos;      /* bytes handled (fed or given as known chunks) */
	struct ca_buf gap;
	uint64_t gap_start;
	bool gap_spilled;  /* too long to compare: gone out as real bytes */
	uint64_t pending_file; /* bytes of a file the encoder reads itself, still to come */
	size_t next_old;   /* the old record expected next */
	bool identical;    /* every item so far maps to the same old one, same offset */
	uint64_t file_read;

	bool at_cut;
	struct item *q;
	size_t nq, ci;
	uint64_t q_bytes;
	int64_t qd;
	size_t run_first, run_n; /* old chunks taken, not yet given to the pipeline (one trip for a run) */
	uint64_t *run_sizes;
	struct item *inbox;
	size_t n_inbox, cap_inbox;
	uint8_t *rbuf;
};

/* ---- small helpers ---- */

static void le64w(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le64r(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

static void src_unref(struct src *s)
{
	if (s && --s->refs == 0) {
		if (s->fd >= 0)
			close(s->fd);
		free(s);
	}
}

/* ---- the record file ---- */

static int cmp_ino(const void *a, const void *b, void *arg)
{
	const struct rec *r = arg, *x = &r[*(const size_t *)a], *y = &r[*(const size_t *)b];
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static int cmp_dig(const void *a, const void *b, void *arg)
{
	const struct rec *r = arg, *x = &r[*(const size_t *)a], *y = &r[*(const size_t *)b];
	return memcmp(x->digest, y->digest, CA_DIGEST_SIZE);
}

static void header_fill(const struct ca_make_cache *c, uint8_t *h, uint64_t total, const uint8_t *digest,
                        bool digest_known, size_t n_chunks, size_t n_recs)
{
	memset(h, 0, HEADER_SIZE);
	memcpy(h, MAGIC, 8);
	le64w(h + 8, FILE_VERSION);
	le64w(h + 16, (uint64_t)(unsigned char)c->key.kind);
	le64w(h + 24, c->key.feature_flags);
	le64w(h + 32, c->key.chunk_min);
	le64w(h + 40, c->key.chunk_avg);
	le64w(h + 48, c->key.chunk_max);
	le64w(h + 56, total);
	le64w(h + 64, n_chunks);
	le64w(h + 72, n_recs);
	le64w(h + 80, digest_known);
	if (digest)
		memcpy(h + 88, digest, CA_DIGEST_SIZE);
}

/* Parse and check a record file's bytes; "why" for the warning. */
static const char *parse(struct ca_make_cache *c, const uint8_t *p, size_t size)
{
	uint8_t want[HEADER_SIZE], sum[CA_DIGEST_SIZE];
	struct ca_digest *d = NULL;
	if (size < HEADER_SIZE + TRAILER || memcmp(p, MAGIC, 8))
		return "not a make cache file, or truncated";
	if (le64r(p + 8) != FILE_VERSION)
		return "another version";
	uint64_t total = le64r(p + 56), nc = le64r(p + 64), nr = le64r(p + 72);
	header_fill(c, want, total, p + 88, le64r(p + 80) != 0, (size_t)nc, (size_t)nr);
	if (memcmp(want + 16, p + 16, 40))
		return "made with other chunk sizes or feature flags";
	if (nc > CA_MAKE_CACHE_MAX_FILE / CHUNK_REC || nr > CA_MAKE_CACHE_MAX_FILE / ITEM_REC ||
	    HEADER_SIZE + nc * CHUNK_REC + nr * ITEM_REC + TRAILER != size)
		return "truncated or corrupt";
	if (ca_digest_new(CA_DIGEST_SHA256, &d) < 0 || ca_digest_once(d, p, size - TRAILER, sum) < 0) {
		ca_digest_free(d);
		return "out of memory";
	}
	ca_digest_free(d);
	if (memcmp(sum, p + size - TRAILER, TRAILER))
		return "corrupt (checksum)";
	c->ends = malloc((nc ? nc : 1) * sizeof(*c->ends));
	c->ids = malloc((nc ? nc : 1) * sizeof(*c->ids));
	c->recs = calloc(nr ? nr : 1, sizeof(*c->recs));
	c->by_ino = malloc((nr ? nr : 1) * sizeof(size_t));
	c->by_digest = malloc((nr ? nr : 1) * sizeof(size_t));
	if (!c->ends || !c->ids || !c->recs || !c->by_ino || !c->by_digest)
		return "out of memory";
	const uint8_t *q = p + HEADER_SIZE;
	uint64_t prev = 0;
	for (size_t i = 0; i < nc; i++, q += CHUNK_REC) {
		c->ends[i] = le64r(q);
		memcpy(c->ids[i], q + 8, CA_CHUNK_ID_SIZE);
		if (c->ends[i] <= prev)
			return "corrupt (chunks)";
		prev = c->ends[i];
	}
	if (prev != total)
		return "corrupt (chunks)";
	uint64_t at = 0;
	for (size_t i = 0; i < nr; i++, q += ITEM_REC) {
		struct rec *r = &c->recs[i];
		r->kind = q[0];
		r->flags = q[1];
		r->off = le64r(q + 8);
		r->len = le64r(q + 16);
		if ((r->kind != REC_GAP && r->kind != REC_FILE) || r->off != at || r->len > total - at)
			return "corrupt (items)";
		at += r->len;
		if (r->kind == REC_GAP) {
			memcpy(r->digest, q + 24, CA_DIGEST_SIZE);
			c->by_digest[c->n_by_digest++] = i;
		} else {
			r->dev = le64r(q + 24);
			r->ino = le64r(q + 32);
			r->mtime = le64r(q + 40);
			r->ctime = le64r(q + 48);
			if (!(r->flags & REC_RACY))
				c->by_ino[c->n_by_ino++] = i;
		}
	}
	if (at != total)
		return "corrupt (items)";
	qsort_r(c->by_ino, c->n_by_ino, sizeof(size_t), cmp_ino, c->recs);
	qsort_r(c->by_digest, c->n_by_digest, sizeof(size_t), cmp_dig, c->recs);
	c->n_chunks = nc;
	c->n_recs = nr;
	c->old_total = total;
	c->old_digest_known = le64r(p + 80) != 0;
	memcpy(c->old_digest, p + 88, CA_DIGEST_SIZE);
	return NULL;
}

static void forget_old(struct ca_make_cache *c)
{
	free(c->ends);
	free(c->ids);
	free(c->recs);
	free(c->by_ino);
	free(c->by_digest);
	c->ends = NULL;
	c->ids = NULL;
	c->recs = NULL;
	c->by_ino = c->by_digest = NULL;
	c->n_chunks = c->n_recs = c->n_by_ino = c->n_by_digest = 0;
	c->have_old = false;
}

static void load(struct ca_make_cache *c, int dfd)
{
	struct stat st;
	uint8_t *p = NULL;
	const char *why = NULL;
	int fd = openat(dfd, c->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno != ENOENT)
			ca_log_warning("make cache %s/%s: ignored: %s", c->dir, c->name, strerror(errno));
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_uid != geteuid() || (st.st_mode & 077))
		why = "not private to you";
	else if ((uint64_t)st.st_size > CA_MAKE_CACHE_MAX_FILE)
		why = "too large";
	else if (!(p = malloc(st.st_size ? (size_t)st.st_size : 1)))
		why = "out of memory";
	else if (pread(fd, p, (size_t)st.st_size, 0) != st.st_size)
		why = "cannot read it";
	else
		why = parse(c, p, (size_t)st.st_size);
	close(fd);
	free(p);
	if (why) {
		forget_old(c);
		ca_log_warning("make cache %s/%s: ignored: %s", c->dir, c->name, why);
		return;
	}
	c->have_old = true;
}

/* mkdir -p with new directories 0700, then the checks of a chunk cache */
static int open_dir(const char *dir)
{
	char *p = strdup(dir);
	if (!p)
		return -ENOMEM;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char was = *s;
		*s = 0;
		(void)mkdir(p, 0700);
		*s = was;
		if (!was)
			break;
	}
	free(p);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		ca_log_warning("make cache %s: not used: %s", dir, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		ca_log_warning("make cache %s: not used: not owned by you or open to others (must be 0700)", dir);
		close(fd);
		return -EPERM;
	}
	return fd;
}

int ca_make_cache_open(const char *dir, const struct ca_make_cache_key *k, struct ca_make_cache **ret)
{
	struct ca_make_cache *c = calloc(1, sizeof(*c));
	uint8_t h[CA_DIGEST_SIZE];
	char hex[2 * CA_DIGEST_SIZE + 1];
	struct ca_digest *d = NULL;
	struct timespec now;
	if (!c)
		return -ENOMEM;
	c->dfd = -1;
	c->key = *k;
	c->gap = (struct ca_buf)CA_BUF_INIT;
	c->identical = true;
	c->at_cut = true;
	clock_gettime(CLOCK_REALTIME, &now);
	c->started_ns = ts_ns(&now);
	c->dir = strdup(dir);
	int r = c->dir && ca_digest_new(CA_DIGEST_SHA256, &d) == 0 ? 0 : -ENOMEM;
	if (r == 0) {
		/* the name: the input and the kind, not a secret but not readable either */
		r = ca_digest_update(d, k->input, strlen(k->input) + 1);
		if (r == 0)
			r = ca_digest_update(d, &k->kind, 1);
		if (r == 0)
			r = ca_digest_final(d, h);
	}
	ca_digest_free(d);
	if (r == 0) {
		ca_id_to_hex(h, hex);
		hex[32] = 0;
		if (asprintf(&c->name, "%s.camake", hex) < 0) {
			c->name = NULL;
			r = -ENOMEM;
		}
	}
	if (r < 0) {
		ca_make_cache_free(c);
		return r;
	}
	c->dfd = open_dir(dir); /* warns */
	if (c->dfd >= 0) {
		c->usable = true;
		load(c, c->dfd); /* warns */
	}
	*ret = c;
	return 0;
}

void ca_make_cache_free(struct ca_make_cache *c)
{
	if (!c)
		return;
	forget_old(c);
	for (size_t i = 0; i < c->nq; i++)
		src_unref(c->q[i].src);
	for (size_t i = 0; i < c->n_inbox; i++)
		src_unref(c->inbox[i].src);
	free(c->q);
	free(c->inbox);
	free(c->rbuf);
	free(c->run_sizes);
	free(c->nrecs);
	ca_buf_release(&c->gap);
	ca_digest_free(c->gd);
	if (c->dfd >= 0)
		close(c->dfd);
	free(c->dir);
	free(c->name);
	free(c);
}

/* ---- the old stream ---- */

/* The old chunk that starts at old offset off: its index, or SIZE_MAX
 * (also for the last one, which the stream's end cut, not its content). */
static size_t old_chunk_at(const struct ca_make_cache *c, int64_t off)
{
	if (off < 0 || c->n_chunks < 2)
		return SIZE_MAX;
	size_t i;
	if (off == 0) {
		i = 0;
	} else {
		size_t lo = 0, hi = c->n_chunks;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (c->ends[mid] < (uint64_t)off)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == c->n_chunks || c->ends[lo] != (uint64_t)off)
			return SIZE_MAX;
		i = lo + 1;
	}
	return i + 1 < c->n_chunks ? i : SIZE_MAX;
}

static uint64_t old_chunk_size(const struct ca_make_cache *c, size_t i)
{
	return c->ends[i] - (i ? c->ends[i - 1] : 0);
}

/* ---- the machine ---- */

static int inbox_add(struct ca_make_cache *c, const struct item *it, bool front)
{
	if (c->n_inbox == c->cap_inbox) {
		size_t cap = c->cap_inbox ? 2 * c->cap_inbox : 16;
		struct item *v = realloc(c->inbox, cap * sizeof(*v));
		if (!v) {
			src_unref(it->src);
			return -ENOMEM;
		}
		c->inbox = v;
		c->cap_inbox = cap;
	}
	if (front) {
		memmove(c->inbox + 1, c->inbox, c->n_inbox * sizeof(*c->inbox));
		c->inbox[0] = *it;
	} else {
		c->inbox[c->n_inbox] = *it;
	}
	c->n_inbox++;
	return 0;
}

/* Give up on the queue: its items go back to the inbox's front, to be
 * run as real bytes from the cut. */
static int spill_queue(struct ca_make_cache *c)
{
	int r = 0;
	for (size_t i = c->nq; i > 0; i--) {
		int k = inbox_add(c, &c->q[i - 1], true);
		if (k < 0 && r == 0)
			r = k;
	}
	c->nq = 0;
	c->q_bytes = 0;
	c->at_cut = false;
	return r;
}

static void advance(struct item *it, uint64_t k)
{
	if (it->src && it->src->fd >= 0)
		it->foff += k;
	else
		it->mem += k;
	it->len -= k;
}

#define RUN_MAX 4096

/* The run of old chunks taken so far, to the pipeline. */
static int flush_run(struct ca_make_cache *c)
{
	if (c->run_n == 0)
		return 0;
	for (size_t i = 0; i < c->run_n; i++)
		c->run_sizes[i] = old_chunk_size(c, c->run_first + i);
	int r = ca_maker_feed_known(c->m, (const uint8_t(*)[CA_CHUNK_ID_SIZE])c->ids + c->run_first, c->run_sizes,
	                            c->run_n);
	c->run_n = 0;
	return r;
}

/* Old chunks the queue covers go to the pipeline by id. */
static int drain(struct ca_make_cache *c)
{
	while (c->nq > 0) {
		uint64_t size = old_chunk_size(c, c->ci);
		if (c->q_bytes < size)
			return 0;
		int r = ca_maker_has(c->m, c->ids[c->ci]);
		if (r < 0)
			return r;
		if (r == 0)
			return spill_queue(c);
		if (c->run_n > 0 && (c->run_first + c->run_n != c->ci || c->run_n == RUN_MAX)) {
			r = flush_run(c);
			if (r < 0)
				return r;
		}
		if (c->run_n++ == 0)
			c->run_first = c->ci;
		c->pos += size;
		c->q_bytes -= size;
		for (uint64_t left = size; left > 0;) {
			struct item *h = &c->q[0];
			uint64_t k = h->len < left ? h->len : left;
			advance(h, k);
			left -= k;
			if (h->len == 0) {
				src_unref(h->src);
				memmove(c->q, c->q + 1, (--c->nq) * sizeof(*c->q));
			}
		}
		c->ci++;
		if (c->ci + 1 >= c->n_chunks) /* the last old chunk: never taken */
			return spill_queue(c);
	}
	return 0;
}

/* Real bytes p[0..n) of item it, from mid-chunk: fed until a cut, after
 * which the rest (from p + k) is the caller's. Returns bytes used. */
static int feed_real(struct ca_make_cache *c, const uint8_t *p, size_t n, size_t *used)
{
	size_t k = ca_chunker_scan(&c->ch, p, n);
	bool cut = k != CA_CHUNKER_NO_CUT;
	if (!cut)
		k = n;
	int r = flush_run(c); /* the chunks taken before go first */
	if (r == 0)
		r = ca_maker_feed(c->m, p, k);
	if (r < 0)
		return r;
	c->pos += k;
	*used = k;
	if (cut)
		c->at_cut = true;
	return 0;
}

/* Run item it as real bytes until its end or a cut; the rest goes back
 * to the inbox's front. */
static int run(struct ca_make_cache *c, struct item it)
{
	int r = 0;
	while (it.len > 0 && !c->at_cut && r == 0) {
		size_t used = 0;
		if (it.src && it.src->fd >= 0) {
			/* a cut comes within chunk_max: read no further ahead */
			size_t want = it.len < READ_SIZE ? (size_t)it.len : READ_SIZE;
			if (want > c->key.chunk_max)
				want = (size_t)c->key.chunk_max;
			ssize_t got = pread(it.src->fd, c->rbuf, want, (off_t)it.foff);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				r = got < 0 ? -errno : -EIO; /* shrank since its stat */
				break;
			}
			c->file_read += (uint64_t)got;
			r = feed_real(c, c->rbuf, (size_t)got, &used);
		} else {
			r = feed_real(c, it.mem, (size_t)it.len, &used);
		}
		if (r == 0)
			advance(&it, used);
	}
	if (r == 0 && it.len > 0)
		return inbox_add(c, &it, true);
	src_unref(it.src);
	return r;
}

/* One item from the inbox. */
static int step(struct ca_make_cache *c, struct item it)
{
	if (c->at_cut) {
		size_t ci = c->nq == 0 && it.mapped && it.src ? old_chunk_at(c, (int64_t)c->pos - it.delta) : SIZE_MAX;
		if (ci != SIZE_MAX) { /* a cut that is an old one: a queue begins */
			c->ci = ci;
			c->qd = it.delta;
			c->q[0] = it;
			c->nq = 1;
			c->q_bytes = it.len;
			return drain(c);
		} else if (c->nq > 0 && it.mapped && it.src && it.delta == c->qd && c->nq < QUEUE_MAX) {
			c->q[c->nq++] = it;
			c->q_bytes += it.len;
			return drain(c);
		} else if (c->nq > 0) {
			int r = inbox_add(c, &it, true);
			return r < 0 ? r : spill_queue(c);
		}
		c->at_cut = false; /* from this cut on, real bytes */
	}
	return run(c, it);
}

static int pump(struct ca_make_cache *c)
{
	int r = 0;
	while (c->n_inbox > 0) {
		struct item it = c->inbox[0];
		memmove(c->inbox, c->inbox + 1, (--c->n_inbox) * sizeof(*c->inbox));
		if (r == 0)
			r = step(c, it);
		else
			src_unref(it.src);
	}
	return r;
}

static int put(struct ca_make_cache *c, const struct item *it)
{
	if (it->len == 0) {
		src_unref(it->src);
		return 0;
	}
	int r = inbox_add(c, it, false);
	return r < 0 ? r : pump(c);
}

/* ---- recording this make ---- */

static struct rec *new_rec(struct ca_make_cache *c)
{
	if (c->too_big)
		return NULL;
	if (c->n_nrecs == c->cap_nrecs) {
		size_t cap = c->cap_nrecs ? 2 * c->cap_nrecs : 1024;
		struct rec *v = cap <= CA_MAKE_CACHE_MAX_FILE / ITEM_REC ? realloc(c->nrecs, cap * sizeof(*v)) : NULL;
		if (!v) {
			c->too_big = true;
			return NULL;
		}
		c->nrecs = v;
		c->cap_nrecs = cap;
	}
	struct rec *r = &c->nrecs[c->n_nrecs++];
	memset(r, 0, sizeof(*r));
	return r;
}

/* Is new record i (at stream offset off) the old one i, at the same offset? */
static void check_identical(struct ca_make_cache *c, size_t old, bool mapped, uint64_t off)
{
	size_t i = c->n_nrecs - 1;
	if (c->too_big || !mapped || old != i || c->recs[old].off != off)
		c->identical = false;
}

/* The gap before a payload (or the stream's end) is complete. */
static int end_gap(struct ca_make_cache *c)
{
	uint8_t dg[CA_DIGEST_SIZE];
	uint64_t len = c->in_pos - c->gap_start;
	int r = ca_digest_final(c->gd, dg);
	if (r < 0)
		return r;
	struct rec *rc = new_rec(c);
	if (rc) {
		*rc = (struct rec){ .kind = REC_GAP, .off = c->gap_start, .len = len };
		memcpy(rc->digest, dg, CA_DIGEST_SIZE);
	}
	size_t old = SIZE_MAX;
	if (!c->gap_spilled && c->have_old) {
		if (c->next_old < c->n_recs && c->recs[c->next_old].kind == REC_GAP &&
		    c->recs[c->next_old].len == len && !memcmp(c->recs[c->next_old].digest, dg, CA_DIGEST_SIZE)) {
			old = c->next_old;
		} else {
			size_t lo = 0, hi = c->n_by_digest;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				int k = memcmp(c->recs[c->by_digest[mid]].digest, dg, CA_DIGEST_SIZE);
				if (k < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < c->n_by_digest && !memcmp(c->recs[c->by_digest[lo]].digest, dg, CA_DIGEST_SIZE) &&
			    c->recs[c->by_digest[lo]].len == len)
				old = c->by_digest[lo];
		}
	}
	check_identical(c, old, old != SIZE_MAX, c->gap_start);
	if (old != SIZE_MAX)
		c->next_old = old + 1;
	struct item it = { .len = c->gap.size - (c->gap_spilled ? c->gap.size : 0), .mem = c->gap.data };
	if (!c->gap_spilled && old != SIZE_MAX && len > 0) {
		struct src *s = malloc(sizeof(*s) + len);
		if (!s)
			return -ENOMEM;
		s->refs = 1;
		s->fd = -1;
		memcpy(s->data, c->gap.data, len);
		it = (struct item){ .src = s, .mem = s->data, .len = len, .mapped = true,
			            .delta = (int64_t)c->gap_start - (int64_t)c->recs[old].off };
	}
	r = c->gap_spilled ? 0 : put(c, &it);
	c->gap.size = 0;
	c->gap_spilled = false;
	c->gap_start = c->in_pos;
	return r;
}

int ca_make_cache_begin(struct ca_make_cache *c, struct ca_maker *m)
{
	c->m = m;
	c->rbuf = malloc(READ_SIZE);
	c->q = malloc(QUEUE_MAX * sizeof(*c->q));
	c->run_sizes = malloc(RUN_MAX * sizeof(*c->run_sizes));
	if (!c->rbuf || !c->q || !c->run_sizes)
		return -ENOMEM;
	int r = ca_chunker_init(&c->ch, c->key.chunk_min, c->key.chunk_avg, c->key.chunk_max);
	if (r == 0)
		r = ca_digest_new(CA_DIGEST_SHA256, &c->gd);
	return r;
}

int ca_make_cache_write(void *userdata, const void *data, size_t n)
{
	struct ca_make_cache *c = userdata;
	const uint8_t *p = data;
	int r = 0;
	while (n > 0 && r == 0) {
		size_t k = n;
		if (c->pending_file > 0) { /* a file the encoder reads: real bytes */
			if (k > c->pending_file)
				k = (size_t)c->pending_file;
			struct item it = { .mem = p, .len = k };
			c->pending_file -= k;
			c->in_pos += k;
			c->file_read += k;
			r = put(c, &it);
			if (r == 0 && c->pending_file == 0)
				c->gap_start = c->in_pos;
		} else {
			r = ca_digest_update(c->gd, p, k);
			c->in_pos += k;
			if (r == 0 && c->gap_spilled) {
				struct item it = { .mem = p, .len = k };
				r = put(c, &it);
			} else if (r == 0) {
				r = ca_buf_append(&c->gap, p, k, SIZE_MAX);
				if (r == 0 && c->gap.size > GAP_MAX) {
					/* too long to keep: its bytes go as they are */
					struct item it = { .mem = c->gap.data, .len = c->gap.size };
					c->gap_spilled = true;
					r = put(c, &it);
					c->gap.size = 0;
				}
			}
		}
		p += k;
		n -= k;
	}
	return r;
}

int ca_make_cache_payload(void *userdata, int fd, const struct stat *st)
{
	struct ca_make_cache *c = userdata;
	uint64_t size = (uint64_t)st->st_size, mt = ts_ns(&st->st_mtim), ct = ts_ns(&st->st_ctim);
	int r = end_gap(c);
	if (r < 0)
		return r;
	struct rec *rc = new_rec(c);
	if (rc) {
		*rc = (struct rec){ .kind = REC_FILE, .off = c->in_pos, .len = size, .dev = (uint64_t)st->st_dev,
			            .ino = (uint64_t)st->st_ino, .mtime = mt, .ctime = ct };
		if (mt + RACY_NS >= c->started_ns || ct + RACY_NS >= c->started_ns)
			rc->flags |= REC_RACY;
	}
	size_t old = SIZE_MAX;
	if (c->have_old) {
		struct rec key = { .dev = (uint64_t)st->st_dev, .ino = (uint64_t)st->st_ino };
		size_t lo = 0, hi = c->n_by_ino;
		/* the expected one first: a hard link's other names keep their place */
		if (c->next_old < c->n_recs && c->recs[c->next_old].kind == REC_FILE &&
		    !(c->recs[c->next_old].flags & REC_RACY) && c->recs[c->next_old].dev == key.dev &&
		    c->recs[c->next_old].ino == key.ino)
			lo = hi = SIZE_MAX, old = c->next_old;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const struct rec *x = &c->recs[c->by_ino[mid]];
			if (x->dev < key.dev || (x->dev == key.dev && x->ino < key.ino))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (old == SIZE_MAX && lo < c->n_by_ino && c->recs[c->by_ino[lo]].dev == key.dev &&
		    c->recs[c->by_ino[lo]].ino == key.ino)
			old = c->by_ino[lo];
		if (old != SIZE_MAX &&
		    (c->recs[old].len != size || c->recs[old].mtime != mt || c->recs[old].ctime != ct))
			old = SIZE_MAX;
	}
	int dfd = old != SIZE_MAX ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
	struct src *s = dfd >= 0 ? malloc(sizeof(*s)) : NULL;
	if (!s) { /* not known (or no fd left): the encoder reads it */
		if (dfd >= 0)
			close(dfd);
		check_identical(c, old, false, c->in_pos);
		c->pending_file = size;
		return 0;
	}
	s->refs = 1;
	s->fd = dfd;
	check_identical(c, old, true, c->in_pos);
	c->next_old = old + 1;
	struct item it = { .src = s, .foff = 0, .len = size, .mapped = true,
		           .delta = (int64_t)c->in_pos - (int64_t)c->recs[old].off };
	c->in_pos += size;
	c->gap_start = c->in_pos;
	r = put(c, &it);
	return r < 0 ? r : 1;
}

void ca_make_cache_fed_directly(struct ca_make_cache *c, uint64_t n)
{
	/* the payload's record said st_size: what was read is what counts */
	if (c->n_nrecs > 0 && c->nrecs[c->n_nrecs - 1].kind == REC_FILE)
		c->nrecs[c->n_nrecs - 1].len = n;
	c->pending_file = 0;
	c->in_pos += n;
	c->file_read += n;
	c->gap_start = c->in_pos;
	c->identical = false;
	(void)end_gap(c); /* empty: nothing goes to the pipeline */
}

int ca_make_cache_end(struct ca_make_cache *c)
{
	int r = end_gap(c);
	if (r == 0 && c->at_cut && c->nq > 0)
		r = spill_queue(c);
	if (r == 0)
		r = pump(c);
	if (r == 0)
		r = flush_run(c);
	return r;
}

void ca_make_cache_digest(struct ca_make_cache *c, const struct ca_make_stats *st, uint8_t digest[CA_CHUNK_ID_SIZE],
                          bool *digest_known, uint64_t *file_bytes_read)
{
	*file_bytes_read = c->file_read;
	*digest_known = !st->digest_partial;
	if (st->digest_partial && c->have_old && c->old_digest_known && c->identical && c->n_nrecs == c->n_recs &&
	    c->in_pos == c->old_total) {
		memcpy(digest, c->old_digest, CA_CHUNK_ID_SIZE);
		*digest_known = true;
	}
}

/* name in the directory dfd, replaced whole (a temporary file renamed) */
static int write_at(int dfd, const char *name, const void *p, size_t n)
{
	char rnd[17], *tmp = NULL;
	int r = ca_random_hex16(rnd);
	if (r == 0 && asprintf(&tmp, ".#%s%s", name, rnd) < 0) {
		tmp = NULL;
		r = -ENOMEM;
	}
	if (r < 0)
		return r;
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		free(tmp);
		return r;
	}
	r = ca_write_all(fd, p, n);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dfd, tmp, 0);
	free(tmp);
	return r;
}

/* At most CA_MAKE_CACHE_MAX_ENTRIES records: the oldest others go. */
static void prune(struct ca_make_cache *c, int dfd)
{
	for (;;) {
		int fd = dup(dfd);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *de;
		char oldest[NAME_MAX + 1] = "";
		uint64_t oldest_ns = UINT64_MAX;
		size_t n = 0;
		if (!d) {
			if (fd >= 0)
				close(fd);
			return;
		}
		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);
			struct stat st;
			if (l < 7 || strcmp(de->d_name + l - 7, ".camake") || !strcmp(de->d_name, c->name) ||
			    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			n++;
			if (ts_ns(&st.st_mtim) < oldest_ns) {
				oldest_ns = ts_ns(&st.st_mtim);
				snprintf(oldest, sizeof(oldest), "%s", de->d_name);
			}
		}
		closedir(d);
		if (n + 1 <= CA_MAKE_CACHE_MAX_ENTRIES || !*oldest)
			return;
		if (unlinkat(dfd, oldest, 0) < 0)
			return;
	}
}

void ca_make_cache_save(struct ca_make_cache *c, const char *index_path, const uint8_t digest[CA_CHUNK_ID_SIZE],
                        bool digest_known)
{
	struct ca_index *idx = NULL;
	uint8_t *p = NULL;
	struct ca_digest *d = NULL;
	if (!c->usable)
		return;
	int r = c->too_big ? -EFBIG : ca_index_open(index_path, &idx);
	size_t nc = idx ? ca_index_n_chunks(idx) : 0;
	uint64_t size = HEADER_SIZE + (uint64_t)nc * CHUNK_REC + (uint64_t)c->n_nrecs * ITEM_REC + TRAILER;
	if (r == 0 && size > CA_MAKE_CACHE_MAX_FILE)
		r = -EFBIG;
	if (r == 0 && !(p = calloc(1, (size_t)size)))
		r = -ENOMEM;
	if (r == 0) {
		header_fill(c, p, c->in_pos, digest, digest_known, nc, c->n_nrecs);
		uint8_t *q = p + HEADER_SIZE;
		for (size_t i = 0; i < nc; i++, q += CHUNK_REC) {
			uint64_t s, e;
			const uint8_t *id;
			ca_index_chunk(idx, i, &s, &e, &id);
			le64w(q, e);
			memcpy(q + 8, id, CA_CHUNK_ID_SIZE);
		}
		for (size_t i = 0; i < c->n_nrecs; i++, q += ITEM_REC) {
			const struct rec *rc = &c->nrecs[i];
			q[0] = rc->kind;
			q[1] = rc->flags;
			le64w(q + 8, rc->off);
			le64w(q + 16, rc->len);
			if (rc->kind == REC_GAP) {
				memcpy(q + 24, rc->digest, CA_DIGEST_SIZE);
			} else {
				le64w(q + 24, rc->dev);
				le64w(q + 32, rc->ino);
				le64w(q + 40, rc->mtime);
				le64w(q + 48, rc->ctime);
			}
		}
		r = ca_digest_new(CA_DIGEST_SHA256, &d);
		if (r == 0)
			r = ca_digest_once(d, p, (size_t)size - TRAILER, q);
	}
	if (r == 0)
		r = write_at(c->dfd, c->name, p, (size_t)size);
	if (r == 0)
		prune(c, c->dfd);
	if (r < 0)
		ca_log_warning_errno(r, "make cache %s: not updated", c->dir);
	ca_digest_free(d);
	ca_index_free(idx);
	free(p);
}
