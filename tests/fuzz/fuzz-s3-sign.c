/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-s3-sign - SigV4 signing of S3 requests over hostile URLs, keys,
 * regions and headers: what s3.c makes of them (ca_s3_connect: the URL
 * parse, the credentials, curl's "aws:amz:REGION:s3" provider string) and
 * the request libcurl then signs with them, as http.c sets it up
 * (CURLOPT_AWS_SIGV4, the key and secret as user and password, the
 * x-amz-content-sha256 and x-amz-security-token headers).
 *
 * No network: every host and port is a listener on 127.0.0.1
 * (CURLOPT_CONNECT_TO), whose thread keeps the request's head and closes
 * the connection (an empty reply). A fixed x-amz-date header makes the
 * signature depend on the input only.
 *
 * Input: fields split at '\n':
 *   0  what follows "s3+http://" (host, bucket, prefix, ?lookup=)
 *   1  access key   2  secret key   3  session token   4  region
 *   5  an object path appended to the store's URL
 *   6  one more request header line (not Authorization, which would
 *      replace the signature)
 * Properties: ca_s3_connect returns 0, -EINVAL, -ENOKEY or -ENOMEM (a
 * control character in the access key or token: -EINVAL); on
 * success its URL is http(s):// and, with a key, the provider string is
 * exactly "aws:amz:" REGION ":s3" (never cut short); the same input signs
 * to the same request bytes twice; with a key, the request carries an
 * Authorization header, and the secret shows in it only through the
 * signature (signed with another secret, only the Signature= value
 * changes); no bare CR in the request head.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fuzz.h"
#include "net/s3.h"

#define REQ_MAX 65536

static size_t discard(char *p, size_t size, size_t n, void *userdata)
{
	(void)p;
	(void)userdata;
	return size * n;
}

/* The "server": accepts one connection, keeps the request's head in req
 * (up to the blank line) and closes: libcurl then sees an empty reply. */
struct server {
	int lfd, port;
	char *req;
	ssize_t n;
};

static void *serve_one(void *userdata)
{
	struct server *sv = userdata;
	ssize_t k;
	struct pollfd lp = { .fd = sv->lfd, .events = POLLIN };
	int fd = poll(&lp, 1, 10000) == 1 ? accept(sv->lfd, NULL, NULL) : -1;
	sv->n = 0;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	/* a client that neither ends its head nor closes: 10 s, then it is dropped */
	while (fd >= 0 && sv->n < REQ_MAX - 1 && poll(&pf, 1, 10000) == 1 &&
	       (k = read(fd, sv->req + sv->n, (size_t)(REQ_MAX - 1 - sv->n))) > 0) {
		sv->n += k;
		sv->req[sv->n] = 0;
		if (strstr(sv->req, "\r\n\r\n"))
			break;
	}
	sv->req[sv->n] = 0;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int listen_once(void)
{
	static int lfd = -1, port;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (lfd >= 0)
		return port;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 4) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &al) < 0)
		abort();
	port = ntohs(a.sin_port);
	return lfd << 16 | port; /* both, for the caller */
}

/* Sign a GET of url with c's settings; the request's head into out
 * (NUL-terminated; "" when libcurl would not send one). */
static ssize_t sign_once(const char *url, const struct ca_s3_conn *c, const char *extra, char *out)
{
	static int lfd = -1, port;
	struct curl_slist *h = NULL, *to = NULL;
	struct server sv = { .req = out };
	pthread_t t;
	char connect_to[64];
	CURL *e = curl_easy_init();
	if (lfd < 0) {
		int both = listen_once();
		lfd = both >> 16;
		port = both & 0xffff;
	}
	sv.lfd = lfd;
	out[0] = 0;
	if (!e || pthread_create(&t, NULL, serve_one, &sv) != 0) {
		curl_easy_cleanup(e);
		return -1;
	}
	h = curl_slist_append(h, "x-amz-date: 20260101T000000Z");
	h = curl_slist_append(h, "x-amz-content-sha256: "
	                         "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	if (c->http.sigv4_token) {
		char *tk = NULL;
		if (asprintf(&tk, "x-amz-security-token: %s", c->http.sigv4_token) >= 0) {
			h = curl_slist_append(h, tk);
			free(tk);
		}
	}
	if (extra[0])
		h = curl_slist_append(h, extra);
	/* any host and port is our listener: never a lookup or the network */
	snprintf(connect_to, sizeof(connect_to), "::127.0.0.1:%d", port);
	to = curl_slist_append(NULL, connect_to);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_CONNECT_TO, to);
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	if (c->http.sigv4) {
		curl_easy_setopt(e, CURLOPT_AWS_SIGV4, c->http.sigv4);
		curl_easy_setopt(e, CURLOPT_USERNAME, c->http.sigv4_key);
		curl_easy_setopt(e, CURLOPT_PASSWORD, c->http.sigv4_secret);
	}
	(void)curl_easy_perform(e);
	/* closes the connection libcurl may still keep, so the server sees its end */
	curl_easy_cleanup(e);
	/* when libcurl never connected, wake the server with an empty connection */
	int w = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		                 .sin_port = htons((uint16_t)port) };
	if (w >= 0 && connect(w, (struct sockaddr *)&a, sizeof(a)) == 0)
		shutdown(w, SHUT_WR);
	pthread_join(t, NULL);
	if (w >= 0)
		close(w);
	/* a second connection (the wake-up after a real one) waits in the backlog: drain it */
	for (;;) {
		struct pollfd pf = { .fd = lfd, .events = POLLIN };
		if (poll(&pf, 1, 0) != 1)
			break;
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			break;
		close(fd);
	}
	curl_slist_free_all(h);
	curl_slist_free_all(to);
	return sv.n;
}

