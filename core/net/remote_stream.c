/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* remote_stream.c - a file read front to back with one GET (see
 * remote_stream.h). */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "net/remote_stream.h"

#define WINDOW ((size_t)1 << 20)
/* a paused transfer goes on once this much room is free: curl hands over
 * at most CURL_MAX_WRITE_SIZE (16 KiB) at a time */
#define RESUME_ROOM ((size_t)64 << 10)

struct ca_remote_stream {
	char *url;
	pthread_mutex_t lock; /* guards everything below */
	CURLM *multi;
	CURL *easy;
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
	unsigned stall_ms;
	uint64_t low_speed;     /* bytes/s a waiting reader must get, over stall_ms */
	/* time is counted only while the reader waits in pump (a transfer
	 * without a thread moves only then: a reader busy elsewhere, or a
	 * pager holding its output, is no slow server) */
	uint64_t idle_ms;       /* waited since the last byte */
	uint64_t span_ms, span_bytes; /* waited in the current measuring span, received at its start */
	uint64_t size;      /* the Content-Length; UINT64_MAX until known */
	uint8_t *head;      /* bytes [0, head_len) */
	size_t head_len;
	uint8_t *win;       /* bytes [win_pos, win_pos + win_len) at win + win_at */
	size_t win_cap, win_at, win_len;
	uint64_t win_pos;
	uint64_t received;  /* = win_pos + win_len */
	bool paused, done, back_logged;
	int err;            /* the transfer's failure, said once */
};

static int fail(struct ca_remote_stream *s, int err, const char *why)
{
	if (!s->err) {
		s->err = err;
		if (why)
			ca_log_error("%s: %s", s->url, why);
		else
			ca_log_error_errno(err, "%s", s->url);
	}
	return s->err;
}

/* The first bytes: the answer must be a 200 with its size. */
static int answer_check(struct ca_remote_stream *s)
{
	long status = 0;
	curl_off_t len = -1;
	if (s->size != UINT64_MAX)
		return 0;
	curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(s->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
	if (status != 200) {
		char why[64];
		snprintf(why, sizeof(why), "HTTP status %ld to a GET of the whole file", status);
		return fail(s, -EIO, why);
	}
	if (len < 0)
		return fail(s, -EIO, "the server does not say the file's size (no Content-Length)");
	s->size = (uint64_t)len;
	return 0;
}

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
	struct ca_remote_stream *s = userdata;
	n *= size;
	if (answer_check(s) < 0)
		return 0;
	if (n > s->size - s->received) {
		fail(s, -EIO, "the server sent more than its Content-Length");
		return 0;
	}
	if (s->win_len + n > s->win_cap) {
		if (s->win_len > 0) {
			s->paused = true; /* curl keeps the piece and hands it over again */
			return CURL_WRITEFUNC_PAUSE;
		}
		uint8_t *w = realloc(s->win, n); /* one piece larger than the window */
		if (!w) {
			fail(s, -ENOMEM, NULL);
			return 0;
		}
		s->win = w;
		s->win_cap = n;
	}
	if (s->win_at + s->win_len + n > s->win_cap) {
		memmove(s->win, s->win + s->win_at, s->win_len);
		s->win_at = 0;
	}
	if (s->received < CA_REMOTE_STREAM_HEAD) {
		size_t k = CA_REMOTE_STREAM_HEAD - (size_t)s->received;
		k = k < n ? k : n;
		memcpy(s->head + s->head_len, p, k);
		s->head_len += k;
	}
	memcpy(s->win + s->win_at + s->win_len, p, n);
	s->win_len += n;
	s->received += n;
	s->idle_ms = 0;
	return n;
}

