/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* remote.c - HTTP chunk stores (a chunksrc backend) and whole-file downloads. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/clock.h"
#include "base/condwait.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/location.h"
#include "net/oci.h"
#include "net/remote.h"
#include "base/rng.h"
#include "base/workq.h"
#include "net/storeconf.h"
#include "store/crypt.h"
#include "store/store.h"

#define PF_BUCKETS 256
#define PF_MAX_ENTRIES 1024              /* downloads tracked at once (running or parked) */
#define PF_MAX_PARKED_BYTES (64u << 20)  /* finished prefetches waiting for their fetch */
#define PF_MAX_AGE_MS 60000              /* a parked download nobody wanted for this long is dropped */
#define OCI_FETCHERS 16                  /* a registry's chunks in flight (two requests each) */
/* A chunk whose download failed (after its retries) fails at once for this
 * long: readers of a chunk a failing server cannot give do not each cost
 * another round of requests. "Missing" (404) is not remembered: it costs
 * one request and the next store may have it. */
#define FAIL_MEMORY_MS 5000
/* A store that is failing (remote.h, outages): the first probe this long
 * after the failure, each next one twice as late, at most PROBE_MAX_MS,
 * each drawn at random from the upper half of its window; a fetch that
 * finds nobody waiting probes at once if the last probe is PROBE_GAP_MS
 * old. Waits look at their way out (abort, interrupt) every WAIT_SLICE_MS. */
#define PROBE_FIRST_MS 500
#define PROBE_MAX_MS 15000
#define PROBE_GAP_MS 1000
#define SAY_EVERY_MS 30000
#define WAIT_SLICE_MS 100

/* One download of one chunk, shared by the prefetch that started it and
 * every fetch that joins it. */
struct pf {
	uint8_t id[CA_CHUNK_ID_SIZE];
	struct ca_remote_store *rs;
	struct pf *hnext;
	struct pf *older, *newer; /* the parked list, while done && !waiters */
	unsigned waiters;         /* fetch() calls blocked on it */
	bool done, parked, prefetched;
	bool probe;               /* started as the store's probe (outages) */
	bool urgent;              /* a reader waits for it: queued ahead of prefetches */
	int r;
	struct ca_buf body;
	uint64_t done_ms;
};

struct ca_remote_store {
	char *base;
	char *shown; /* base, redacted: what messages say */
	struct ca_http *http;
	size_t file_max; /* a .cacnk download's cap: set_file_max, else CA_REMOTE_CHUNK_FILE_MAX */
	char *query;     /* "?..." after each chunk URL (store-query = yes), or NULL */
	struct ca_oci *oci; /* an oci+ store: chunks are a registry's artifacts (oci.h) */
	struct ca_workq *oci_q; /* its downloads: manifest then blob, each a blocking pair */
	struct ca_crypt *crypt; /* chunks sealed at rest (crypt.h), or NULL */
	int miss_said;          /* an encrypted store's first miss was logged (atomic) */

	pthread_mutex_t lock; /* guards everything below */
	pthread_cond_t cond;  /* broadcast when a download settles */
	struct pf *buckets[PF_BUCKETS];
	unsigned n_entries;
	size_t parked_bytes;
	struct pf *oldest, *newest;
	uint64_t prefetches, prefetch_hits, prefetch_drops, prefetch_skips, failed_fast;

	/* outages (remote.h): the store's state, under lock */
	enum ca_remote_outage outage;
	unsigned deadline_s;   /* a soft wait's bound: the engine's request deadline */
	bool aborted;          /* ca_remote_store_abort: no more waiting */
	bool failing, probing;
	int last_err;          /* what the last failed request ended in */
	unsigned failures;     /* failed probes since the store went failing */
	uint64_t since_ms;     /* monotonic, when it went failing */
	time_t since_wall;
	uint64_t next_probe_ms, last_probe_ms, said_ms;
	unsigned waiting;      /* fetches waiting for the store to come back */
	uint64_t failed_attempts; /* requests that ended in an outage error, ever */
	uint64_t rng;
	uint64_t probes, outage_waits;
};

static unsigned bucket_of(const uint8_t *id)
{
	return id[0]; /* ids are digests: one byte is uniform enough */
}

static bool remembered(int r)
{
	return r < 0 && r != -ENOENT && r != -ECANCELED && r != -ENOMEM;
}