/* Where the signature's value is: the last "Signature=" of the
 * Authorization line (the access key before it may hold that text too). */
static const char *signature_of(const char *req)
{
	const char *a = strcasestr(req, "\nAuthorization: "), *e, *sig = NULL;
	if (!a)
		return NULL;
	e = strstr(a + 1, "\r\n");
	for (const char *q = a; (q = strstr(q, "Signature=")) && (!e || q < e); q++)
		sig = q;
	return sig;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char req1[REQ_MAX], req2[REQ_MAX];
	char *f[7] = { 0 }, *buf, *url = NULL, *obj = NULL;
	struct ca_s3_conn c;
	if (size > 4096)
		return 0;
	fuzz_log_quiet();
	unsetenv("AWS_ACCESS_KEY_ID"), unsetenv("AWS_SECRET_ACCESS_KEY"), unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_REGION"), unsetenv("S3_ACCESS_KEY"), unsetenv("S3_SECRET_KEY"), unsetenv("S3_REGION");
	unsetenv("S3_SESSION_TOKEN");
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	/* fields end at '\n' (and at a NUL byte: C strings) */
	char *p = buf;
	for (int i = 0; i < 7; i++) {
		f[i] = p;
		p += strcspn(p, "\n");
		if (*p)
			*p++ = 0;
	}
	for (char *q = f[6]; *q; q++) /* one header line: no line break of its own */
		if (*q == '\r')
			*q = ' ';
	/* an Authorization of one's own replaces the signature (libcurl's
	 * rule, a configuration choice, not an input's) */
	if (!strncasecmp(f[6] + strspn(f[6], " \t"), "authorization", 13))
		f[6][0] = 0;
	struct ca_s3_settings set = { f[1], f[2], f[3], f[4] };
	if (asprintf(&url, "s3+http://%s", f[0]) < 0) {
		free(buf);
		return 0;
	}
	int r = ca_s3_connect(url, &set, NULL, &c);
	fuzz_check(r == 0 || r == -EINVAL || r == -ENOKEY || r == -ENOMEM, "ca_s3_connect returned %d", r);
	if (r < 0)
		goto out;
	fuzz_check(!strncmp(c.http_url, "http://", 7) || !strncmp(c.http_url, "https://", 8), "a URL %s",
	           c.http_url);
	if (c.http.sigv4) {
		char want[128];
		snprintf(want, sizeof(want), "aws:amz:%s:s3", c.creds.region);
		fuzz_check(!strcmp(c.http.sigv4, want), "the provider string was cut: %s", c.http.sigv4);
	}
	if (asprintf(&obj, "%s/%s", c.http_url, f[5]) < 0)
		obj = NULL;
	if (obj && !strncmp(obj, "http://", 7)) {
		ssize_t n1 = sign_once(obj, &c, f[6], req1), n2 = sign_once(obj, &c, f[6], req2);
		fuzz_check(n1 == n2 && (n1 < 0 || !memcmp(req1, req2, (size_t)n1)), "two signings of one request differ");
		if (getenv("FUZZ_SHOW")) /* to see what is signed: FUZZ_SHOW=1 replay-s3-sign FILE */
			fprintf(stderr, "%s\n", req1);
		/* no input makes a header of its own: every CR ends a line */
		for (const char *q = req1; (q = strchr(q, '\r')); q++)
			fuzz_check(q[1] == '\n', "a bare CR in the request head");
		if (c.http.sigv4 && n1 > 0 && strstr(req1, "GET ")) {
			fuzz_check(strcasestr(req1, "\nAuthorization: AWS4-HMAC-SHA256 ") != NULL,
			           "a signed request without its Authorization");
			/* the secret shows only through the signature: signed with
			 * another secret (every byte changed), the request differs
			 * in the Signature= value alone */
			struct ca_s3_conn c2;
			char *other = strdup(f[2]);
			for (char *q = other; q && *q; q++)
				*q = *q == 'Z' ? 'Y' : 'Z';
			struct ca_s3_settings set2 = { f[1], other, f[3], f[4] };
			if (other && ca_s3_connect(url, &set2, NULL, &c2) == 0) {
				ssize_t n3 = sign_once(obj, &c2, f[6], req2);
				const char *s1 = signature_of(req1), *s2 = signature_of(req2);
				fuzz_check(n3 == n1 && s1 && s2 && s1 - req1 == s2 - req2 &&
				                   !memcmp(req1, req2, (size_t)(s1 - req1)) &&
				                   !strcmp(s1 + 10 + 64, s2 + 10 + 64) && strspn(s1 + 10, "0123456789abcdef") == 64,
				           "the secret shows in the request beyond its signature");
				ca_s3_conn_clear(&c2);
			}
			free(other);
		}
	}
	ca_s3_conn_clear(&c);
out:
	free(obj);
	free(url);
	free(buf);
	ca_log_use(NULL);
	return 0;
}
