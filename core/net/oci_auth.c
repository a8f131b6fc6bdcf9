/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* oci_auth.c - registry credentials and bearer tokens (see oci_auth.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/trusted_file.h"
#include "net/oci_auth.h"

#define TOKEN_BODY_MAX (64u << 10)
#define AUTH_FILE_MAX (1u << 20)
#define TOKENS 4
#define TOKEN_LIFE_DEFAULT_S 60
#define FIELD_MAX 1024

struct token {
	char *scope, *line; /* line: "Authorization: Bearer ..." */
	uint64_t expires_ms;
};

struct ca_oci_auth {
	char *host;
	bool https;
	char *basic; /* "user:password" in base64, or NULL */
	pthread_mutex_t lock;  /* guards tokens and basic_on */
	pthread_mutex_t fetch; /* one token request at a time */
	struct token tokens[TOKENS];
	unsigned next_slot;
	bool basic_on; /* the registry asked for basic auth */
};

static void free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

static char *b64_encode(const unsigned char *p, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
		*o++ = t[v >> 18 & 63];
		*o++ = t[v >> 12 & 63];
		*o++ = i + 1 < n ? t[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? t[v & 63] : '=';
	}
	*o = 0;
	return out;
}

/* Decoded base64 (strict, padding optional) or NULL. */
static char *b64_decode(const char *s)
{
	size_t n = strlen(s), k = 0;
	char *out = malloc(n / 4 * 3 + 4);
	unsigned v = 0, bits = 0;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const char *c = s[i] ? strchr(t, s[i]) : NULL;
		if (s[i] == '=')
			break;
		if (!c) {
			free_secret(out);
			return NULL;
		}
		v = v << 6 | (unsigned)(c - t);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (char)(v >> bits & 0xff);
		}
	}
	out[k] = 0;
	explicit_bzero(&v, sizeof(v));
	if (strlen(out) != k) { /* a NUL inside */
		free_secret(out);
		return NULL;
	}
	return out;
}

/* base64("user:password"), or NULL (*r set on error). */
static char *basic_of(const char *user, const char *password, int *r)
{
	char *up = NULL, *b = NULL;
	if (asprintf(&up, "%s:%s", user, password ? password : "") < 0) {
		*r = -ENOMEM;
		return NULL;
	}
	b = b64_encode((const unsigned char *)up, strlen(up));
	free_secret(up);
	if (!b)
		*r = -ENOMEM;
	return b;
}

/* Whether an auth file's key names host: "HOST[:PORT]", perhaps with a
 * scheme before it and a path after it (docker's old keys). */
static bool key_names(const char *key, const char *host)
{
	const char *k = strstr(key, "://");
	k = k ? k + 3 : key;
	size_t n = strcspn(k, "/");
	return n == strlen(host) && !strncasecmp(k, host, n);
}

/* The auth entry for host in the auth file at path: base64 into *ret
 * (NULL if none). Unreadable or malformed files are skipped (debug); one
 * that someone else could have written (trusted_file.h: it chooses the
 * credentials sent) is skipped with a warning. */
static int auth_file(const char *path, const char *host, char **ret)
{
	char *buf = NULL, why[CA_TRUSTED_FILE_WHY_MAX];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK), r = 0;
	*ret = NULL;
	if (fd < 0)
		return 0;
	size_t n = 0;
	if (fstat(fd, &st) < 0)
		goto out;
	if (ca_trusted_file_check(&st, S_IFREG, why) < 0) {
		ca_log_warning("%s: %s; its credentials are not used", path, why);
		goto out;
	}
	buf = malloc(AUTH_FILE_MAX);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t k = read(fd, buf + n, AUTH_FILE_MAX - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == AUTH_FILE_MAX)
			break;
	}
	struct ca_json doc, auths, v, a;
	size_t pos = 0;
	char key[512];
	if (n == AUTH_FILE_MAX || ca_json_parse(buf, n, &doc) < 0 || ca_json_member(doc, "auths", &auths) < 0) {
		ca_log_debug("%s: not an auth file, skipped", path);
		goto out;
	}
	int k;
	while ((k = ca_json_next_member(auths, &pos, key, sizeof(key), &v)) != 0) {
		if (k == -E2BIG)
			break;
		if (k < 0)
			break;
		if (!key_names(key, host) || ca_json_member(v, "auth", &a) < 0)
			continue;
		char *s = malloc(a.n + 1);
		if (!s) {
			r = -ENOMEM;
			goto out;
		}
		if (ca_json_string(a, s, a.n + 1) == 0 && s[0]) {
			*ret = s;
			break;
		}
		free_secret(s);
	}
out:
	if (buf) {
		explicit_bzero(buf, n);
		free(buf);
	}
	close(fd);
	return r;
}