/* A request that failed because the server is away (or broken), as
 * opposed to an answer about this chunk: the store is then failing. */
static bool outage_error(int r)
{
	return r == -ECONNREFUSED || r == -ETIMEDOUT || r == -ECONNRESET || r == -EHOSTUNREACH ||
	       r == -ENETUNREACH || r == -EIO;
}

/* When the next probe may start: exponential, jittered (the upper half of
 * the window, so that stores and mounts failing together drift apart). */
static void schedule_probe(struct ca_remote_store *rs, uint64_t now)
{
	uint64_t w = PROBE_FIRST_MS;
	for (unsigned i = 1; i < rs->failures && w < PROBE_MAX_MS; i++)
		w *= 2;
	if (w > PROBE_MAX_MS)
		w = PROBE_MAX_MS;
	rs->next_probe_ms = now + w / 2 + ca_rng_next(&rs->rng) % (w / 2 + 1);
}

/* How a download ended, for the store's state (lock held). */
static void health_update(struct ca_remote_store *rs, struct pf *e, int r)
{
	uint64_t now = ca_now_ms();
	char errbuf[64];
	if (e->probe) {
		rs->probing = false;
		rs->last_probe_ms = now;
	}
	if (outage_error(r)) {
		rs->last_err = r;
		rs->failed_attempts++;
		if (!rs->failing) {
			rs->failing = true;
			rs->failures = 1;
			rs->since_ms = now;
			rs->since_wall = time(NULL);
			rs->said_ms = now;
			rs->last_probe_ms = now; /* the request that failed was the first probe */
			schedule_probe(rs, now);
			if (rs->outage != CA_REMOTE_OUTAGE_FAIL)
				ca_log_warning("%s: not answering (%s): reads wait for it%s", rs->shown,
				               ca_strerror(-r, errbuf, sizeof(errbuf)),
				               rs->outage == CA_REMOTE_OUTAGE_HARD ? " (hard mount: as long as it takes)" :
				                                                     "");
		} else if (e->probe) {
			rs->failures++;
			schedule_probe(rs, now);
		}
	} else if (rs->failing && (r == 0 || r == -ENOENT)) {
		/* the server answered: it is back */
		rs->failing = false;
		if (rs->outage != CA_REMOTE_OUTAGE_FAIL)
			ca_log_warning("%s: answering again after %llu s", rs->shown,
			               (unsigned long long)((now - rs->since_ms) / 1000));
	}
}

static struct pf *lookup(struct ca_remote_store *rs, const uint8_t *id)
{
	for (struct pf *e = rs->buckets[bucket_of(id)]; e; e = e->hnext)
		if (!memcmp(e->id, id, CA_CHUNK_ID_SIZE))
			return e;
	return NULL;
}

static void unpark(struct ca_remote_store *rs, struct pf *e)
{
	if (!e->parked)
		return;
	if (e->older)
		e->older->newer = e->newer;
	else
		rs->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		rs->newest = e->older;
	e->older = e->newer = NULL;
	e->parked = false;
	rs->parked_bytes -= e->body.size;
}

/* Take e out of the table and free it. */
static void drop(struct ca_remote_store *rs, struct pf *e)
{
	struct pf **pp = &rs->buckets[bucket_of(e->id)];
	unpark(rs, e);
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	rs->n_entries--;
	ca_buf_release(&e->body);
	free(e);
}

static bool expired(const struct pf *e, uint64_t now)
{
	return e->done_ms + (e->waiters == 0 && remembered(e->r) ? FAIL_MEMORY_MS : PF_MAX_AGE_MS) < now;
}

/* Parked downloads nobody came for: oldest first, past the byte bound,
 * the entry bound or the age. */
static void trim(struct ca_remote_store *rs)
{
	uint64_t now = ca_now_ms();
	while (rs->oldest && (rs->parked_bytes > PF_MAX_PARKED_BYTES || rs->n_entries > PF_MAX_ENTRIES ||
	                      expired(rs->oldest, now))) {
		rs->prefetch_drops += rs->oldest->prefetched; /* nobody claimed it */
		drop(rs, rs->oldest);
	}
}

/* Into the parked list, newest end (with the lock held). */
static void park(struct ca_remote_store *rs, struct pf *e)
{
	e->parked = true;
	e->older = rs->newest;
	if (rs->newest)
		rs->newest->newer = e;
	else
		rs->oldest = e;
	rs->newest = e;
	rs->parked_bytes += e->body.size;
	trim(rs);
}

