/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* exclude.c - .caexclude parsing and matching (see exclude.h for the rules). */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catar/exclude.h"

enum pat_type { PAT_POSITIVE, PAT_NEGATIVE, PAT_INNER };

/* One component of a rule. An INNER pattern matches a directory and hands
 * its children to that directory's set. */
struct ca_exclude_pat {
	enum pat_type type;
	bool anchored, dir_only;
	struct ca_exclude_set children;
	char name[];
};

struct ca_exclude_rules {
	struct ca_exclude_pat **all;
	size_t n, cap;
};

#define LINE_MAX_CHARS 65536u
#define FILE_MAX_BYTES (64u << 20)

static int set_push(struct ca_exclude_set *s, const struct ca_exclude_pat *p)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		const struct ca_exclude_pat **v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = p;
	return 0;
}

void ca_exclude_set_clear(struct ca_exclude_set *set)
{
	set->n = 0;
}

void ca_exclude_set_release(struct ca_exclude_set *set)
{
	free(set->v);
	set->v = NULL;
	set->n = set->cap = 0;
}

int ca_exclude_rules_new(struct ca_exclude_rules **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void ca_exclude_rules_free(struct ca_exclude_rules *rules)
{
	if (!rules)
		return;
	for (size_t i = 0; i < rules->n; i++) {
		ca_exclude_set_release(&rules->all[i]->children);
		free(rules->all[i]);
	}
	free(rules->all);
	free(rules);
}

static struct ca_exclude_pat *pat_new(struct ca_exclude_rules *rules, const char *name, size_t len)
{
	if (rules->n == rules->cap) {
		size_t cap = rules->cap ? rules->cap * 2 : 16;
		struct ca_exclude_pat **a = realloc(rules->all, cap * sizeof(*a));
		if (!a)
			return NULL;
		rules->all = a;
		rules->cap = cap;
	}
	struct ca_exclude_pat *p = calloc(1, sizeof(*p) + len + 1);
	if (!p)
		return NULL;
	memcpy(p->name, name, len);
	rules->all[rules->n++] = p;
	return p;
}

int ca_exclude_add_line(struct ca_exclude_rules *rules, const char *line, struct ca_exclude_set *set)
{
	enum pat_type last_type = PAT_POSITIVE;
	struct ca_exclude_pat *top = NULL, *prev = NULL;
	const char *p = line;
	bool anchored;
	int r;

	if (*p == '!') {
		last_type = PAT_NEGATIVE;
		p++;
	}
	anchored = strchr(p, '/') != NULL;
	p += strspn(p, "/");
	for (;;) {
		size_t k = strcspn(p, "/");
		if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		struct ca_exclude_pat *pat = pat_new(rules, p, k);
		if (!pat)
			return -ENOMEM;
		p += k;
		pat->dir_only = *p == '/';
		p += strspn(p, "/");
		pat->type = *p ? PAT_INNER : last_type;
		pat->anchored = anchored;
		if (prev) {
			r = set_push(&prev->children, pat);
			if (r < 0)
				return r;
		} else {
			top = pat;
		}
		if (!*p)
			break;
		prev = pat;
		anchored = true; /* deeper components only apply right below their parent */
	}
	return set_push(set, top);
}

static int add_stripped_line(struct ca_exclude_rules *rules, char *s, size_t len, struct ca_exclude_set *set)
{
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	s[len] = 0;
	s += strspn(s, " \t");
	if (!*s || *s == '#')
		return 0;
	return ca_exclude_add_line(rules, s, set);
}

int ca_exclude_load_fd(struct ca_exclude_rules *rules, int fd, struct ca_exclude_set *set)
{
	char *buf = NULL;
	size_t size = 0, cap = 0;
	int r = 0;

	for (;;) {
		if (size == cap) {
			if (cap >= FILE_MAX_BYTES) {
				r = -EFBIG;
				goto out;
			}
			size_t ncap = cap ? cap * 2 : 4096;
			char *n = realloc(buf, ncap + 1);
			if (!n) {
				r = -ENOMEM;
				goto out;
			}
			buf = n;
			cap = ncap;
		}
		ssize_t k = read(fd, buf + size, cap - size);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			goto out;
		}
		if (k == 0)
			break;
		size += (size_t)k;
	}
	for (size_t start = 0; start < size;) {
		size_t end = start;
		while (end < size && buf[end] != '\n' && buf[end] != 0)
			end++;
		/* casync fails once a line reaches the limit, delimiter or not */
		if (end - start >= LINE_MAX_CHARS) {
			r = -ENOBUFS;
			goto out;
		}
		r = add_stripped_line(rules, buf + start, end - start, set);
		if (r < 0)
			goto out;
		start = end + 1;
	}
out:
	free(buf);
	return r;
}

int ca_exclude_test(const struct ca_exclude_set *set, const char *name, bool is_dir, struct ca_exclude_set *child)
{
	bool pos = false, neg = false;
	int r;

	for (size_t i = 0; i < set->n; i++) {
		const struct ca_exclude_pat *p = set->v[i];
		if (child && is_dir && !p->anchored) {
			r = set_push(child, p);
			if (r < 0)
				return r;
		}
		if (p->dir_only && !is_dir)
			continue;
		int k = fnmatch(p->name, name, FNM_PERIOD);
		if (k == FNM_NOMATCH)
			continue;
		if (k != 0)
			return -EINVAL;
		switch (p->type) {
		case PAT_NEGATIVE:
			neg = true;
			break;
		case PAT_POSITIVE:
			pos = true;
			break;
		case PAT_INNER:
			for (size_t j = 0; child && j < p->children.n; j++) {
				r = set_push(child, p->children.v[j]);
				if (r < 0)
					return r;
			}
			break;
		}
	}
	return pos && !neg;
}
