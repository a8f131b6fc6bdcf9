/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-remote - the HTTP engine and the remote chunk backend against a real
 * server (run by tests/shell/http-backend.sh, which starts nginx):
 *
 *   test-remote BASE_URL ID...
 *
 * BASE_URL serves s.castr/ (a store holding the IDs given), slow/ (the
 * same, at 20 KB/s), e503/ (always 503) and f.bin (300000 bytes).
 * Checks: fetch returns the stored bytes, which decode and verify; prefetch
 * then fetch is one GET; concurrent fetches of one id share one GET;
 * missing is -ENOENT (a failed prefetch answers the fetch too); 5xx is
 * retried the configured number of times; the body cap; HEAD probes; the
 * prefetch table's bound; freeing with transfers in flight returns quickly.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chunk/compress.h"
#include "base/digest.h"
#include "net/http.h"
#include "net/remote.h"
#include "image/source.h"
#include "tap.h"

static int hex_to_id(const char *s, uint8_t id[CA_CHUNK_ID_SIZE])
{
	if (strlen(s) != 2 * CA_CHUNK_ID_SIZE)
		return -EINVAL;
	for (unsigned i = 0; i < CA_CHUNK_ID_SIZE; i++)
		if (sscanf(s + 2 * i, "%2hhx", &id[i]) != 1)
			return -EINVAL;
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t attempts(struct ca_remote_store *rs)
{
	struct ca_remote_store_stats st;
	ca_remote_store_get_stats(rs, &st);
	return st.http.attempts;
}

/* fetch id from rs and check the bytes are the chunk */
static int fetch_verified(struct ca_remote_store *rs, struct ca_codec *codec, const uint8_t *id)
{
	struct ca_buf raw = CA_BUF_INIT, out = CA_BUF_INIT;
	bool compressed = false;
	int r = ca_remote_store_ops.fetch(rs, id, &raw, &compressed);
	if (r == 0 && !compressed)
		r = -EPROTO;
	if (r == 0)
		r = ca_codec_decode_chunk(codec, raw.data, raw.size, id, UINT64_MAX, &out);
	ca_buf_release(&raw);
	ca_buf_release(&out);
	return r;
}

struct racer {
	struct ca_remote_store *rs;
	struct ca_codec *codec;
	const uint8_t *id;
	pthread_barrier_t *barrier;
	int r;
};

static void *race(void *arg)
{
	struct racer *x = arg;
	pthread_barrier_wait(x->barrier);
	x->r = fetch_verified(x->rs, x->codec, x->id);
	ca_codec_free(x->codec);
	return NULL;
}

/* The bounds a hostile server meets (http.h, cafs(1) "Timeouts and
 * retries"), and the environment's knobs for them. */
static void check_defaults(void)
{
	struct ca_http_opts o;
	ca_http_opts_init(&o);
	check_u64(o.connect_timeout_ms, ==, 10000);
	check_u64(o.stall_timeout_s, ==, 15);
	check_u64(o.low_speed_limit, ==, 1024);
	check_u64(o.total_timeout_s, ==, 45);
	check_int(o.retries, ==, 3);
	check_u64(o.retry_delay_ms, ==, 250);
	setenv("CAFS_HTTP_TIMEOUT", "2", 1);
	setenv("CAFS_HTTP_DEADLINE", "7", 1);
	setenv("CAFS_HTTP_LOW_SPEED", "100", 1);
	ca_source_http_opts(&o);
	check_u64(o.connect_timeout_ms, ==, 2000);
	check_u64(o.stall_timeout_s, ==, 2);
	check_u64(o.total_timeout_s, ==, 7);
	check_u64(o.low_speed_limit, ==, 100);
	setenv("CAFS_HTTP_DEADLINE", "0", 1); /* out of range: ignored (with a warning) */
	ca_source_http_opts(&o);
	check_u64(o.total_timeout_s, ==, 45);
	unsetenv("CAFS_HTTP_TIMEOUT");
	unsetenv("CAFS_HTTP_DEADLINE");
	unsetenv("CAFS_HTTP_LOW_SPEED");
}

int main(int argc, char **argv)
{
	check_defaults();
	if (argc < 6) {
		printf("# the rest is run by tests/shell/http-backend.sh (needs a server and 4 ids)\n");
		return tap_done();
	}
	const char *base = argv[1];
	size_t n_ids = (size_t)argc - 2;
	uint8_t(*ids)[CA_CHUNK_ID_SIZE] = calloc(n_ids, CA_CHUNK_ID_SIZE);
	struct ca_codec *codec = NULL;
	struct ca_remote_store *rs = NULL, *slow = NULL;
	char url[4096];
	uint8_t missing[CA_CHUNK_ID_SIZE];
	int r;

	for (size_t i = 0; i < n_ids; i++)
		if (!ids || hex_to_id(argv[2 + i], ids[i]) < 0) {
			printf("Bail out! bad id %s\n", argv[2 + i]);
			return 1;
		}
	memset(missing, 0xab, sizeof(missing));
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);

	/* the chunk URL rule: query and trailing slashes are not part of it */
	snprintf(url, sizeof(url), "%s/s.castr//?x=1;y", base);
	check_int(ca_remote_store_new(url, NULL, &rs), ==, 0);
	snprintf(url, sizeof(url), "%s/s.castr", base);
	check_str(ca_remote_store_base(rs), url);
	check_int(ca_remote_store_new("ftp://h/s", NULL, &slow), ==, -EINVAL);

	/* fetch: the stored bytes, verified */
	check_int(fetch_verified(rs, codec, ids[0]), ==, 0);
	check_u64(attempts(rs), ==, 1);

	/* prefetch, let it land, then fetch: no second GET */
	ca_remote_store_ops.prefetch(rs, ids[1]);
	for (int i = 0; i < 200; i++) {
		struct ca_remote_store_stats st;
		ca_remote_store_get_stats(rs, &st);
		if (st.http.ok == 2)
			break;
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	check_int(fetch_verified(rs, codec, ids[1]), ==, 0);
	check_u64(attempts(rs), ==, 2);

	/* prefetch and fetch at once: the fetch joins the running download */
	ca_remote_store_ops.prefetch(rs, ids[2]);
	check_int(fetch_verified(rs, codec, ids[2]), ==, 0);
	check_u64(attempts(rs), ==, 3);
	struct ca_remote_store_stats st;
	ca_remote_store_get_stats(rs, &st);
	check_u64(st.prefetches, ==, 2);
	check_u64(st.prefetch_hits, ==, 2);

	/* missing: -ENOENT, not retried; a failed prefetch answers the fetch */
	struct ca_buf raw = CA_BUF_INIT;
	bool compressed;
	check_int(ca_remote_store_ops.fetch(rs, missing, &raw, &compressed), ==, -ENOENT);
	check_u64(attempts(rs), ==, 4);
	ca_remote_store_ops.prefetch(rs, missing);
	check_int(ca_remote_store_ops.fetch(rs, missing, &raw, &compressed), ==, -ENOENT);
	check_u64(attempts(rs), ==, 5);
	ca_remote_store_get_stats(rs, &st);
	check_u64(st.http.missing, ==, 2);
	check_u64(st.http.retries, ==, 0);

	/* HEAD probes: which ids the server holds, no body fetched */
	const uint8_t *probe_ids[3] = { ids[3], missing, ids[0] };
	uint8_t have[3] = { 9, 9, 9 };
	check_int(ca_remote_store_probe(rs, probe_ids, 3, have), ==, 0);
	check(have[0] == 1 && have[1] == 0 && have[2] == 1);
	ca_remote_store_get_stats(rs, &st);
	uint64_t bytes_before = st.http.bytes; /* HEAD adds no body bytes */
	check_int(ca_remote_store_probe(rs, probe_ids, 1, have), ==, 0);
	ca_remote_store_get_stats(rs, &st);
	check_u64(st.http.bytes, ==, bytes_before);

	/* the prefetch table is bounded: hints past it are dropped, not queued */
	for (unsigned i = 0; i < 1100; i++) {
		uint8_t id[CA_CHUNK_ID_SIZE];
		memset(id, 0, sizeof(id));
		memcpy(id, &i, sizeof(i));
		id[31] = 0x5a;
		ca_remote_store_ops.prefetch(rs, id);
	}
	ca_remote_store_get_stats(rs, &st);
	check(st.prefetch_skips >= 1100 - 1024);
	double t0 = now();
	ca_remote_store_free(rs);
	check(now() - t0 < 5);
	rs = NULL;

	/* eight threads fetching one chunk from a slow server: one GET */
	snprintf(url, sizeof(url), "%s/slow/s.castr", base);
	check_int(ca_remote_store_new(url, NULL, &slow), ==, 0);
	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, 8);
	struct racer rc[8];
	pthread_t th[8];
	for (int i = 0; i < 8; i++) {
		rc[i] = (struct racer){ slow, NULL, ids[0], &barrier, -1 };
		if (ca_codec_new(CA_DIGEST_SHA512_256, &rc[i].codec) < 0) /* a codec is one thread's */
			abort();
		pthread_create(&th[i], NULL, race, &rc[i]);
	}
	int bad = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		bad += rc[i].r != 0;
	}
	pthread_barrier_destroy(&barrier);
	check_int(bad, ==, 0);
	check_u64(attempts(slow), ==, 1);

	/* freeing with slow transfers running and queued: cancelled, quickly */
	for (size_t i = 1; i < n_ids; i++)
		ca_remote_store_ops.prefetch(slow, ids[i]);
	t0 = now();
	ca_remote_store_free(slow);
	check(now() - t0 < 2);

	/* 5xx: retried as configured, then -EIO */
	struct ca_http_opts o;
	ca_http_opts_init(&o);
	o.retries = 2;
	o.retry_delay_ms = 50;
	snprintf(url, sizeof(url), "%s/e503/s.castr", base);
	check_int(ca_remote_store_new(url, &o, &rs), ==, 0);
	check_int(ca_remote_store_ops.fetch(rs, ids[0], &raw, &compressed), ==, -EIO);
	ca_remote_store_get_stats(rs, &st);
	check_u64(st.http.attempts, ==, 3);
	check_u64(st.http.retries, ==, 2);
	check_u64(st.http.errors, ==, 1);
	ca_remote_store_free(rs);

	/* whole files: the cap holds, exactly at the size is fine */
	struct ca_buf b = CA_BUF_INIT;
	snprintf(url, sizeof(url), "%s/f.bin", base);
	check_int(ca_remote_get_file(url, 299999, NULL, &b), ==, -EFBIG);
	ca_buf_release(&b);
	check_int(ca_remote_get_file(url, 300000, NULL, &b), ==, 0);
	check_u64(b.size, ==, 300000);
	ca_buf_release(&b);
	snprintf(url, sizeof(url), "%s/nothing-here", base);
	check_int(ca_remote_get_file(url, 1000, NULL, &b), ==, -ENOENT);
	check_int(ca_remote_get_file("http://127.0.0.1:1/x", 1000, NULL, &b), ==, -ECONNREFUSED);

	/* the engine on its own: many submissions, each callback exactly once */
	struct ca_http *h = NULL;
	check_int(ca_http_new(NULL, &h), ==, 0);
	snprintf(url, sizeof(url), "%s/f.bin", base);
	for (int i = 0; i < 20; i++) {
		r = ca_http_get(h, url, 1 << 20, &b);
		if (r < 0 || b.size != 300000)
			break;
		ca_buf_release(&b);
	}
	check_int(r, ==, 0);
	struct ca_http_stats hs;
	ca_http_get_stats(h, &hs);
	check_u64(hs.ok, ==, 20);
	check_u64(hs.bytes, ==, 20 * 300000);
	ca_http_free(h);

	ca_buf_release(&raw);
	ca_codec_free(codec);
	free(ids);
	return tap_done();
}