static struct pf *entry_new(struct ca_remote_store *rs, const uint8_t *id)
{
	struct pf *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	memcpy(e->id, id, CA_CHUNK_ID_SIZE);
	e->rs = rs;
	unsigned b = bucket_of(id);
	e->hnext = rs->buckets[b];
	rs->buckets[b] = e;
	rs->n_entries++;
	return e;
}

/* A download ended (or could not start): hand it to its waiters, or park it. */
static void settle(struct ca_remote_store *rs, struct pf *e, int r, struct ca_buf *body)
{
	pthread_mutex_lock(&rs->lock);
	e->r = r;
	e->done = true;
	e->done_ms = ca_now_ms();
	if (r != -ECANCELED)
		health_update(rs, e, r);
	if (r == 0 && body) {
		struct ca_buf t = e->body;
		e->body = *body;
		*body = t;
	}
	if (e->waiters == 0) {
		/* failures are parked too: the fetch that follows gets the answer
		 * (404, or the error the retries ended in) without asking again;
		 * a failure is kept only FAIL_MEMORY_MS, so a server that comes
		 * back is asked again soon */
		park(rs, e);
	}
	pthread_cond_broadcast(&rs->cond);
	pthread_mutex_unlock(&rs->lock);
}

static void on_done(void *userdata, int r, struct ca_buf *body)
{
	struct pf *e = userdata;
	settle(e->rs, e, r, body);
}

static void chunk_url(const struct ca_remote_store *rs, const uint8_t *id, char **ret)
{
	char rel[CA_CRYPT_CHUNK_REL_MAX + 1];
	ca_crypt_chunk_rel(rs->crypt, id, rel);
	if (asprintf(ret, "%s/%s%s", rs->base, rel, rs->query ? rs->query : "") < 0)
		*ret = NULL;
}

/* A registry's chunk (oci.h): two dependent requests, so a download is
 * a job of the store's fetcher threads rather than one engine transfer;
 * it settles like one. */
static int oci_run(void *qdata, void *wdata, void *job)
{
	struct ca_remote_store *rs = qdata;
	struct pf *e = job;
	struct ca_buf body = CA_BUF_INIT;
	(void)wdata;
	int r = ca_oci_get_chunk(rs->oci, e->id, rs->file_max, &body);
	settle(rs, e, r, &body);
	ca_buf_release(&body);
	return 0;
}

static void oci_done(void *qdata, void *job, int r)
{
	if (r < 0) /* cancelled before it ran */
		settle(qdata, job, r, NULL);
}

static const struct ca_workq_ops oci_ops = { .run = oci_run, .done = oci_done };

static int start_download(struct ca_remote_store *rs, struct pf *e)
{
	char *url;
	if (rs->oci) {
		int r = ca_workq_submit(rs->oci_q, e, 1);
		if (r < 0)
			settle(rs, e, r, NULL);
		return r;
	}
	chunk_url(rs, e->id, &url);
	/* a probe is one attempt: the back-off between probes is the store's */
	unsigned flags = (e->probe ? CA_HTTP_NO_RETRY : 0) | (e->urgent ? CA_HTTP_URGENT : 0);
	int r = url ? ca_http_submit_flags(rs->http, url, rs->file_max, flags, on_done, e) : -ENOMEM;
	free(url);
	if (r < 0)
		settle(rs, e, r, NULL);
	return r;
}

/* A fetch (lock held) joins e: when it is a reader's and e a download
 * still queued behind others (a prefetch), e goes to the front. The
 * engine only compares the pointer: e stays ours while we wait on it. */
static void join_hurry(struct ca_remote_store *rs, struct pf *e)
{
	if (!e->done && !e->urgent && !rs->oci && ca_chunksrc_fetch_is_demand()) {
		e->urgent = true;
		(void)ca_http_hurry(rs->http, e);
	}
}

/* A finished download's answer for one waiter (lock held, the waiter
 * already counted out): the last one takes the body itself, the others
 * a copy. */
static int take_body(struct ca_remote_store *rs, struct pf *e, struct ca_buf *out)
{
	int r = e->r;

	if (r == 0) {
		out->size = 0;
		if (e->waiters == 0) {
			struct ca_buf t = *out;
			*out = e->body;
			e->body = t;
		} else {
			r = ca_buf_append(out, e->body.data, e->body.size, rs->file_max);
		}
	}
	return r;
}