/* The credentials of the auth files (oci_auth.h's order). */
static int from_auth_files(const char *host, char **ret)
{
	char *path = NULL;
	const char *e;
	int r = 0;
	*ret = NULL;
	if ((e = getenv("REGISTRY_AUTH_FILE")) && *e)
		r = auth_file(e, host, ret);
	if (r == 0 && !*ret && (e = getenv("XDG_RUNTIME_DIR")) && *e) {
		if (asprintf(&path, "%s/containers/auth.json", e) < 0)
			return -ENOMEM;
		r = auth_file(path, host, ret);
		free(path);
	}
	if (r == 0 && !*ret && (e = getenv("HOME")) && *e) {
		if (asprintf(&path, "%s/.docker/config.json", e) < 0)
			return -ENOMEM;
		r = auth_file(path, host, ret);
		free(path);
	}
	if (*ret) {
		/* it must decode to "user:password" */
		char *plain = b64_decode(*ret);
		bool ok = plain && strchr(plain, ':') && !strpbrk(plain, "\r\n");
		free_secret(plain);
		if (!ok) {
			ca_log_debug("%s: the auth file's entry is not base64 of user:password, ignored", host);
			free_secret(*ret);
			*ret = NULL;
		}
	}
	return r;
}

int ca_oci_auth_new(const char *host, bool https, const char *user, const char *password, struct ca_oci_auth **ret)
{
	int r = 0;
	struct ca_oci_auth *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	pthread_mutex_init(&a->fetch, NULL);
	a->https = https;
	if (!(a->host = strdup(host)))
		r = -ENOMEM;
	const char *eu = getenv("CAFS_REGISTRY_USER");
	if (r == 0 && user && *user)
		a->basic = basic_of(user, password, &r);
	else if (r == 0 && eu && *eu)
		a->basic = basic_of(eu, getenv("CAFS_REGISTRY_PASSWORD"), &r);
	else if (r == 0)
		r = from_auth_files(host, &a->basic);
	if (r < 0) {
		ca_oci_auth_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

void ca_oci_auth_free(struct ca_oci_auth *a)
{
	if (!a)
		return;
	for (unsigned i = 0; i < TOKENS; i++) {
		free(a->tokens[i].scope);
		free_secret(a->tokens[i].line);
	}
	free_secret(a->basic);
	free(a->host);
	pthread_mutex_destroy(&a->lock);
	pthread_mutex_destroy(&a->fetch);
	free(a);
}

bool ca_oci_auth_has_credentials(const struct ca_oci_auth *a)
{
	return a->basic != NULL;
}

/* The valid token for scope, under a->lock. */
static struct token *token_of(struct ca_oci_auth *a, const char *scope)
{
	uint64_t now = ca_now_ms();
	for (unsigned i = 0; i < TOKENS; i++)
		if (a->tokens[i].scope && !strcmp(a->tokens[i].scope, scope) && a->tokens[i].expires_ms > now)
			return &a->tokens[i];
	return NULL;
}

void ca_oci_auth_line(struct ca_oci_auth *a, const char *scope, char *line, size_t cap)
{
	line[0] = 0;
	pthread_mutex_lock(&a->lock);
	struct token *t = token_of(a, scope);
	if (t && strlen(t->line) < cap)
		strcpy(line, t->line);
	else if (!t && a->basic_on && a->basic)
		snprintf(line, cap, "Authorization: Basic %s", a->basic);
	pthread_mutex_unlock(&a->lock);
}

void ca_oci_auth_param(const char *ch, const char *name, char *out, size_t cap)
{
	size_t k = strlen(name);
	out[0] = 0;
	for (const char *p = ch; *p;) {
		while (*p == ' ' || *p == ',' || *p == '\t')
			p++;
		const char *eq = strchr(p, '=');
		if (!eq)
			return;
		bool match = (size_t)(eq - p) == k && !strncasecmp(p, name, k);
		const char *v = eq + 1, *e;
		size_t n = 0;
		if (*v == '"') {
			v++;
			for (e = v; *e && *e != '"'; e++)
				if (*e == '\\' && e[1])
					e++;
			if (match) {
				for (const char *q = v; q < e && n + 1 < cap; q++) {
					if (*q == '\\' && q + 1 < e)
						q++;
					out[n++] = *q;
				}
				out[n] = 0;
				return;
			}
			p = *e ? e + 1 : e;
		} else {
			e = v + strcspn(v, ",");
			if (match) {
				n = (size_t)(e - v) < cap - 1 ? (size_t)(e - v) : cap - 1;
				memcpy(out, v, n);
				out[n] = 0;
				return;
			}
			p = e;
		}
	}
}

/* A URL query value, percent-encoded into out. */
static void query_escape(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	for (; *s && n + 4 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~:/,", c))
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, cap - n, "%%%02X", c);
	}
	out[n] = 0;
}

/* A token from realm; the new line stored for scope. */
static int fetch_token(struct ca_oci_auth *a, struct ca_http *h, const char *challenge, const char *scope)
{
	char realm[FIELD_MAX], service[FIELD_MAX], cscope[FIELD_MAX], es[3 * FIELD_MAX], esc[3 * FIELD_MAX];
	char *url = NULL, *auth_line = NULL, *tok = NULL, *line = NULL;
	struct ca_http_reply rep = { 0 };
	int r = 0;
	ca_oci_auth_param(challenge + strlen("Bearer"), "realm", realm, sizeof(realm));
	ca_oci_auth_param(challenge + strlen("Bearer"), "service", service, sizeof(service));
	ca_oci_auth_param(challenge + strlen("Bearer"), "scope", cscope, sizeof(cscope));
	bool realm_https = !strncasecmp(realm, "https://", 8);
	if (!realm_https && strncasecmp(realm, "http://", 7) != 0) {
		ca_log_error("%s: the registry's token realm is not an http(s) URL", a->host);
		return -EPROTO;
	}
	if (a->https && !realm_https) {
		ca_log_error("%s: the registry sends its clients for tokens to a plain http:// realm: refused", a->host);
		return -EPROTO;
	}
	/* the scope the registry asked for: ours when it named none */
	query_escape(service, es, sizeof(es));
	query_escape(cscope[0] ? cscope : scope, esc, sizeof(esc));
	if (asprintf(&url, "%s%s%s%s&scope=%s", realm, strchr(realm, '?') ? "&" : "?", service[0] ? "service=" : "",
	             service[0] ? es : "", esc) < 0) {
		url = NULL;
		r = -ENOMEM;
		goto out;
	}
	if (a->basic && asprintf(&auth_line, "Authorization: Basic %s", a->basic) < 0) {
		auth_line = NULL;
		r = -ENOMEM;
		goto out;
	}
	const char *hdrs[1] = { auth_line };
	struct ca_http_request rq = { .method = "GET", .url = url, .headers = hdrs, .n_headers = auth_line ? 1 : 0,
	                              .cap = TOKEN_BODY_MAX };
	r = ca_http_request(h, &rq, &rep);
	if (r == -EACCES) {
		ca_log_debug("%s: the token service refused %s", a->host, a->basic ? "our credentials" : "an anonymous client");
		goto out;
	}
	if (r < 0) {
		ca_log_debug("%s: token request: %s", a->host, strerror(-r));
		goto out;
	}
	struct ca_json doc, v;
	uint64_t life = TOKEN_LIFE_DEFAULT_S;
	if (ca_json_parse((const char *)rep.body.data, rep.body.size, &doc) < 0 ||
	    (ca_json_member(doc, "token", &v) < 0 && ca_json_member(doc, "access_token", &v) < 0) ||
	    !(tok = malloc(v.n + 1)) || ca_json_string(v, tok, v.n + 1) < 0 || !tok[0]) {
		r = tok || v.n == 0 ? -EBADMSG : -ENOMEM;
		ca_log_error("%s: the token service's answer is not a token", a->host);
		goto out;
	}
	for (const char *p = tok; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			r = -EBADMSG;
			ca_log_error("%s: the token service's token holds a control character", a->host);
			goto out;
		}
	if (ca_json_member(doc, "expires_in", &v) == 0 && ca_json_u64(v, &life) == 0 && life == 0)
		life = TOKEN_LIFE_DEFAULT_S;
	if (life > 86400)
		life = 86400;
	if (asprintf(&line, "Authorization: Bearer %s", tok) < 0) {
		line = NULL;
		r = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	struct token *t = NULL;
	for (unsigned i = 0; i < TOKENS && !t; i++)
		if (a->tokens[i].scope && !strcmp(a->tokens[i].scope, scope))
			t = &a->tokens[i];
	if (!t)
		t = &a->tokens[a->next_slot++ % TOKENS];
	char *sc = strdup(scope);
	if (sc) {
		free(t->scope);
		free_secret(t->line);
		t->scope = sc;
		t->line = line;
		/* a little early: a token must not expire on its way */
		t->expires_ms = ca_now_ms() + (life > 10 ? life - 5 : life) * 1000;
		line = NULL;
	} else {
		r = -ENOMEM;
	}
	pthread_mutex_unlock(&a->lock);
out:
	if (rep.body.data)
		explicit_bzero(rep.body.data, rep.body.size);
	ca_http_reply_clear(&rep);
	free_secret(auth_line);
	free_secret(tok);
	free_secret(line);
	free(url);
	return r;
}

int ca_oci_auth_challenge(struct ca_oci_auth *a, struct ca_http *h, const char *challenge, const char *scope)
{
	int r;
	if (!strncasecmp(challenge, "Basic", 5)) {
		/* the caller asks again a bounded number of times: a request
		 * that went out before another thread armed basic auth may
		 * retry with it */
		pthread_mutex_lock(&a->lock);
		a->basic_on = true;
		pthread_mutex_unlock(&a->lock);
		return a->basic ? 0 : -EACCES;
	}
	if (strncasecmp(challenge, "Bearer", 6) != 0)
		return -EACCES;
	pthread_mutex_lock(&a->fetch);
	/* another thread may have fetched the token meanwhile */
	pthread_mutex_lock(&a->lock);
	bool have = token_of(a, scope) != NULL;
	pthread_mutex_unlock(&a->lock);
	r = have ? 0 : fetch_token(a, h, challenge, scope);
	pthread_mutex_unlock(&a->fetch);
	return r;
}
