/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* oci.c - OCI registries as chunk stores, in desync's layout (see oci.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/digest.h"
#include "base/json.h"
#include "base/location.h"
#include "base/log.h"
#include "base/workq.h"
#include "format/idset.h"
#include "net/oci.h"
#include "net/oci_auth.h"
#include "net/storeconf.h"
#include "store/crypt.h"
#include "store/store_gc.h"
#include "store/store_writer.h"

#define MANIFEST_TYPE "application/vnd.oci.image.manifest.v1+json"
#define EMPTY_TYPE "application/vnd.oci.empty.v1+json"
#define EMPTY_DIGEST "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
#define LAYER_TYPE "application/octet-stream"
#define DIGEST_LEN (7 + 64) /* "sha256:" and 64 hex */
#define TAG_PAGE 1000
#define TAG_LIST_MAX (8u << 20)
#define AUTH_LINE_MAX 16384 /* "Authorization: Bearer " and a token (JWTs run to a few KiB) */
#define WRITERS 8

struct ca_oci {
	char *base;  /* "http(s)://HOST[:PORT]" */
	char *repo;  /* "team/images" */
	char *shown; /* the URL for messages (redacted) */
	char tag[CA_OCI_TAG_MAX]; /* a file URL's tag */
	char scope_pull[512], scope_push[512];
	struct ca_http *h;
	bool own_h;
	struct ca_oci_auth *auth;
	pthread_mutex_t lock; /* guards config_pushed */
	bool config_pushed;
	/* a store's section may encrypt it (crypt.h): its chunks are sealed
	 * and their tags carry the key's suffix, as a directory store's files */
	struct ca_crypt *crypt;
};

void ca_oci_chunk_tag(const struct ca_oci *o, const uint8_t id[CA_CHUNK_ID_SIZE], char out[CA_OCI_TAG_MAX])
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	ca_id_to_hex(id, hex);
	snprintf(out, CA_OCI_TAG_MAX, "%s%s", hex, ca_crypt_chunk_suffix(o ? o->crypt : NULL));
}

/* The chunk id of a chunk tag, or -EINVAL. */
static int chunk_tag_id(const struct ca_oci *o, const char *tag, uint8_t id[CA_CHUNK_ID_SIZE])
{
	char want[CA_OCI_TAG_MAX], hex[2 * CA_CHUNK_ID_SIZE + 1];
	if (strlen(tag) < 2 * CA_CHUNK_ID_SIZE)
		return -EINVAL;
	memcpy(hex, tag, 2 * CA_CHUNK_ID_SIZE);
	hex[2 * CA_CHUNK_ID_SIZE] = 0;
	if (ca_id_from_hex(hex, id) < 0)
		return -EINVAL;
	ca_oci_chunk_tag(o, id, want);
	return strcmp(want, tag) ? -EINVAL : 0;
}

static bool tag_ok(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n >= CA_OCI_TAG_MAX || t[0] == '.' || t[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= '0' && t[i] <= '9') ||
		      t[i] == '_' || t[i] == '.' || t[i] == '-'))
			return false;
	return true;
}

static bool repo_ok(const char *r)
{
	size_t n = strlen(r);
	if (n == 0 || n > 255 || r[0] == '/' || r[n - 1] == '/' || strstr(r, "//"))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || strchr("._-/", r[i])))
			return false;
	return true;
}