/* The old way (CA_REMOTE_OUTAGE_FAIL, commands): a failed download is the
 * answer, and is remembered FAIL_MEMORY_MS for the fetches that follow. */
static int fetch_fail_fast(struct ca_remote_store *rs, const uint8_t *id, struct ca_buf *out)
{
	struct pf *e;
	int r;

	pthread_mutex_lock(&rs->lock);
	trim(rs);
	e = lookup(rs, id);
	if (e && e->done && e->waiters == 0 && expired(e, ca_now_ms())) {
		drop(rs, e); /* a remembered failure behind a younger parked entry */
		e = NULL;
	}
	if (e) {
		if (e->done && remembered(e->r))
			rs->failed_fast++;
		else if (e->prefetched && e->waiters == 0)
			rs->prefetch_hits++;
		e->prefetched = false; /* claimed */
		unpark(rs, e);
		e->waiters++;
		join_hurry(rs, e);
	} else {
		e = entry_new(rs, id);
		if (!e) {
			pthread_mutex_unlock(&rs->lock);
			return -ENOMEM;
		}
		e->waiters = 1;
		e->urgent = ca_chunksrc_fetch_is_demand();
		pthread_mutex_unlock(&rs->lock);
		(void)start_download(rs, e); /* a failure settles e */
		pthread_mutex_lock(&rs->lock);
	}
	while (!e->done)
		pthread_cond_wait(&rs->cond, &rs->lock);
	e->waiters--;
	r = take_body(rs, e, out);
	if (e->waiters == 0) {
		if (remembered(r))
			park(rs, e); /* the next readers fail at once, for FAIL_MEMORY_MS */
		else
			drop(rs, e);
	}
	pthread_mutex_unlock(&rs->lock);
	return r;
}

/* One fetch's wait (remote.h, outages): when it started, how many
 * requests had failed by then, and its soft bound. */
struct wait {
	uint64_t start_ms, seen_failed;
	bool hard;
	bool began_failing; /* the store was failing when the fetch began */
};

/* Why a wait must end now, if it must (lock held): the store was
 * aborted, the caller's hook says the request was interrupted, or (soft)
 * a request that ended after the fetch began failed too, and either the
 * store was failing already when the fetch began (it waited for the next
 * attempt) or the deadline has passed since it began (then the last
 * error: what a soft read ends in). */
static int wait_over(struct ca_remote_store *rs, const struct wait *w)
{
	if (rs->aborted)
		return -ECANCELED;
	if (ca_chunksrc_wait_cancelled())
		return -EINTR;
	if (!w->hard && rs->failing && rs->failed_attempts > w->seen_failed &&
	    (w->began_failing || ca_now_ms() >= w->start_ms + (uint64_t)rs->deadline_s * 1000))
		return rs->last_err;
	return 0;
}

/* Wait until the caller may send a request (lock held): at once while the
 * store is up; while it is failing, until the caller is the one probe or
 * another fetch's probe brought the store back. The caller probes when no
 * probe runs and: the back-off's time has come; or the last probe is
 * PROBE_GAP_MS old and nobody else waits, or the outage is older than
 * the deadline (a late reader costs one probe, not a back-off window);
 * or, soft, it waited the deadline and no request ended since it began.
 * *ret_probe says whether the caller is the probe. */
static int wait_turn(struct ca_remote_store *rs, const struct wait *w, bool *ret_probe)
{
	int r = 0;
	bool counted = false;
	uint64_t d = (uint64_t)rs->deadline_s * 1000;
	*ret_probe = false;
	while (rs->failing && !(r = wait_over(rs, w))) {
		uint64_t now = ca_now_ms();
		bool late = now >= rs->since_ms + d, unanswered = rs->failed_attempts == w->seen_failed;
		bool alone = rs->waiting == (counted ? 1u : 0u);
		if (!rs->probing && (now >= rs->next_probe_ms ||
		                     ((alone || late) && now >= rs->last_probe_ms + PROBE_GAP_MS) ||
		                     (!w->hard && unanswered && now >= w->start_ms + d))) {
			rs->probing = true;
			rs->probes++;
			*ret_probe = true;
			break;
		}
		if (!counted) {
			rs->waiting++;
			rs->outage_waits++;
			counted = true;
		}
		if (now >= rs->said_ms + SAY_EVERY_MS) {
			rs->said_ms = now;
			ca_log_warning("%s: still not answering after %llu s; %u read(s) waiting%s", rs->shown,
			               (unsigned long long)((now - rs->since_ms) / 1000), rs->waiting,
			               w->hard ? " (hard mount)" : "");
		}
		ca_cond_wait_ms(&rs->cond, &rs->lock, WAIT_SLICE_MS);
	}
	if (counted)
		rs->waiting--;
	return r;
}

