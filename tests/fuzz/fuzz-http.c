/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-http - the HTTP response path: status line, headers and body, as
 * the real engine (http.c, libcurl) and the chunk fetcher (remote.c, then
 * compress.c) take them.
 *
 * A thread serves the input, byte for byte, as the raw response to every
 * request made on 127.0.0.1 (then closes the connection); the harness
 * fetches it through one engine reused across inputs. Redirects stay
 * here too: http_proxy and https_proxy point at the same server, so a
 * Location naming any host is answered by it, never by the network.
 *
 * Input: byte 0 picks the request (modulo 3), the next bytes its
 * parameters, the rest is the response:
 *   0  chunk GET through a remote store: 32-byte chunk id, then the
 *      response; the body is decoded and verified as chunksrc does
 *   1  range GET: 4-byte start, 2-byte length - 1, then the response;
 *      a success must honour http.h's checks (n bytes of the range, or
 *      fewer only at the end the server stated)
 *   2  HEAD: then the response; a success has no body
 * Properties: no crash, no hang (every request ends: the server closes),
 * a negative errno on failure, and the range contract above.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "chunk/compress.h"
#include "fuzz.h"
#include "net/http.h"
#include "net/remote.h"

static struct {
	pthread_mutex_t lock;
	const uint8_t *resp; /* the current input's response; valid during a run */
	size_t resp_len;
	int listen_fd;
	uint16_t port;
} srv = { .lock = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1 };

static struct ca_http *engine;
static struct ca_remote_store *store;
static struct ca_codec *codec;

/* Read the request up to its blank line (GET and HEAD have no body), so
 * that closing after the answer sends FIN, not RST. */
static void read_request(int fd)
{
	char buf[4096];
	size_t seen = 0;
	unsigned match = 0;
	static const char end[] = "\r\n\r\n";
	while (seen < 65536) {
		ssize_t k = recv(fd, buf, sizeof(buf), 0);
		if (k <= 0)
			return;
		for (ssize_t i = 0; i < k; i++) {
			match = buf[i] == end[match] ? match + 1 : (buf[i] == '\r' ? 1 : 0);
			if (match == 4)
				return;
		}
		seen += (size_t)k;
	}
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(srv.listen_fd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		struct timeval tv = { 2, 0 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		read_request(fd);
		pthread_mutex_lock(&srv.lock);
		for (size_t off = 0; off < srv.resp_len;) {
			ssize_t k = send(fd, srv.resp + off, srv.resp_len - off, MSG_NOSIGNAL);
			if (k <= 0)
				break;
			off += (size_t)k;
		}
		pthread_mutex_unlock(&srv.lock);
		shutdown(fd, SHUT_WR);
		close(fd);
	}
}

static void setup(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	pthread_t t;
	char url[128];
	struct ca_http_opts o;

	fuzz_log_quiet();
	srv.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv.listen_fd < 0 || bind(srv.listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(srv.listen_fd, 64) < 0 || getsockname(srv.listen_fd, (struct sockaddr *)&a, &al) < 0)
		abort();
	srv.port = ntohs(a.sin_port);
	if (pthread_create(&t, NULL, serve, NULL) != 0)
		abort();
	pthread_detach(t);

	snprintf(url, sizeof(url), "http://127.0.0.1:%u", srv.port);
	setenv("http_proxy", url, 1);
	setenv("https_proxy", url, 1);
	unsetenv("no_proxy");
	unsetenv("NO_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");

	ca_http_opts_init(&o);
	o.retries = 0; /* one answer per request: the input */
	o.connect_timeout_ms = 2000;
	o.stall_timeout_s = 5;
	o.total_timeout_s = 10;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/store", srv.port);
	if (ca_http_new(&o, &engine) < 0 || ca_remote_store_new(url, &o, &store) < 0 ||
	    ca_codec_new(CA_DIGEST_SHA256, &codec) < 0)
		abort();
}

static void chunk_get(const uint8_t *id)
{
	struct ca_buf body = { 0 }, out = { 0 };
	bool compressed = false;
	int r = ca_remote_store_ops.fetch(store, id, &body, &compressed);
	fuzz_check(r <= 0, "fetch: %d", r);
	if (r == 0) {
		r = ca_codec_decode_chunk(codec, body.data, body.size, id, UINT64_MAX, &out);
		fuzz_check(r == 0 || r == -EBADMSG || r == -ENOMEM, "decode: %d", r);
	}
	ca_buf_release(&body);
	ca_buf_release(&out);
}

static void range_get(uint64_t start, size_t len)
{
	struct ca_buf body = { 0 };
	uint64_t total = 0;
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/image.catar", srv.port);
	int r = ca_http_get_range(engine, url, start, len, &body, &total);
	fuzz_check(r <= 0, "range: %d", r);
	if (r == 0) {
		fuzz_check(body.size <= len, "range of %zu gave %zu bytes", len, body.size);
		/* fewer bytes only at the end the server stated (none: a 416 past it) */
		if (body.size < len)
			fuzz_check(total != UINT64_MAX && (start + body.size == total || (body.size == 0 && start >= total)),
			           "short range (%zu of %zu at %llu) not at the end (total %llu)", body.size, len,
			           (unsigned long long)start, (unsigned long long)total);
		if (total != UINT64_MAX && body.size > 0)
			fuzz_check(start + body.size <= total, "range past the stated total");
	}
	ca_buf_release(&body);
}

struct wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int r;
	size_t body_size;
};

static void head_done(void *userdata, int r, struct ca_buf *body)
{
	struct wait *w = userdata;
	pthread_mutex_lock(&w->lock);
	w->r = r;
	w->body_size = body ? body->size : 0;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void head(void)
{
	struct wait w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/store/0000/x.cacnk", srv.port);
	int r = ca_http_submit_flags(engine, url, 0, CA_HTTP_HEAD, head_done, &w);
	if (r < 0)
		return;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	fuzz_check(w.r <= 0, "head: %d", w.r);
	fuzz_check(w.r < 0 || w.body_size == 0, "HEAD answered with a %zu-byte body", w.body_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (srv.listen_fd < 0)
		setup();
	unsigned mode = (unsigned)fuzz_take(&data, &size, 1) % 3;
	uint8_t id[CA_CHUNK_ID_SIZE] = { 0 };
	uint64_t start = 0;
	size_t len = 1;
	if (mode == 0)
		for (size_t i = 0; i < sizeof(id); i++)
			id[i] = (uint8_t)fuzz_take(&data, &size, 1);
	if (mode == 1) {
		start = fuzz_take(&data, &size, 4);
		len = (size_t)fuzz_take(&data, &size, 2) + 1;
	}
	pthread_mutex_lock(&srv.lock);
	srv.resp = data;
	srv.resp_len = size;
	pthread_mutex_unlock(&srv.lock);
	if (mode == 0)
		chunk_get(id);
	else if (mode == 1)
		range_get(start, len);
	else
		head();
	pthread_mutex_lock(&srv.lock);
	srv.resp = NULL;
	srv.resp_len = 0;
	pthread_mutex_unlock(&srv.lock);
	return 0;
}
