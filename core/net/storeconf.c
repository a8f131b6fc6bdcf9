/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* storeconf.c - the store settings file (see storeconf.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/location.h"
#include "base/log.h"
#include "base/secret.h"
#include "net/storeconf.h"
#include "base/trusted_file.h"
#include "store/crypt.h"
#include "store/store.h"

struct section {
	struct ca_store_settings s;
	char *prefix; /* s.prefix points here */
	unsigned file; /* which load it came from: a later file's replaces it */
	bool secrets;  /* sets a secret (for the mode warning) */
};

struct ca_storeconf {
	struct section *v;
	size_t n;
	unsigned files;
};

/* ---- keys ---- */

enum kind { K_STR, K_SECRET, K_HEADER, K_NETRC, K_YESNO, K_UINT, K_INT, K_CRYPT, K_KEY, K_KEYFILE };

struct key {
	const char *name;
	enum kind kind;
	size_t off;
	unsigned long min, max;
};

#define S(f) offsetof(struct ca_store_settings, f)
static const struct key keys[] = {
	{ "header", K_HEADER, 0, 0, 0 },
	{ "user", K_STR, S(user), 0, 0 },
	{ "password", K_SECRET, S(password), 0, 0 },
	{ "netrc", K_NETRC, S(netrc), 0, 0 },
	{ "client-cert", K_STR, S(client_cert), 0, 0 },
	{ "client-key", K_STR, S(client_key), 0, 0 },
	{ "client-key-password", K_SECRET, S(client_key_password), 0, 0 },
	{ "ca-file", K_STR, S(ca_file), 0, 0 },
	{ "connect-timeout", K_UINT, S(connect_timeout_s), 1, 3600 },
	{ "low-speed-limit", K_UINT, S(low_speed_limit), 1, 1ul << 30 },
	{ "low-speed-time", K_UINT, S(low_speed_time_s), 1, 3600 },
	{ "deadline", K_UINT, S(deadline_s), 1, 86400 },
	{ "retries", K_INT, S(retries), 0, 20 },
	{ "connections", K_UINT, S(connections), 1, 256 },
	{ "store-query", K_YESNO, S(store_query), 0, 0 },
	{ "aws-access-key-id", K_STR, S(aws_access_key_id), 0, 0 },
	{ "aws-secret-access-key", K_SECRET, S(aws_secret_access_key), 0, 0 },
	{ "aws-session-token", K_SECRET, S(aws_session_token), 0, 0 },
	{ "aws-region", K_STR, S(aws_region), 0, 0 },
	{ "encryption", K_CRYPT, S(encryption), 0, 0 },
	{ "encryption-key", K_KEY, S(encryption_key), 0, 0 },
	{ "encryption-key-file", K_KEYFILE, S(encryption_key_file), 0, 0 },
};
#undef S

static char **str_field(struct ca_store_settings *s, const struct key *k)
{
	return (char **)((char *)s + k->off);
}

/* ---- sections ---- */


static void section_release(struct section *x)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (keys[i].kind == K_STR || keys[i].kind == K_SECRET || keys[i].kind == K_KEY || keys[i].kind == K_KEYFILE)
			ca_secret_free(*str_field(&x->s, &keys[i]));
	for (size_t i = 0; i < x->s.n_headers; i++)
		ca_secret_free(x->s.headers[i]);
	free(x->s.headers);
	ca_secret_free(x->s.netrc_file);
	free(x->prefix);
	memset(x, 0, sizeof(*x));
}

static void section_init(struct section *x)
{
	*x = (struct section){ 0 };
	x->s.retries = -1;
	x->s.netrc = CA_SET_UNSET;
	x->s.store_query = CA_SET_UNSET;
}

/* ---- URLs ---- */

/* The length of "scheme://" in s, or 0. */
static size_t scheme_end(const char *s)
{
	const char *p = strstr(s, "://");
	if (!p || p == s || !ca_location_is_url(s))
		return 0;
	return (size_t)(p - s) + 3;
}

/* The authority of u (from a = scheme_end): [*ret_host, *ret_end), with
 * any userinfo skipped as libcurl and the redaction do (the last '@'). */