/* The outage way (soft and hard mounts, remote.h). */
static int fetch_waiting(struct ca_remote_store *rs, const uint8_t *id, struct ca_buf *out)
{
	struct pf *e = NULL;
	bool probe;
	int r;

	pthread_mutex_lock(&rs->lock);
	struct wait w = { ca_now_ms(), rs->failed_attempts, rs->outage == CA_REMOTE_OUTAGE_HARD, rs->failing };
	for (;;) {
		r = wait_turn(rs, &w, &probe);
		if (r < 0)
			break;
		trim(rs);
		e = lookup(rs, id);
		if (e && e->done && e->r != 0 && e->waiters == 0) {
			drop(rs, e); /* a failure is never the answer to a later fetch */
			e = NULL;
		}
		if (e) {
			if (e->prefetched && e->waiters == 0)
				rs->prefetch_hits++;
			e->prefetched = false;
			unpark(rs, e);
			e->waiters++;
			join_hurry(rs, e);
			if (probe && !e->done) {
				/* a download of this chunk is on its way: it is the probe */
				e->probe = true;
			} else if (probe) {
				rs->probing = false; /* its answer is there already */
			}
		} else {
			e = entry_new(rs, id);
			if (!e) {
				if (probe)
					rs->probing = false;
				r = -ENOMEM;
				break;
			}
			e->waiters = 1;
			e->probe = probe;
			e->urgent = ca_chunksrc_fetch_is_demand();
			pthread_mutex_unlock(&rs->lock);
			(void)start_download(rs, e); /* a failure settles e */
			pthread_mutex_lock(&rs->lock);
		}
		while (!e->done && !(r = wait_over(rs, &w)))
			ca_cond_wait_ms(&rs->cond, &rs->lock, WAIT_SLICE_MS);
		e->waiters--;
		if (!e->done) {
			/* given up: the download goes on, and parks (settle) */
			e = NULL;
			break;
		}
		r = take_body(rs, e, out);
		if (e->waiters == 0)
			drop(rs, e);
		e = NULL;
		if (!outage_error(r))
			break;
		/* the store is failing now (settle said so): wait for its next probe */
	}
	pthread_mutex_unlock(&rs->lock);
	return r;
}

static int remote_fetch(void *be, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out, bool *ret_compressed)
{
	struct ca_remote_store *rs = be;
	*ret_compressed = true; /* casync's HTTP stores only serve .cacnk */
	int r = rs->outage == CA_REMOTE_OUTAGE_FAIL ? fetch_fail_fast(rs, id, out) : fetch_waiting(rs, id, out);
	if (!rs->crypt)
		return r;
	if (r == 0) {
		struct ca_buf plain = CA_BUF_INIT;
		r = ca_crypt_open(rs->crypt, out->data, out->size, &plain); /* -EBADMSG: corrupt */
		if (r == 0) {
			ca_buf_release(out);
			*out = plain;
		} else {
			ca_buf_release(&plain);
		}
	} else if (r == -ENOENT && !__atomic_exchange_n(&rs->miss_said, 1, __ATOMIC_RELAXED)) {
		/* a server cannot be asked which keys it holds chunks under:
		 * say which one we asked for, once, since a wrong key makes
		 * every chunk a miss */
		char hex[2 * CA_CHUNK_ID_SIZE + 1];
		ca_id_to_hex(id, hex);
		ca_log_warning("store %s: no chunk %s under key id %s (%s)", rs->shown, hex, ca_crypt_key_id(rs->crypt),
		               ca_crypt_alg_name(ca_crypt_get_alg(rs->crypt)));
	}
	return r;
}