static int curl_err(struct ca_remote_stream *s, CURLcode c)
{
	long status = 0;
	switch (c) {
	case CURLE_OK:
		return 0;
	case CURLE_HTTP_RETURNED_ERROR:
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
		return status == 404 || status == 410 ? -ENOENT : -EIO;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
		return -ECONNRESET;
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EREMCHG; /* a redirect to a scheme the request may not follow */
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* Moves the transfer on until it delivers bytes, ends or fails. */
static int pump(struct ca_remote_stream *s)
{
	uint64_t before = s->received;
	while (!s->err && !s->done && s->received == before) {
		int running = 0, left;
		CURLMsg *m;
		if (s->paused && s->win_cap - s->win_len >= RESUME_ROOM) {
			s->paused = false;
			/* the wait was ours, not the server's */
			s->idle_ms = s->span_ms = 0;
			s->span_bytes = s->received;
			curl_easy_pause(s->easy, CURLPAUSE_CONT); /* may hand a piece over at once */
		}
		if (s->paused)
			return 0; /* the reader must make room first */
		curl_multi_perform(s->multi, &running);
		while ((m = curl_multi_info_read(s->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			s->done = true;
			if (s->err)
				break; /* on_data said why */
			if (m->data.result == CURLE_OK && answer_check(s) == 0 && s->received != s->size)
				fail(s, -EIO, "the file ended before its Content-Length");
			else if (m->data.result == CURLE_PARTIAL_FILE)
				fail(s, -ECONNRESET, "the connection closed before the end of the file (its Content-Length)");
			else if (m->data.result == CURLE_HTTP_RETURNED_ERROR &&
			         curl_err(s, m->data.result) == -ENOENT)
				fail(s, -ENOENT, "not found on the server");
			else if (m->data.result != CURLE_OK) {
				ca_log_debug("GET %s: %s", s->url, s->errbuf[0] ? s->errbuf : curl_easy_strerror(m->data.result));
				fail(s, curl_err(s, m->data.result), NULL);
			}
		}
		if (s->err || s->done || s->received != before || s->paused)
			break;
		if (s->idle_ms > s->stall_ms)
			return fail(s, -ETIMEDOUT, NULL);
		/* a server dripping bytes: slower than the low speed over a
		 * whole stall period is a timeout too, as for every request */
		if (s->span_ms >= s->stall_ms) {
			if (s->received - s->span_bytes < s->low_speed * (s->stall_ms / 1000))
				return fail(s, -ETIMEDOUT, "the server sends slower than the low speed limit");
			s->span_ms = 0;
			s->span_bytes = s->received;
		}
		uint64_t t0 = ca_now_ms();
		curl_multi_poll(s->multi, NULL, 0, 100, NULL);
		uint64_t waited = ca_now_ms() - t0;
		s->idle_ms += waited;
		s->span_ms += waited;
	}
	return s->err;
}

static int setup(struct ca_remote_stream *s, const struct ca_http_opts *o)
{
	CURLcode c = (CURLcode)ca_http_easy_common(s->easy, s->url, o, false); /* o->sigv4 is refused */
#define SET(opt, val)                                      \
	do {                                               \
		if (c == CURLE_OK)                         \
			c = curl_easy_setopt(s->easy, opt, val); \
	} while (0)
	SET(CURLOPT_WRITEFUNCTION, on_data);
	SET(CURLOPT_WRITEDATA, s);
	SET(CURLOPT_ERRORBUFFER, s->errbuf);
	SET(CURLOPT_FAILONERROR, 1L);
	for (size_t i = 0; c == CURLE_OK && i < o->n_headers; i++) {
		struct curl_slist *n = curl_slist_append(s->headers, o->headers[i]);
		if (!n)
			c = CURLE_OUT_OF_MEMORY;
		else
			s->headers = n;
	}
	if (s->headers)
		SET(CURLOPT_HTTPHEADER, s->headers);
#undef SET
	if (c != CURLE_OK)
		return curl_err(s, c);
	return curl_multi_add_handle(s->multi, s->easy) == CURLM_OK ? 0 : -ENOMEM;
}

int ca_remote_stream_open(const char *url, const struct ca_http_opts *o, struct ca_remote_stream **ret)
{
	struct ca_http_opts d;
	struct ca_remote_stream *s;
	int r;
	if (!o) {
		ca_http_opts_init(&d);
		o = &d;
	}
	if (o->sigv4)
		return ca_log_error_errno(EOPNOTSUPP, "%s: a signed store is not read as a stream", url);
	s = calloc(1, sizeof(*s));
	if (!s || !(s->url = strdup(url)) || !(s->head = malloc(CA_REMOTE_STREAM_HEAD)) ||
	    !(s->win = malloc(WINDOW))) {
		ca_remote_stream_free(s);
		return ca_log_error_errno(ENOMEM, "%s", url);
	}
	pthread_mutex_init(&s->lock, NULL);
	s->win_cap = WINDOW;
	s->size = UINT64_MAX;
	s->stall_ms = (o->stall_timeout_s ? o->stall_timeout_s : 15) * 1000u;
	/* the connection too may take its own timeout first */
	if (s->stall_ms < (o->connect_timeout_ms ? o->connect_timeout_ms : 10000))
		s->stall_ms = o->connect_timeout_ms ? o->connect_timeout_ms : 10000;
	s->low_speed = o->low_speed_limit ? o->low_speed_limit : 1024;
	if (o->max_recv_speed && o->max_recv_speed < s->low_speed)
		s->low_speed = 0; /* a rate limit below the low speed is the user's choice */
	s->multi = curl_multi_init();
	s->easy = curl_easy_init();
	if (!s->multi || !s->easy) {
		ca_remote_stream_free(s);
		return ca_log_error_errno(ENOMEM, "%s", url);
	}
	r = setup(s, o);
	if (r < 0) {
		ca_log_error_errno(r, "%s", url);
		ca_remote_stream_free(s);
		return r;
	}
	pthread_mutex_lock(&s->lock);
	while (r == 0 && s->received == 0 && !s->done)
		r = pump(s);
	if (r == 0)
		r = answer_check(s); /* an empty file: no bytes, but done */
	pthread_mutex_unlock(&s->lock);
	if (r < 0) {
		ca_remote_stream_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void ca_remote_stream_free(struct ca_remote_stream *s)
{
	if (!s)
		return;
	if (s->multi && s->easy)
		curl_multi_remove_handle(s->multi, s->easy);
	if (s->easy)
		curl_easy_cleanup(s->easy);
	if (s->multi)
		curl_multi_cleanup(s->multi);
	curl_slist_free_all(s->headers);
	if (s->url)
		pthread_mutex_destroy(&s->lock);
	free(s->head);
	free(s->win);
	free(s->url);
	free(s);
}

uint64_t ca_remote_stream_size(const struct ca_remote_stream *s)
{
	return s->size;
}

ssize_t ca_remote_stream_pread(struct ca_remote_stream *s, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	int r = 0;
	pthread_mutex_lock(&s->lock);
	if (off >= s->size) {
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	if (len > s->size - off)
		len = (size_t)(s->size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len && r == 0) {
		uint64_t pos = off + done;
		size_t n;
		if (pos < s->win_pos) {
			if (pos + (len - done) > s->head_len) {
				if (!s->back_logged)
					ca_log_error("%s: bytes %" PRIu64 "+%zu: read again, but the server answers no "
					             "range requests and the stream is past them", s->url, pos, len - done);
				s->back_logged = true;
				r = -ESPIPE;
				break;
			}
			memcpy((uint8_t *)buf + done, s->head + pos, len - done);
			done = len;
			break;
		}
		/* what lies before pos is not read again: dropped */
		n = pos - s->win_pos < s->win_len ? (size_t)(pos - s->win_pos) : s->win_len;
		s->win_at += n;
		s->win_len -= n;
		s->win_pos += n;
		if (s->win_len == 0)
			s->win_at = 0;
		if (pos == s->win_pos && s->win_len > 0) {
			n = s->win_len < len - done ? s->win_len : len - done;
			memcpy((uint8_t *)buf + done, s->win + s->win_at, n);
			done += n;
			continue;
		}
		if (s->done && !s->err)
			break; /* cannot happen: the size was checked */
		r = pump(s);
	}
	pthread_mutex_unlock(&s->lock);
	return r < 0 ? r : (ssize_t)done;
}

void ca_remote_stream_get_stats(struct ca_remote_stream *s, struct ca_http_stats *ret)
{
	pthread_mutex_lock(&s->lock);
	*ret = (struct ca_http_stats){ .requests = 1, .attempts = 1, .bytes = s->received,
	                               .ok = s->done && !s->err, .errors = s->err != 0 };
	pthread_mutex_unlock(&s->lock);
}