static void authority(const char *u, size_t a, size_t *ret_host, size_t *ret_end)
{
	size_t e = a + strcspn(u + a, "/?#");
	const char *at = memrchr(u + a, '@', e - a);
	*ret_host = at ? (size_t)(at - u) + 1 : a;
	*ret_end = e;
}

static char *local_url(const char *path);

/* A section's prefix, normalised: scheme and host in lower case, a '/'
 * after a bare host. NULL with *why set when it is not one. */
static char *prefix_normalise(const char *p, size_t n, const char **why)
{
	char *s = n && p[0] == '/' ? NULL : strndup(p, n), *r = NULL;
	size_t a, h, e;
	*why = NULL;
	if (n && p[0] == '/' && asprintf(&s, "file://%.*s", (int)n, p) < 0)
		s = NULL;
	if (!s)
		return NULL;
	a = scheme_end(s);
	if (a == 7 && !strncmp(s, "file://", 7)) { /* a local store's directory */
		if (s[7] != '/') {
			*why = "a local store's section is its absolute path";
			free(s);
			return NULL;
		}
		/* as lookups see paths (local_url): else a section written
		 * "[/srv//store]" or through a symlink would not find itself */
		r = local_url(s + 7);
		free(s);
		return r;
	}
	if (!a || strpbrk(s, " \t")) {
		*why = "expected [scheme://host/prefix]";
		goto out;
	}
	authority(s, a, &h, &e);
	if (h != a) {
		*why = "a section's URL may not hold user:password (use user = and password =)";
		goto out;
	}
	if (e == a) {
		*why = "a section's URL names no host";
		goto out;
	}
	for (size_t i = 0; i < e; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			s[i] = (char)(s[i] - 'A' + 'a');
	if (asprintf(&r, "%.*s%s%s", (int)e, s, s[e] == '/' ? "" : "/", s + e) < 0)
		r = NULL;
out:
	free(s);
	return r;
}

/* Whether normalised prefix p is a prefix of url (compared as above). */
static bool prefix_matches(const char *p, const char *url)
{
	size_t a = scheme_end(url), pa = scheme_end(p), h, e, ph, pe;
	if (!a || a != pa || strncasecmp(url, p, a))
		return false;
	authority(url, a, &h, &e);
	authority(p, pa, &ph, &pe);
	if (e - h != pe - ph || strncasecmp(url + h, p + ph, e - h))
		return false;
	const char *rest = url + e, *prest = p + pe; /* prest starts with '/' */
	if (*rest != '/')
		prest++; /* "https://h" and "https://h?q" are under "https://h/" */
	return !strncmp(rest, prest, strlen(prest));
}

/* ---- parsing ---- */

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A key's name as typed, if it is safe to repeat in a message (it could
 * be a mistyped secret otherwise). */
static bool showable(const char *k)
{
	size_t n = strlen(k);
	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9') ||
		      k[i] == '-' || k[i] == '_'))
			return false;
	return true;
}

struct parser {
	const char *name;
	unsigned line;
	struct section *v; /* this file's sections */
	size_t n;
	struct section *cur;
};

#define BAD(p, ...) (ca_log_error("%s:%u: " __VA_ARGS__), -EINVAL)