static void remote_prefetch(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	struct ca_remote_store *rs = be;
	struct pf *e = NULL;

	pthread_mutex_lock(&rs->lock);
	trim(rs);
	/* a failing store is asked by its probe only: hints wait for it */
	if (lookup(rs, id) || (rs->failing && rs->outage != CA_REMOTE_OUTAGE_FAIL)) {
		pthread_mutex_unlock(&rs->lock);
		return;
	}
	if (rs->n_entries >= PF_MAX_ENTRIES) {
		rs->prefetch_skips++;
		pthread_mutex_unlock(&rs->lock);
		return;
	}
	e = entry_new(rs, id);
	if (e) {
		e->prefetched = true;
		e->urgent = ca_chunksrc_fetch_is_demand(); /* ca_chunksrc_hurry: a reader comes next */
		rs->prefetches++;
	}
	pthread_mutex_unlock(&rs->lock);
	if (e)
		(void)start_download(rs, e);
}

static void remote_hurry(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	struct ca_remote_store *rs = be;
	pthread_mutex_lock(&rs->lock);
	struct pf *e = lookup(rs, id);
	if (e && !e->done && !e->urgent && !rs->oci) {
		e->urgent = true;
		(void)ca_http_hurry(rs->http, e);
	}
	pthread_mutex_unlock(&rs->lock);
}

static void remote_free(void *be)
{
	ca_remote_store_free(be);
}

static void remote_set_file_max(void *be, size_t max)
{
	struct ca_remote_store *rs = be;
	rs->file_max = max < CA_REMOTE_CHUNK_FILE_MAX ? max : CA_REMOTE_CHUNK_FILE_MAX;
	if (rs->crypt) /* the file on the server is sealed: nonce and tag more */
		rs->file_max += ca_crypt_overhead(rs->crypt);
}

const struct ca_chunk_backend_ops ca_remote_store_ops = {
	.kind = "http",
	.fetch = remote_fetch,
	.prefetch = remote_prefetch,
	.hurry = remote_hurry,
	.set_file_max = remote_set_file_max,
	.free = remote_free,
};

int ca_remote_store_open(const struct ca_endpoint *e, struct ca_remote_store **ret)
{
	struct ca_remote_store *rs;
	const char *url = e->fetch_url; /* an s3+ URL's bucket and prefix, as http(s) */
	bool logged = false; /* by the settings' and the registry's opens (they say which store) */
	int r;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return ca_log_error_errno(ENOMEM, "remote store");
	pthread_mutex_init(&rs->lock, NULL);
	pthread_cond_init(&rs->cond, NULL);
	/* as casync: parameters are not part of the chunk URLs */
	size_t n = strcspn(url, "?;#");
	while (n > 0 && url[n - 1] == '/')
		n--;
	rs->file_max = CA_REMOTE_CHUNK_FILE_MAX;
	r = ca_storeconf_crypt_of(e->settings, e->url, &rs->crypt); /* logs */
	logged = r < 0;
	if (r < 0)
		goto fail;
	if (rs->crypt)
		rs->file_max += ca_crypt_overhead(rs->crypt);
	rs->base = strndup(url, n);
	rs->shown = rs->base ? ca_location_redact(rs->base) : NULL;
	if (!rs->base || !rs->shown) {
		r = -ENOMEM;
		goto fail;
	}
	if (e->loc.oci) {
		/* the settings' credentials are the registry's (oci_auth.h), never curl's */
		struct ca_http_opts ho = e->http;
		ho.username = ho.password = NULL;
		ho.netrc = -1;
		r = ca_http_new(&ho, &rs->http);
		if (r == 0) {
			r = ca_oci_open(e, false, rs->http, &rs->oci); /* logs, but for ENOMEM */
			logged = r < 0 && r != -ENOMEM;
		}
		struct ca_workq_opts qo = { .workers = OCI_FETCHERS, .max_jobs = 2 * PF_MAX_ENTRIES };
		if (r == 0)
			r = ca_workq_new(&oci_ops, rs, &qo, &rs->oci_q);
	} else {
		r = ca_http_new(&e->http, &rs->http); /* copies what e's options point to */
	}
	if (r < 0)
		goto fail;
	rs->deadline_s = ca_http_deadline_s(rs->http); /* the store's own settings included */
	rs->rng = ca_rng_seed(rs);
	/* a store whose settings say so: its query goes on (a CDN's token) */
	const char *q = strchr(url, '?');
	if (e->store_query && q && q[1] != '#' && q[1] && !(rs->query = strndup(q, strcspn(q, "#")))) {
		r = -ENOMEM;
		goto fail;
	}
	*ret = rs;
	return 0;
fail:
	if (!logged) {
		char *shown = ca_location_redact(e->url);
		ca_log_error_errno(r, "%s", shown ? shown : "remote store");
		free(shown);
	}
	ca_remote_store_free(rs);
	return r;
}

