/* SPDX-License-Identifier: CC0-1.0 */
/*
 * example.c - what a third party writes against libcafs: open an archive
 * index (a path or an http(s):// URL), list one directory, print one file.
 *
 *   cc example.c $(pkg-config --cflags --libs cafs) -o cafs-example
 *   ./cafs-example https://host/image.caidx etc etc/os-release
 *
 * Chunks come from default.castr beside the index, and only those the
 * listing and the file need are fetched.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cafs/cafs.h>

static void on_log(void *userdata, int priority, const char *message)
{
	(void)userdata;
	fprintf(stderr, "example: %s%s\n", priority <= LOG_ERR ? "" : "note: ", message);
}

static int print_entry(void *userdata, struct cafs_node *child)
{
	struct stat st;
	(void)userdata;
	cafs_node_get_stat(child, &st);
	printf("%c %06o %10" PRIu64 " %s\n", S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : '-',
	       (unsigned)(st.st_mode & 07777), (uint64_t)st.st_size, cafs_node_get_name(child));
	return 0;
}

static int list_dir(struct cafs_image *img, const char *path)
{
	struct cafs_node *dir = NULL;
	int r = cafs_image_lookup(img, path, &dir);
	if (r < 0) {
		fprintf(stderr, "example: %s: %s\n", path, strerror(-r));
		return r;
	}
	r = cafs_image_readdir(img, dir, print_entry, NULL);
	cafs_node_unref(dir);
	return r;
}

static int cat_file(struct cafs_image *img, const char *path)
{
	struct cafs_node *file = NULL;
	char buf[65536];
	uint64_t off = 0;
	ssize_t k;
	int r = cafs_image_lookup(img, path, &file);
	if (r < 0) {
		fprintf(stderr, "example: %s: %s\n", path, strerror(-r));
		return r;
	}
	while ((k = cafs_image_read(img, file, buf, sizeof(buf), off)) > 0) {
		if (fwrite(buf, 1, (size_t)k, stdout) != (size_t)k)
			break;
		off += (uint64_t)k;
	}
	cafs_node_unref(file);
	if (k == CAFS_ECHUNKMISSING)
		fprintf(stderr, "example: %s: the store lacks a chunk\n", path);
	return k < 0 ? (int)k : 0;
}

int main(int argc, char **argv)
{
	struct cafs_ctx *ctx = NULL;
	struct cafs_image *img = NULL;
	int r;

	if (argc != 4) {
		fprintf(stderr, "usage: %s INDEX.caidx DIR FILE\n", argv[0]);
		return 2;
	}
	r = cafs_ctx_new(&ctx);
	if (r < 0)
		return 1;
	cafs_ctx_set_log_fn(ctx, on_log, NULL);
	r = cafs_image_open(ctx, argv[1], NULL, &img);
	if (r < 0)
		goto out;
	if (cafs_image_get_kind(img) == CAFS_IMAGE_BLOB) {
		fprintf(stderr, "example: %s: a blob, not an archive\n", argv[1]);
		r = -1;
		goto out;
	}
	printf("%s: %" PRIu64 " bytes of archive\n", argv[1], cafs_image_get_size(img));
	r = list_dir(img, argv[2]);
	if (r == 0)
		r = cat_file(img, argv[3]);
out:
	cafs_image_unref(img);
	cafs_ctx_unref(ctx);
	return r < 0 ? 1 : 0;
}