static int set_key(struct parser *p, const char *key, const char *val)
{
	struct ca_store_settings *s = &p->cur->s;
	const struct key *k = NULL;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !k; i++)
		if (!strcmp(key, keys[i].name))
			k = &keys[i];
	if (!k)
		return showable(key) ? BAD(p, "unknown key '%s'", p->name, p->line, key)
		                     : BAD(p, "malformed line (expected key = value)", p->name, p->line);
	if (!*val)
		return BAD(p, "%s: no value", p->name, p->line, k->name);
	for (const char *c = val; *c; c++)
		if ((unsigned char)*c < 0x20 ? *c != '\t' : *c == 0x7f)
			return BAD(p, "%s: the value holds a control character", p->name, p->line, k->name);
	switch (k->kind) {
	case K_HEADER: {
		const char *colon = val;
		while (tchar(*colon))
			colon++;
		if (colon == val || *colon != ':') /* before looking past it: it may be the end */
			return BAD(p, "header: expected 'Name: value'", p->name, p->line);
		const char *v = colon + 1;
		while (blank(*v))
			v++;
		if (!*v)
			return BAD(p, "header: expected 'Name: value'", p->name, p->line);
		char **n = realloc(s->headers, (s->n_headers + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->headers = n;
		if (!(n[s->n_headers] = strdup(val)))
			return -ENOMEM;
		s->n_headers++;
		p->cur->secrets = true; /* a header is how tokens are sent */
		return 0;
	}
	case K_CRYPT: {
		enum ca_crypt_alg alg;
		if (s->encryption)
			return BAD(p, "%s: given twice in this section", p->name, p->line, k->name);
		if (ca_crypt_alg_parse(val, &alg) < 0)
			return BAD(p, "%s: expected xchacha20-poly1305 or aes-256-gcm", p->name, p->line, k->name);
		s->encryption = (int)alg;
		return 0;
	}
	case K_KEY:
	case K_KEYFILE:
	case K_STR:
	case K_SECRET: {
		char **f = str_field(s, k);
		uint8_t kb[CA_CRYPT_KEY_SIZE];
		if (*f)
			return BAD(p, "%s: given twice in this section", p->name, p->line, k->name);
		if (k->kind == K_KEY && ca_crypt_key_parse_hex(val, kb) < 0)
			return BAD(p, "%s: expected 64 hex digits (a 256-bit key)", p->name, p->line, k->name);
		explicit_bzero(kb, sizeof(kb));
		if (k->kind == K_KEYFILE && val[0] != '/')
			return BAD(p, "%s: expected an absolute file name", p->name, p->line, k->name);
		if ((k->kind == K_KEY && s->encryption_key_file) || (k->kind == K_KEYFILE && s->encryption_key))
			return BAD(p, "%s: give encryption-key or encryption-key-file, not both", p->name, p->line,
			           k->name);
		if (!(*f = strdup(val)))
			return -ENOMEM;
		if (k->kind == K_SECRET || k->kind == K_KEY)
			p->cur->secrets = true;
		return 0;
	}
	case K_NETRC:
	case K_YESNO: {
		int *f = (int *)((char *)s + k->off);
		if (*f != CA_SET_UNSET)
			return BAD(p, "%s: given twice in this section", p->name, p->line, k->name);
		if (!strcmp(val, "yes"))
			*f = CA_SET_YES;
		else if (!strcmp(val, "no"))
			*f = CA_SET_NO;
		else if (k->kind == K_NETRC && val[0] == '/') {
			*f = CA_SET_YES;
			if (!(s->netrc_file = strdup(val)))
				return -ENOMEM;
		} else if (k->kind == K_NETRC)
			return BAD(p, "%s: expected yes, no or an absolute file name", p->name, p->line, k->name);
		else
			return BAD(p, "%s: expected yes or no", p->name, p->line, k->name);
		return 0;
	}
	case K_UINT:
	case K_INT: {
		char *end;
		unsigned long v;
		bool set = k->kind == K_INT ? *(int *)((char *)s + k->off) >= 0 : *(unsigned *)((char *)s + k->off) > 0;
		if (set)
			return BAD(p, "%s: given twice in this section", p->name, p->line, k->name);
		errno = 0;
		v = strtoul(val, &end, 10);
		if (val[0] < '0' || val[0] > '9' || errno || *end || v < k->min || v > k->max)
			return BAD(p, "%s: expected a number from %lu to %lu", p->name, p->line, k->name, k->min, k->max);
		if (k->kind == K_INT)
			*(int *)((char *)s + k->off) = (int)v;
		else
			*(unsigned *)((char *)s + k->off) = (unsigned)v;
		return 0;
	}
	}
	return -EINVAL;
}

static int open_section(struct parser *p, const char *inner, size_t n)
{
	const char *why;
	char *prefix = prefix_normalise(inner, n, &why);
	if (!prefix)
		return why ? BAD(p, "%s", p->name, p->line, why) : -ENOMEM;
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].prefix, prefix)) {
			free(prefix);
			return BAD(p, "this section is given twice in the file", p->name, p->line);
		}
	struct section *v = realloc(p->v, (p->n + 1) * sizeof(*v));
	if (!v) {
		free(prefix);
		return -ENOMEM;
	}
	p->v = v;
	p->cur = &v[p->n++];
	section_init(p->cur);
	p->cur->prefix = prefix;
	p->cur->s.prefix = prefix;
	return 0;
}