int ca_remote_store_new(const char *url, const struct ca_http_opts *o, struct ca_remote_store **ret)
{
	struct ca_endpoint e;
	if (ca_location_kind(url) != CA_LOCATION_HTTP) {
		char *shown = ca_location_redact(url);
		ca_log_error("%s: not a remote store's URL", shown ? shown : "remote store");
		free(shown);
		return -EINVAL;
	}
	/* an http(s) URL: the settings' and S3's failures are said there */
	int r = ca_endpoint_init(&e, url, o, NULL);
	if (r == -ENOMEM)
		ca_log_error_errno(r, "remote store");
	if (r == 0)
		r = ca_remote_store_open(&e, ret); /* logs */
	ca_endpoint_clear(&e);
	return r;
}

void ca_remote_store_free(struct ca_remote_store *rs)
{
	if (!rs)
		return;
	if (rs->http && ca_log_get_level() >= CA_LOG_INFO) {
		struct ca_remote_store_stats st;
		ca_remote_store_get_stats(rs, &st);
		if (st.http.requests)
			ca_log_info("%s: %llu requests (%llu retries), %.1f MiB, %llu missing, %llu failed; "
			            "%llu prefetched, %llu dropped unused",
			            rs->base, (unsigned long long)st.http.requests, (unsigned long long)st.http.retries,
			            st.http.bytes / 1048576.0, (unsigned long long)st.http.missing,
			            (unsigned long long)st.http.errors, (unsigned long long)st.prefetches,
			            (unsigned long long)st.prefetch_drops);
	}
	/* first the engine: its cancelled downloads settle into the table */
	if (rs->oci_q) /* queued downloads are dropped, running ones finish and settle */
		ca_workq_cancel(rs->oci_q, -ECANCELED);
	ca_workq_free(rs->oci_q);
	ca_oci_free(rs->oci); /* before the engine it borrows */
	ca_http_free(rs->http);
	for (unsigned i = 0; i < PF_BUCKETS; i++)
		while (rs->buckets[i])
			drop(rs, rs->buckets[i]);
	pthread_cond_destroy(&rs->cond);
	pthread_mutex_destroy(&rs->lock);
	free(rs->base);
	free(rs->shown);
	free(rs->query);
	ca_crypt_unref(rs->crypt);
	free(rs);
}

void ca_remote_store_set_outage(struct ca_remote_store *rs, enum ca_remote_outage mode)
{
	pthread_mutex_lock(&rs->lock);
	rs->outage = mode;
	pthread_mutex_unlock(&rs->lock);
}

void ca_remote_store_abort(struct ca_remote_store *rs)
{
	pthread_mutex_lock(&rs->lock);
	rs->aborted = true;
	pthread_cond_broadcast(&rs->cond);
	pthread_mutex_unlock(&rs->lock);
}

size_t ca_remote_store_state_text(struct ca_remote_store *rs, char *buf, size_t len)
{
	const char *base = rs->shown;
	int n;
	pthread_mutex_lock(&rs->lock);
	if (!rs->failing) {
		n = snprintf(buf, len, "%s up", base);
	} else {
		uint64_t now = ca_now_ms();
		struct tm tm;
		char since[32], errbuf[64];
		gmtime_r(&rs->since_wall, &tm);
		strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &tm);
		const char *err = ca_strerror(-rs->last_err, errbuf, sizeof(errbuf));
		if (rs->probing)
			n = snprintf(buf, len, "%s failing since %s (%llu s: %s), probing now", base, since,
			             (unsigned long long)((now - rs->since_ms) / 1000), err);
		else
			n = snprintf(buf, len, "%s failing since %s (%llu s: %s), next probe in %llu s", base,
			             since, (unsigned long long)((now - rs->since_ms) / 1000), err,
			             (unsigned long long)(rs->next_probe_ms > now ? (rs->next_probe_ms - now + 999) / 1000 : 0));
	}
	pthread_mutex_unlock(&rs->lock);
	return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

const char *ca_remote_store_base(const struct ca_remote_store *rs)
{
	return rs->base;
}