void ca_oci_free(struct ca_oci *o)
{
	if (!o)
		return;
	if (o->own_h)
		ca_http_free(o->h);
	ca_oci_auth_free(o->auth);
	ca_crypt_unref(o->crypt);
	free(o->base);
	free(o->repo);
	free(o->shown);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

int ca_oci_open(const struct ca_endpoint *e, bool file, struct ca_http *h, struct ca_oci **ret)
{
	struct ca_oci *o = calloc(1, sizeof(*o));
	int r = 0;
	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->lock, NULL);
	const char *u = e->url, *s = strstr(u, "://");
	bool https = ca_location_is_https(u);
	o->shown = ca_location_redact(u);
	if (!o->shown || !s) {
		r = o->shown ? -EINVAL : -ENOMEM;
		goto out;
	}
	s += 3;
	size_t hn = strcspn(s, "/?#");
	const char *path = s + hn;
	size_t pn = strcspn(path, "?#");
	while (pn > 0 && path[pn - 1] == '/')
		pn--;
	char *p = pn > 1 ? strndup(path + 1, pn - 1) : strdup("");
	if (!p) {
		r = -ENOMEM;
		goto out;
	}
	if (file) {
		char *slash = strrchr(p, '/');
		if (slash && strlen(slash + 1) < sizeof(o->tag)) {
			strcpy(o->tag, slash + 1);
			*slash = 0;
		}
	}
	o->repo = p;
	/* HOST[:PORT] whole (a name is at most 253 bytes): cut short, it
	 * would find another host's credentials in an auth file */
	if (hn == 0 || hn > 255 + 6 || memchr(s, '@', hn) || !repo_ok(o->repo) || (file && !tag_ok(o->tag))) {
		ca_log_error("%s: not a registry's repository%s (oci+http(s)://HOST[:PORT]/REPO%s, lowercase)", o->shown,
		             file ? " and tag" : "", file ? "/NAME" : "");
		r = -EINVAL;
		goto out;
	}
	if (asprintf(&o->base, "%s://%.*s", https ? "https" : "http", (int)hn, s) < 0) {
		o->base = NULL;
		r = -ENOMEM;
		goto out;
	}
	if (!file && (r = ca_storeconf_crypt_of(e->settings, e->url, &o->crypt)) < 0) /* logs */
		goto out;
	snprintf(o->scope_pull, sizeof(o->scope_pull), "repository:%s:pull", o->repo);
	snprintf(o->scope_push, sizeof(o->scope_push), "repository:%s:pull,push", o->repo);
	char host[256 + 6 + 1];
	snprintf(host, sizeof(host), "%.*s", (int)hn, s);
	r = ca_oci_auth_new(host, https, e->http.username, e->http.password, &o->auth);
	if (r < 0)
		goto out;
	if (h) {
		o->h = h;
	} else {
		/* the credentials are the registry's (oci_auth.h), never curl's */
		struct ca_http_opts ho = e->http;
		ho.username = ho.password = NULL;
		ho.netrc = -1;
		r = ca_http_new(&ho, &o->h);
		o->own_h = r == 0;
	}
out:
	if (r < 0) {
		ca_oci_free(o);
		return r;
	}
	*ret = o;
	return 0;
}

const char *ca_oci_file_tag(const struct ca_oci *o)
{
	return o->tag;
}

/* A request to the repository: url is "/v2/REPO" + rest, or a whole URL
 * (an upload's Location). Answers a 401's challenge once. */
static int request(struct ca_oci *o, const char *method, const char *rest, const char *url_given, bool push,
                   const char *accept, const void *body, size_t n, const char *ctype, size_t cap,
                   struct ca_http_reply *rep)
{
	char *url = NULL, *line = malloc(AUTH_LINE_MAX);
	int r = line ? 0 : -ENOMEM;
	if (r == 0 && url_given) {
		url = strdup(url_given);
	} else if (r == 0 && asprintf(&url, "%s/v2/%s%s", o->base, o->repo, rest) < 0) {
		url = NULL;
	}
	if (r == 0 && !url)
		r = -ENOMEM;
	const char *scope = push ? o->scope_push : o->scope_pull;
	/* an absolute Location elsewhere gets no credential of ours */
	size_t bl = strlen(o->base);
	bool ours = url && !strncmp(url, o->base, bl) && (url[bl] == '/' || url[bl] == 0);
	for (int attempt = 0; r == 0 || (r == -EACCES && attempt < 3); attempt++) {
		const char *hdrs[2];
		size_t nh = 0;
		line[0] = 0;
		if (ours)
			ca_oci_auth_line(o->auth, scope, line, AUTH_LINE_MAX);
		if (line[0])
			hdrs[nh++] = line;
		char acc[128];
		if (accept) {
			snprintf(acc, sizeof(acc), "Accept: %s", accept);
			hdrs[nh++] = acc;
		}
		struct ca_http_request rq = { .method = method, .url = url, .headers = hdrs, .n_headers = nh,
			                      .body = body, .body_len = n, .content_type = ctype, .cap = cap };
		r = ca_http_request(o->h, &rq, rep);
		if (r != -EACCES || rep->status != 401 || !rep->www_authenticate[0] || attempt == 2 || !ours)
			break;
		r = ca_oci_auth_challenge(o->auth, o->h, rep->www_authenticate, scope);
		if (r < 0)
			break;
		r = -EACCES; /* ask again */
	}
	if (r == -EACCES)
		ca_log_error("%s: access denied (%s)", o->shown,
		             ca_oci_auth_has_credentials(o->auth) ? "credentials sent" : "no credentials found");
	if (line) {
		explicit_bzero(line, AUTH_LINE_MAX);
		free(line);
	}
	free(url);
	return r;
}