/* One line, its end-of-line stripped; l is writable. */
static int parse_line(struct parser *p, char *l)
{
	size_t n = strlen(l);
	while (blank(*l))
		l++, n--;
	while (n && blank(l[n - 1]))
		l[--n] = 0;
	if (!n || l[0] == '#' || l[0] == ';')
		return 0;
	if (l[0] == '[') {
		if (l[n - 1] != ']' || n < 3)
			return BAD(p, "malformed section header (expected [URL])", p->name, p->line);
		return open_section(p, l + 1, n - 2);
	}
	char *eq = strchr(l, '=');
	if (!eq)
		return BAD(p, "malformed line (expected key = value)", p->name, p->line);
	if (!p->cur)
		return BAD(p, "a setting before any [URL] section", p->name, p->line);
	char *v = eq + 1;
	*eq = 0;
	while (eq > l && blank(eq[-1]))
		*--eq = 0;
	while (blank(*v))
		v++;
	return set_key(p, l, v);
}

int ca_storeconf_new(struct ca_storeconf **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void ca_storeconf_free(struct ca_storeconf *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		section_release(&c->v[i]);
	free(c->v);
	free(c);
}

/* Take p's sections into c: one of a prefix c has already (from an
 * earlier file) replaces it. */
static int merge(struct ca_storeconf *c, struct parser *p)
{
	struct section *v = realloc(c->v, (c->n + p->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->v = v;
	for (size_t i = 0; i < p->n; i++) {
		size_t j = 0;
		while (j < c->n && strcmp(c->v[j].prefix, p->v[i].prefix))
			j++;
		if (j < c->n)
			section_release(&c->v[j]);
		else
			c->n++;
		c->v[j] = p->v[i];
		c->v[j].file = c->files;
	}
	c->files++;
	p->n = 0;
	return 0;
}

static int parse(struct ca_storeconf *c, const char *name, const char *text, size_t len, bool *ret_secrets)
{
	struct parser p = { .name = name };
	char *copy = NULL, *line, *next;
	int r = 0;
	if (memchr(text, 0, len))
		return ca_log_error("%s: holds a NUL byte: not a settings file", name), -EINVAL;
	if (!(copy = strndup(text, len)))
		return ca_log_error_errno(ENOMEM, "%s", name);
	for (line = copy; line && r == 0; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		size_t n = strlen(line);
		if (n && line[n - 1] == '\r')
			line[n - 1] = 0;
		p.line++;
		r = parse_line(&p, line);
	}
	if (r == -ENOMEM)
		ca_log_error_errno(ENOMEM, "%s", name);
	*ret_secrets = false;
	for (size_t i = 0; i < p.n; i++)
		*ret_secrets = *ret_secrets || p.v[i].secrets;
	if (r == 0)
		r = merge(c, &p);
	for (size_t i = 0; i < p.n; i++)
		section_release(&p.v[i]);
	free(p.v);
	explicit_bzero(copy, len);
	free(copy);
	return r;
}

int ca_storeconf_parse(struct ca_storeconf *c, const char *name, const char *text, size_t len)
{
	bool secrets;
	return parse(c, name, text, len, &secrets);
}

/* ---- files ---- */

static int load_file(struct ca_storeconf *c, const char *path, unsigned flags, bool missing_ok)
{
	struct stat st;
	struct ca_buf b = CA_BUF_INIT;
	char why[CA_TRUSTED_FILE_WHY_MAX];
	bool secrets;
	int r = 0;
	/* O_NONBLOCK: a FIFO put there does not hang us (it is refused below) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		if (missing_ok && (r == -ENOENT || r == -ENOTDIR))
			return 0;
		/* a root-only system file is root's business, not an error for others */
		if (missing_ok && r == -EACCES && geteuid() != 0) {
			ca_log_debug("%s: not readable: skipped", path);
			return 0;
		}
		return ca_log_error_errno(r, "%s", path);
	}
	if (fstat(fd, &st) < 0) {
		r = ca_log_error_errno(errno, "%s", path);
		goto out;
	}
	r = ca_trusted_file_check(&st, S_IFREG, why);
	if (r < 0) {
		ca_log_error("%s: %s", path, why);
		goto out;
	}
	if ((uint64_t)st.st_size > CA_STORECONF_FILE_MAX) {
		r = -EFBIG;
		ca_log_error("%s: refused: larger than %zu bytes", path, CA_STORECONF_FILE_MAX);
		goto out;
	}
	/* the size may change while we read: the cap holds whatever happens */
	r = ca_buf_reserve(&b, (size_t)st.st_size + 1, CA_STORECONF_FILE_MAX + 1);
	if (r == 0)
		r = ca_buf_read_fd(&b, fd, CA_STORECONF_FILE_MAX);
	if (r < 0) {
		ca_log_error_errno(r, "%s", path);
		goto out;
	}
	r = parse(c, path, (const char *)b.data, b.size, &secrets);
	if (r == 0 && secrets && (st.st_mode & (S_IRGRP | S_IROTH)) && !(flags & CA_STORECONF_QUIET))
		ca_log_warning("%s: holds secrets and others may read it (chmod go-r)", path);
out:
	if (b.data)
		explicit_bzero(b.data, b.size);
	ca_buf_release(&b);
	close(fd);
	return r;
}

int ca_storeconf_load_file(struct ca_storeconf *c, const char *path, unsigned flags)
{
	return load_file(c, path, flags, false);
}

/* The user's file: $XDG_CONFIG_HOME/cafs/cafs.conf or ~/.config/...;
 * NULL with errno 0 when there is no home. */
static char *user_file(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char *r = NULL;
	errno = 0;
	if (xdg && xdg[0] == '/')
		return asprintf(&r, "%s/cafs/cafs.conf", xdg) < 0 ? NULL : r;
	if (home && home[0] == '/')
		return asprintf(&r, "%s/.config/cafs/cafs.conf", home) < 0 ? NULL : r;
	return NULL;
}

int ca_storeconf_load(unsigned flags, struct ca_storeconf **ret)
{
	struct ca_storeconf *c;
	const char *explicit = getenv("CAFS_CONFIG");
	int r = ca_storeconf_new(&c);
	if (r < 0)
		return ca_log_error_errno(r, "store settings");
	if (explicit) {
		if (*explicit)
			r = load_file(c, explicit, flags, false);
	} else {
		r = load_file(c, CA_STORECONF_SYSTEM, flags, true);
		char *u = r == 0 ? user_file() : NULL;
		if (r == 0 && !u && errno)
			r = ca_log_error_errno(ENOMEM, "store settings");
		if (u)
			r = load_file(c, u, flags, true);
		free(u);
	}
	if (r < 0) {
		ca_storeconf_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

int ca_storeconf_check(void)
{
	struct ca_storeconf *c;
	int r = ca_storeconf_load(0, &c);
	ca_storeconf_free(r < 0 ? NULL : c);
	return r;
}

/* ---- use ---- */

/* A local path as the file:// URL sections of local stores are matched
 * with: absolute, its longest existing ancestor by its real path (the
 * store may not exist yet, nor the index beside it), and a '/' at the end:
 * a store is a directory, so "[/srv/store/]" names it as "[/srv/store]"
 * does. NULL when out of memory. */
static char *local_url(const char *path)
{
	char *abs = NULL, *cut = NULL, *real = NULL, *r = NULL;
	char *cwd = path[0] == '/' ? NULL : getcwd(NULL, 0);
	if (path[0] != '/' && !cwd)
		return NULL;
	if (asprintf(&abs, "%s%s%s", cwd ? cwd : "", cwd ? "/" : "", path) < 0)
		abs = NULL;
	free(cwd);
	if (!abs || !(cut = strdup(abs)))
		goto out;
	size_t n = strlen(abs);
	while (n > 1 && abs[n - 1] == '/')
		abs[--n] = 0;
	for (size_t k = n;;) { /* cut = abs[0..k): the part that is looked up */
		cut[k] = 0;
		if (k == 0 || (real = realpath(cut, NULL)))
			break;
		while (k > 0 && cut[k - 1] != '/')
			k--;
		while (k > 0 && cut[k - 1] == '/')
			k--;
		if (k == 0) /* only "/" is left: it exists */
			continue;
	}
	size_t k = strlen(cut);
	const char *tail = abs + k;
	while (*tail == '/')
		tail++;
	const char *base = real && strcmp(real, "/") ? real : "";
	if (asprintf(&r, "file://%s/%s%s", base, tail, *tail ? "/" : "") < 0)
		r = NULL;
out:
	free(real);
	free(cut);
	free(abs);
	return r;
}

static const struct ca_store_settings *lookup_url(const struct ca_storeconf *c, const char *url)
{
	const struct ca_store_settings *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; c && i < c->n; i++) {
		size_t n = strlen(c->v[i].prefix);
		if (n > best_len && prefix_matches(c->v[i].prefix, url)) {
			best = &c->v[i].s;
			best_len = n;
		}
	}
	return best;
}

const struct ca_store_settings *ca_storeconf_lookup(const struct ca_storeconf *c, const char *url)
{
	const char *path = ca_location_path(url);
	const struct ca_store_settings *best = NULL;
	if (!path)
		return lookup_url(c, url);
	if (!c || !c->n || !*path)
		return NULL;
	char *u = local_url(path);
	best = u ? lookup_url(c, u) : NULL; /* out of memory: as if none */
	free(u);
	return best;
}

void ca_storeconf_apply(const struct ca_store_settings *s, struct ca_http_opts *o)
{
	/* the secrets now go to the HTTP engine and libcurl, for as long as
	 * the engine lives: no core dump may hold them (secret.h) */
	if (s->n_headers || s->password || s->client_key_password || s->aws_secret_access_key || s->aws_session_token)
		ca_secret_hold();
	if (s->n_headers) {
		o->headers = (const char *const *)s->headers;
		o->n_headers = s->n_headers;
	}
	if (s->user)
		o->username = s->user;
	if (s->password)
		o->password = s->password;
	if (s->netrc == CA_SET_NO)
		o->netrc = -1;
	if (s->netrc_file)
		o->netrc_file = s->netrc_file;
	if (s->client_cert)
		o->ssl_cert = s->client_cert;
	if (s->client_key)
		o->ssl_key = s->client_key;
	if (s->client_key_password)
		o->ssl_key_password = s->client_key_password;
	if (s->ca_file)
		o->ca_file = s->ca_file;
	if (s->connect_timeout_s) {
		o->connect_timeout_ms = s->connect_timeout_s * 1000;
		o->stall_timeout_s = s->connect_timeout_s;
	}
	if (s->low_speed_limit)
		o->low_speed_limit = s->low_speed_limit;
	if (s->low_speed_time_s)
		o->stall_timeout_s = s->low_speed_time_s;
	if (s->deadline_s)
		o->total_timeout_s = s->deadline_s;
	if (s->retries >= 0)
		o->retries = s->retries;
	if (s->connections)
		o->max_connections = o->max_transfers = s->connections;
}

char *ca_storeconf_default_store(const struct ca_storeconf *c, const char *index)
{
	char *def = ca_location_default_store(index), *r = NULL;
	const char *q = ca_location_is_url(index) ? strchr(index, '?') : NULL;
	if (!def || !q)
		return def;
	const struct ca_store_settings *s = ca_storeconf_lookup(c, def);
	if (s && s->store_query == CA_SET_YES) {
		if (asprintf(&r, "%s%.*s", def, (int)strcspn(q, "#"), q) < 0)
			r = NULL;
		free(def);
		def = r;
	}
	return def;
}

/* ---- encrypted stores ---- */

int ca_storeconf_crypt(const struct ca_storeconf *c, const char *location, struct ca_crypt **ret)
{
	struct ca_storeconf *own = NULL;
	int r = 0;
	*ret = NULL;
	if (!c) {
		r = ca_storeconf_load(CA_STORECONF_QUIET, &own); /* logs */
		c = own;
	}
	if (r == 0)
		r = ca_storeconf_crypt_of(ca_storeconf_lookup(c, location), location, ret);
	ca_storeconf_free(own);
	return r;
}

int ca_storeconf_crypt_of(const struct ca_store_settings *s, const char *location, struct ca_crypt **ret)
{
	uint8_t key[CA_CRYPT_KEY_SIZE];
	char why[CA_CRYPT_WHY_MAX];
	char *shown = ca_location_redact(location);
	const char *name = shown ? shown : "(store)";
	int r = 0;
	*ret = NULL;
	if (!s || !s->encryption)
		goto out;
	const char *env = getenv("CAFS_ENCRYPTION_KEY");
	if (s->encryption_key) {
		r = ca_crypt_key_parse_hex(s->encryption_key, key); /* checked when parsed */
	} else if (s->encryption_key_file) {
		r = ca_crypt_key_read_file(s->encryption_key_file, key, why);
		if (r < 0 && why[0])
			ca_log_error("store %s: encryption-key-file %s: %s", name, s->encryption_key_file, why);
		else if (r < 0)
			ca_log_error_errno(r, "store %s: encryption-key-file %s", name, s->encryption_key_file);
	} else if (env && *env) {
		r = ca_crypt_key_parse_hex(env, key);
		if (r < 0)
			ca_log_error("store %s: CAFS_ENCRYPTION_KEY: expected 64 hex digits (a 256-bit key)", name);
	} else {
		r = -ENOKEY;
		ca_log_error("store %s: encryption = %s but no key: set encryption-key or encryption-key-file in "
		             "its section, or CAFS_ENCRYPTION_KEY",
		             name, ca_crypt_alg_name((enum ca_crypt_alg)s->encryption));
	}
	if (r == 0) {
		ca_secret_hold(); /* the key lives in this process from now on */
		r = ca_crypt_new((enum ca_crypt_alg)s->encryption, key, ret);
		if (r < 0)
			ca_log_error_errno(r, "store %s: %s", name, ca_crypt_alg_name((enum ca_crypt_alg)s->encryption));
	}
out:
	explicit_bzero(key, sizeof(key));
	free(shown);
	return r;
}

int ca_storeconf_open_store(const struct ca_storeconf *c, const char *path, struct ca_store **ret)
{
	struct ca_crypt *crypt = NULL;
	struct ca_store *st = NULL;
	int r = ca_storeconf_crypt(c, path, &crypt); /* logs; reads the files when c is NULL */
	if (r == 0) {
		r = ca_store_open(path, &st);
		if (r < 0)
			ca_log_error_errno(r, "%s", path);
	}
	if (r == 0 && crypt)
		r = ca_store_set_crypt(st, crypt);
	if (r < 0) {
		ca_store_free(st);
		st = NULL;
	}
	ca_crypt_unref(crypt);
	*ret = st;
	return r;
}

int ca_storeconf_check_index(const struct ca_storeconf *c, const char *location)
{
	struct ca_storeconf *own = NULL;
	int r = 0;
	if (!c) {
		r = ca_storeconf_load(CA_STORECONF_QUIET, &own); /* logs */
		c = own;
	}
	const struct ca_store_settings *s = r < 0 ? NULL : ca_storeconf_lookup(c, location);
	if (s && s->encryption) {
		char *shown = ca_location_redact(location);
		ca_log_error("%s: refused: indexes are never encrypted, and the settings file's section [%s] "
		             "encrypts this location (give the encrypted store a section of its own)",
		             shown ? shown : "index", s->prefix);
		free(shown);
		r = -EPERM;
	}
	ca_storeconf_free(own);
	return r;
}