void ca_remote_store_get_stats(struct ca_remote_store *rs, struct ca_remote_store_stats *ret)
{
	ca_http_get_stats(rs->http, &ret->http);
	pthread_mutex_lock(&rs->lock);
	ret->prefetches = rs->prefetches;
	ret->prefetch_hits = rs->prefetch_hits;
	ret->prefetch_drops = rs->prefetch_drops;
	ret->prefetch_skips = rs->prefetch_skips;
	ret->failed_fast = rs->failed_fast;
	ret->probes = rs->probes;
	ret->outage_waits = rs->outage_waits;
	ret->failing = rs->failing;
	pthread_mutex_unlock(&rs->lock);
}

#define PROBE_IN_FLIGHT 256

struct probe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t in_flight;
	int err;
};

struct probe_one {
	struct probe *p;
	uint8_t *present;
};

static void probe_done(void *userdata, int r, struct ca_buf *body)
{
	struct probe_one *o = userdata;
	struct probe *p = o->p;
	*o->present = r == 0;
	pthread_mutex_lock(&p->lock);
	if (r < 0 && r != -ENOENT && !p->err)
		p->err = r;
	p->in_flight--;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	free(o);
}

int ca_remote_store_probe(struct ca_remote_store *rs, const uint8_t *const *ids, size_t n, uint8_t *ret_present)
{
	struct probe p = { .err = 0 };
	int r = 0;
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	for (size_t i = 0; rs->oci && i < n && r == 0; i++) {
		r = ca_oci_has_chunk(rs->oci, ids[i]);
		ret_present[i] = r == 1;
		r = r < 0 ? r : 0;
	}
	for (size_t i = 0; !rs->oci && i < n && r == 0; i++) {
		struct probe_one *o = malloc(sizeof(*o));
		char *url;
		ret_present[i] = 0;
		if (!o) {
			r = -ENOMEM;
			break;
		}
		*o = (struct probe_one){ &p, &ret_present[i] };
		/* bounded: an index may list millions of chunks */
		pthread_mutex_lock(&p.lock);
		while (p.in_flight >= PROBE_IN_FLIGHT && !p.err)
			pthread_cond_wait(&p.cond, &p.lock);
		r = p.err;
		if (r == 0)
			p.in_flight++;
		pthread_mutex_unlock(&p.lock);
		if (r < 0) {
			free(o);
			break;
		}
		chunk_url(rs, ids[i], &url);
		r = url ? ca_http_submit_flags(rs->http, url, 0, CA_HTTP_HEAD, probe_done, o) : -ENOMEM;
		free(url);
		if (r < 0) {
			free(o);
			pthread_mutex_lock(&p.lock);
			p.in_flight--;
			pthread_mutex_unlock(&p.lock);
		}
	}
	pthread_mutex_lock(&p.lock);
	while (p.in_flight > 0)
		pthread_cond_wait(&p.cond, &p.lock);
	if (r == 0)
		r = p.err;
	pthread_mutex_unlock(&p.lock);
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	return r;
}

int ca_remote_get_file(const char *url, size_t cap, const struct ca_http_opts *o, struct ca_buf *out)
{
	bool not_modified;
	char validator[CA_HTTP_VALIDATOR_MAX];
	return ca_remote_get_file_if_changed(url, cap, o, NULL, out, &not_modified, validator);
}

int ca_remote_fetch(const struct ca_endpoint *e, size_t cap, const char *validator, struct ca_buf *out,
                    bool *ret_not_modified, char *ret_validator)
{
	struct ca_http *h = NULL;
	*ret_not_modified = false;
	ret_validator[0] = 0;
	if (e->loc.oci)
		return ca_oci_fetch_file(e, cap, out); /* no versions: fetched whole each time */
	int r = ca_http_new(&e->http, &h);
	if (r == 0)
		r = ca_http_get_if_changed(h, e->fetch_url, cap, validator, out, ret_not_modified, ret_validator);
	ca_http_free(h);
	return r;
}

int ca_remote_get_file_if_changed(const char *url, size_t cap, const struct ca_http_opts *o, const char *validator,
                                  struct ca_buf *out, bool *ret_not_modified, char *ret_validator)
{
	struct ca_endpoint e;
	*ret_not_modified = false;
	ret_validator[0] = 0;
	int r = ca_endpoint_init(&e, url, o, NULL);
	if (r == 0)
		r = ca_remote_fetch(&e, cap, validator, out, ret_not_modified, ret_validator);
	ca_endpoint_clear(&e);
	return r;
}