/* "sha256:<64 lowercase hex>" */
static bool digest_ok(const char *d)
{
	if (strlen(d) != DIGEST_LEN || strncmp(d, "sha256:", 7))
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static int sha256_digest(const void *p, size_t n, char out[DIGEST_LEN + 1])
{
	struct ca_digest *d = NULL;
	uint8_t sum[CA_DIGEST_SIZE];
	char hex[2 * CA_DIGEST_SIZE + 1];
	int r = ca_digest_new(CA_DIGEST_SHA256, &d);
	if (r == 0)
		r = ca_digest_once(d, p, n, sum);
	ca_digest_free(d);
	if (r < 0)
		return r;
	ca_id_to_hex(sum, hex);
	snprintf(out, DIGEST_LEN + 1, "sha256:%s", hex);
	return 0;
}

/* A manifest's one layer: digest and size. -ENOENT: not artifact_type. */
static int parse_manifest(const struct ca_buf *b, const char *artifact_type, char digest[DIGEST_LEN + 1],
                          uint64_t *ret_size)
{
	struct ca_json doc, v, layers, layer, x;
	char s[256];
	size_t pos = 0;
	if (ca_json_parse((const char *)b->data, b->size, &doc) < 0 || doc.p[0] != '{')
		return -EBADMSG;
	if (ca_json_member(doc, "mediaType", &v) == 0 && (ca_json_string(v, s, sizeof(s)) < 0 || strcmp(s, MANIFEST_TYPE)))
		return -EBADMSG;
	if (ca_json_member(doc, "artifactType", &v) < 0 || ca_json_string(v, s, sizeof(s)) < 0 ||
	    strcmp(s, artifact_type))
		return -ENOENT;
	if (ca_json_member(doc, "layers", &layers) < 0 || ca_json_next(layers, &pos, &layer) != 1 ||
	    ca_json_next(layers, &pos, &x) != 0)
		return -EBADMSG; /* exactly one layer */
	if (ca_json_member(layer, "digest", &v) < 0 || ca_json_string(v, digest, DIGEST_LEN + 1) < 0 ||
	    !digest_ok(digest))
		return -EBADMSG;
	if (ca_json_member(layer, "size", &v) < 0 || ca_json_u64(v, ret_size) < 0)
		return -EBADMSG;
	return 0;
}

int ca_oci_get(struct ca_oci *o, const char *tag, const char *artifact_type, size_t cap, struct ca_buf *out)
{
	struct ca_http_reply rep = { 0 };
	char rest[CA_OCI_TAG_MAX + 64], digest[DIGEST_LEN + 1], got[DIGEST_LEN + 1];
	uint64_t size = 0;
	snprintf(rest, sizeof(rest), "/manifests/%s", tag);
	int r = request(o, "GET", rest, NULL, false, MANIFEST_TYPE, NULL, 0, NULL, CA_OCI_MANIFEST_MAX, &rep);
	if (r == -EFBIG) {
		ca_log_error("%s: %s: manifest larger than %u KiB: refused", o->shown, tag, CA_OCI_MANIFEST_MAX >> 10);
		goto out;
	}
	if (r < 0)
		goto out;
	r = parse_manifest(&rep.body, artifact_type, digest, &size);
	if (r == -EBADMSG)
		ca_log_error("%s: %s: not an artifact's manifest (one layer, sha256)", o->shown, tag);
	if (r < 0)
		goto out;
	if (size > cap) {
		ca_log_error("%s: %s: layer of %llu bytes, more than %zu: refused", o->shown, tag, (unsigned long long)size,
		             cap);
		r = -EFBIG;
		goto out;
	}
	snprintf(rest, sizeof(rest), "/blobs/%s", digest);
	r = request(o, "GET", rest, NULL, false, NULL, NULL, 0, NULL, size, &rep);
	if (r == -EFBIG || (r == 0 && rep.body.size != size)) {
		ca_log_error("%s: %s: blob is not the size its manifest says", o->shown, tag);
		r = -EBADMSG;
		goto out;
	}
	if (r == -ENOENT)
		ca_log_debug("%s: %s: the manifest's blob is missing", o->shown, tag);
	if (r < 0)
		goto out;
	r = sha256_digest(rep.body.data, rep.body.size, got);
	if (r == 0 && strcmp(got, digest)) {
		ca_log_error("%s: %s: blob does not match its digest", o->shown, tag);
		r = -EBADMSG;
	}
	if (r == 0) {
		struct ca_buf t = *out;
		*out = rep.body;
		rep.body = t;
	}
out:
	ca_http_reply_clear(&rep);
	return r;
}

int ca_oci_has(struct ca_oci *o, const char *tag)
{
	struct ca_http_reply rep = { 0 };
	char rest[CA_OCI_TAG_MAX + 64];
	snprintf(rest, sizeof(rest), "/manifests/%s", tag);
	int r = request(o, "HEAD", rest, NULL, false, MANIFEST_TYPE, NULL, 0, NULL, 0, &rep);
	ca_http_reply_clear(&rep);
	return r == 0 ? 1 : r == -ENOENT ? 0 : r;
}

/* Upload a blob (with check: unless the registry has it; a chunk's blob
 * is new whenever its tag is, so it goes without the extra round trip). */
static int put_blob(struct ca_oci *o, const char *digest, const void *p, size_t n, bool check)
{
	struct ca_http_reply rep = { 0 };
	char rest[DIGEST_LEN + 64], *url = NULL;
	int r = 0;
	snprintf(rest, sizeof(rest), "/blobs/%s", digest);
	if (check) {
		r = request(o, "HEAD", rest, NULL, true, NULL, NULL, 0, NULL, 0, &rep);
		if (r != -ENOENT)
			goto out;
	}
	r = request(o, "POST", "/blobs/uploads/", NULL, true, NULL, NULL, 0, NULL, 4096, &rep);
	if (r < 0)
		goto out;
	const char *loc = rep.location;
	if (!loc[0] || strpbrk(loc, " \t")) {
		ca_log_error("%s: upload answered without a usable Location", o->shown);
		r = -EBADMSG;
		goto out;
	}
	bool abs = strstr(loc, "://") != NULL;
	if (abs && strncasecmp(loc, "http://", 7) && strncasecmp(loc, "https://", 8)) {
		ca_log_error("%s: upload Location is not an http(s) URL", o->shown);
		r = -EBADMSG;
		goto out;
	}
	if (asprintf(&url, "%s%s%s%cdigest=%s", abs ? "" : o->base, loc[0] == '/' || abs ? "" : "/", loc,
	             strchr(loc, '?') ? '&' : '?', digest) < 0) {
		url = NULL;
		r = -ENOMEM;
		goto out;
	}
	r = request(o, "PUT", NULL, url, true, NULL, p, n, LAYER_TYPE, 4096, &rep);
out:
	if (r < 0 && r != -EACCES)
		ca_log_debug("%s: blob upload: %s", o->shown, strerror(-r));
	ca_http_reply_clear(&rep);
	free(url);
	return r;
}

static int ensure_config(struct ca_oci *o)
{
	pthread_mutex_lock(&o->lock);
	int r = o->config_pushed ? 0 : put_blob(o, EMPTY_DIGEST, "{}", 2, true);
	if (r == 0)
		o->config_pushed = true;
	pthread_mutex_unlock(&o->lock);
	return r;
}

int ca_oci_put(struct ca_oci *o, const char *tag, const char *artifact_type, const void *p, size_t n)
{
	struct ca_http_reply rep = { 0 };
	char digest[DIGEST_LEN + 1], rest[CA_OCI_TAG_MAX + 64], *m = NULL;
	int r = ensure_config(o);
	if (r == 0)
		r = sha256_digest(p, n, digest);
	if (r == 0)
		r = put_blob(o, digest, p, n, false);
	if (r < 0)
		goto out;
	/* desync's manifest, member for member (Go's order) */
	if (asprintf(&m,
	             "{\"schemaVersion\":2,\"mediaType\":\"" MANIFEST_TYPE "\",\"artifactType\":\"%s\","
	             "\"config\":{\"mediaType\":\"" EMPTY_TYPE "\",\"digest\":\"" EMPTY_DIGEST "\",\"size\":2},"
	             "\"layers\":[{\"mediaType\":\"" LAYER_TYPE "\",\"digest\":\"%s\",\"size\":%zu}],"
	             "\"annotations\":{\"org.opencontainers.image.title\":\"%s\"}}",
	             artifact_type, digest, n, tag) < 0) {
		m = NULL;
		r = -ENOMEM;
		goto out;
	}
	snprintf(rest, sizeof(rest), "/manifests/%s", tag);
	r = request(o, "PUT", rest, NULL, true, NULL, m, strlen(m), MANIFEST_TYPE, 4096, &rep);
out:
	if (r < 0 && r != -EACCES)
		ca_log_error("%s: %s: upload failed: %s", o->shown, tag, strerror(-r));
	ca_http_reply_clear(&rep);
	free(m);
	return r;
}

int ca_oci_get_chunk(struct ca_oci *o, const uint8_t id[CA_CHUNK_ID_SIZE], size_t cap, struct ca_buf *out)
{
	char tag[CA_OCI_TAG_MAX];
	ca_oci_chunk_tag(o, id, tag);
	return ca_oci_get(o, tag, CA_OCI_CHUNK_TYPE, cap, out);
}

int ca_oci_has_chunk(struct ca_oci *o, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	char tag[CA_OCI_TAG_MAX];
	ca_oci_chunk_tag(o, id, tag);
	return ca_oci_has(o, tag);
}

int ca_oci_fetch_file(const struct ca_endpoint *e, size_t cap, struct ca_buf *out)
{
	struct ca_oci *o = NULL;
	int r = ca_oci_open(e, true, NULL, &o);
	if (r == 0)
		r = ca_oci_get(o, o->tag, CA_OCI_FILE_TYPE, cap, out);
	ca_oci_free(o);
	return r;
}

int ca_oci_put_file(const char *url, const struct ca_http_opts *http, const void *p, size_t n)
{
	struct ca_endpoint e;
	struct ca_oci *o = NULL;
	int r = ca_endpoint_init(&e, url, http, NULL);
	if (r == 0)
		r = ca_oci_open(&e, true, NULL, &o);
	if (r == 0)
		r = ca_oci_put(o, o->tag, CA_OCI_FILE_TYPE, p, n);
	ca_oci_free(o);
	ca_endpoint_clear(&e);
	return r;
}

/* ---- make's writer ---- */

struct writer {
	struct ca_oci *o;
	struct ca_workq *q;
	pthread_mutex_t lock; /* guards the counts */
	uint64_t skipped, skipped_bytes;
};

struct upload {
	uint8_t id[CA_CHUNK_ID_SIZE];
	size_t n;
	uint8_t data[];
};

static int upload_run(void *qdata, void *wdata, void *job)
{
	struct writer *w = qdata;
	struct upload *u = job;
	char tag[CA_OCI_TAG_MAX];
	(void)wdata;
	ca_oci_chunk_tag(w->o, u->id, tag);
	int r = ca_oci_has(w->o, tag);
	if (r == 1) {
		pthread_mutex_lock(&w->lock);
		w->skipped++;
		w->skipped_bytes += u->n;
		pthread_mutex_unlock(&w->lock);
		return 0;
	}
	if (r == 0 && w->o->crypt) { /* what is uploaded is sealed */
		struct ca_buf sealed = CA_BUF_INIT;
		r = ca_crypt_seal(w->o->crypt, u->data, u->n, &sealed);
		if (r == 0)
			r = ca_oci_put(w->o, tag, CA_OCI_CHUNK_TYPE, sealed.data, sealed.size);
		ca_buf_release(&sealed);
	} else if (r == 0) {
		r = ca_oci_put(w->o, tag, CA_OCI_CHUNK_TYPE, u->data, u->n);
	}
	return r;
}

static void upload_done(void *qdata, void *job, int r)
{
	(void)qdata;
	(void)r;
	free(job);
}

static int writer_has(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	(void)be;
	(void)id;
	return 0; /* found out in put, in parallel */
}

static int writer_put(void *be, struct ca_codec *codec, const uint8_t id[CA_CHUNK_ID_SIZE], const void *p, size_t n)
{
	struct writer *w = be;
	(void)codec; /* the chunk source verifies what it reads back */
	int r = ca_workq_error(w->q);
	if (r < 0)
		return r;
	struct upload *u = malloc(sizeof(*u) + n);
	if (!u)
		return -ENOMEM;
	memcpy(u->id, id, CA_CHUNK_ID_SIZE);
	u->n = n;
	memcpy(u->data, p, n);
	r = ca_workq_submit(w->q, u, n);
	if (r < 0) {
		free(u);
		return r;
	}
	return 1;
}

static int writer_finish(void *be, uint64_t *ret_skipped, uint64_t *ret_skipped_bytes)
{
	struct writer *w = be;
	int r = ca_workq_drain(w->q);
	if (ret_skipped)
		*ret_skipped = w->skipped;
	if (ret_skipped_bytes)
		*ret_skipped_bytes = w->skipped_bytes;
	return r;
}

static void writer_free(void *be)
{
	struct writer *w = be;
	if (!w)
		return;
	ca_workq_free(w->q);
	ca_oci_free(w->o);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

static const struct ca_store_writer_ops writer_ops = {
	.kind = "oci",
	.has = writer_has,
	.put = writer_put,
	.finish = writer_finish,
	.free = writer_free,
};

static const struct ca_workq_ops upload_ops = { .run = upload_run, .done = upload_done };

int ca_oci_writer_open(const char *url, const struct ca_http_opts *http, struct ca_store_writer **ret)
{
	struct ca_endpoint e;
	struct writer *w = calloc(1, sizeof(*w));
	int r = w ? ca_endpoint_init(&e, url, http, NULL) : -ENOMEM;
	if (!w)
		return r;
	pthread_mutex_init(&w->lock, NULL);
	if (r == 0) {
		r = ca_oci_open(&e, false, NULL, &w->o);
		ca_endpoint_clear(&e);
	}
	struct ca_workq_opts qo = { .workers = WRITERS, .max_jobs = 64, .max_cost = 32u << 20, .stop_on_error = true };
	if (r == 0)
		r = ca_workq_new(&upload_ops, w, &qo, &w->q);
	if (r == 0)
		r = ensure_config(w->o); /* and so: the registry answers, and lets us write */
	if (r < 0) {
		writer_free(w);
		return r;
	}
	return ca_store_writer_new(&writer_ops, w, url, ret);
}

/* ---- gc ---- */

/* The next page's "/v2/..." from a Link header: </v2/R/tags/list?...>; rel="next" */
static int next_link(const struct ca_oci *o, const char *link, char **ret)
{
	*ret = NULL;
	if (!link[0] || !strstr(link, "rel=\"next\""))
		return 0;
	const char *a = strchr(link, '<'), *b = a ? strchr(a, '>') : NULL;
	if (!a || !b || b - a < 2)
		return -EBADMSG;
	a++;
	if (*a == '/') {
		if (asprintf(ret, "%s%.*s", o->base, (int)(b - a), a) < 0)
			return -ENOMEM;
	} else if (!strncmp(a, o->base, strlen(o->base)) && a[strlen(o->base)] == '/') {
		/* the base and a '/': "http://HOST:PORT@elsewhere/" or
		 * "http://HOST:PORT0/" begin with the base too */
		if (!(*ret = strndup(a, (size_t)(b - a))))
			return -ENOMEM;
	} else {
		return -EBADMSG; /* another host: not ours to follow */
	}
	return 0;
}

static int gc_one(struct ca_oci *o, const char *tag, const struct ca_store_gc_opts *go, struct ca_store_gc_stats *st)
{
	struct ca_http_reply rep = { 0 };
	char rest[CA_OCI_TAG_MAX + 64], digest[DIGEST_LEN + 1], layer[DIGEST_LEN + 1];
	uint64_t size = 0;
	snprintf(rest, sizeof(rest), "/manifests/%s", tag);
	int r = request(o, "GET", rest, NULL, false, MANIFEST_TYPE, NULL, 0, NULL, CA_OCI_MANIFEST_MAX, &rep);
	if (r == 0)
		r = parse_manifest(&rep.body, CA_OCI_CHUNK_TYPE, layer, &size);
	if (r == -ENOENT) {
		r = 0; /* gone meanwhile, or not a chunk: left alone */
		goto out;
	}
	if (r == 0)
		r = sha256_digest(rep.body.data, rep.body.size, digest);
	if (r == 0 && !go->dry_run) {
		snprintf(rest, sizeof(rest), "/manifests/%s", digest);
		r = request(o, "DELETE", rest, NULL, true, NULL, NULL, 0, NULL, 4096, &rep);
		if (r == -ENOENT)
			r = 0;
	}
	if (r == 0) {
		st->removed++;
		st->removed_bytes += size;
	} else {
		st->failed++;
	}
	if (go->on_chunk)
		go->on_chunk(go->userdata, tag, r);
out:
	ca_http_reply_clear(&rep);
	return r;
}

int ca_oci_gc(const char *url, const struct ca_http_opts *http, const struct ca_store_gc_opts *go,
              struct ca_store_gc_stats *ret)
{
	struct ca_endpoint e;
	struct ca_oci *o = NULL;
	struct ca_http_reply rep = { 0 };
	char *page = NULL, tag[CA_OCI_TAG_MAX];
	struct ca_store_gc_stats st = { 0 };
	char **seen = NULL; /* the pages asked for */
	size_t n_seen = 0;
	int r = ca_endpoint_init(&e, url, http, NULL);
	if (r == 0)
		r = ca_oci_open(&e, false, NULL, &o);
	if (r == 0 && asprintf(&page, "%s/v2/%s/tags/list?n=%d", o->base, o->repo, TAG_PAGE) < 0) {
		page = NULL;
		r = -ENOMEM;
	}
	while (r == 0 && page) {
		if (go->cancel && *go->cancel) {
			r = -ECANCELED;
			break;
		}
		/* a page asked for before: the Links go round for ever */
		for (size_t i = 0; i < n_seen && r == 0; i++)
			if (!strcmp(seen[i], page)) {
				ca_log_error("%s: the tag list's pages go round in a loop: refused", o->shown);
				r = -EBADMSG;
			}
		char **v = r == 0 ? realloc(seen, (n_seen + 1) * sizeof(*seen)) : NULL;
		if (v)
			seen = v;
		if (r == 0 && (!v || !(seen[n_seen] = strdup(page))))
			r = -ENOMEM;
		if (r < 0)
			break;
		n_seen++;
		r = request(o, "GET", NULL, page, false, "application/json", NULL, 0, NULL, TAG_LIST_MAX, &rep);
		free(page);
		page = NULL;
		if (r == -ENOENT) { /* no such repository: nothing to collect */
			r = 0;
			break;
		}
		struct ca_json doc, tags, t;
		size_t pos = 0;
		if (r == 0 && (ca_json_parse((const char *)rep.body.data, rep.body.size, &doc) < 0 ||
		               ca_json_member(doc, "tags", &tags) < 0)) {
			ca_log_error("%s: the tag list is not one", o->shown);
			r = -EBADMSG;
		}
		if (r == 0 && tags.p[0] == 'n') /* "tags": null */
			tags = (struct ca_json){ "[]", 2 };
		if (r == 0 && tags.p[0] != '[') { /* iterating it would not move on */
			ca_log_error("%s: the tag list is not one", o->shown);
			r = -EBADMSG;
		}
		int k;
		while (r == 0 && (k = ca_json_next(tags, &pos, &t)) != 0) {
			uint8_t id[CA_CHUNK_ID_SIZE];
			if (k < 0) {
				r = k;
				break;
			}
			if (ca_json_string(t, tag, sizeof(tag)) < 0 || chunk_tag_id(o, tag, id) < 0)
				continue; /* not a chunk's tag (or not a string): not ours */
			if (ca_idset_get(go->keep, id, NULL) == 1) {
				st.kept++;
				continue;
			}
			if (go->cancel && *go->cancel) {
				r = -ECANCELED;
				break;
			}
			(void)gc_one(o, tag, go, &st); /* counted and reported */
		}
		if (r == 0) {
			r = next_link(o, rep.link, &page);
			if (r == -EBADMSG)
				ca_log_error("%s: the tag list's next page is elsewhere: refused", o->shown);
		}
	}
	for (size_t i = 0; i < n_seen; i++)
		free(seen[i]);
	free(seen);
	if (r == 0 && st.failed)
		r = -EIO;
	*ret = st;
	free(page);
	ca_http_reply_clear(&rep);
	ca_oci_free(o);
	ca_endpoint_clear(&e);
	return r;
}
