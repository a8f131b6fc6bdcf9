/* SPDX-License-Identifier: CC0-1.0 */
/*
 * example-make.c - the whole round through libcafs alone: make an image of
 * a directory, read one file of it without mounting, extract it.
 *
 *   cc example-make.c $(pkg-config --cflags --libs cafs) -o cafs-example-make
 *   ./cafs-example-make DIR OUT.caidx FILE DEST
 *
 * makes OUT.caidx (its chunks in default.castr beside it, as casync does)
 * from DIR and prints the stream's digest, as `casync make` does; then
 * prints FILE (a path inside DIR) as read from the image, and extracts the
 * image to DEST.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include <cafs/cafs.h>

#if !CAFS_VERSION_CHECK(0, 1, 0)
#error "libcafs 0.1.0 or later needed"
#endif

static void on_log(void *userdata, int priority, const char *message)
{
	(void)userdata;
	fprintf(stderr, "example-make: %s%s\n", priority <= LOG_ERR ? "" : "note: ", message);
}

/* Copy file's bytes to stdout; the node's own image does the reading. */
static int print_file(struct cafs_node *file)
{
	struct cafs_image *img = cafs_node_get_image(file);
	char buf[65536];
	uint64_t off = 0;
	ssize_t k;
	while ((k = cafs_image_read(img, file, buf, sizeof(buf), off)) > 0) {
		if (fwrite(buf, 1, (size_t)k, stdout) != (size_t)k)
			return -EIO;
		off += (uint64_t)k;
	}
	return k < 0 ? (int)k : 0;
}

int main(int argc, char **argv)
{
	struct cafs_ctx *ctx = NULL;
	struct cafs_image *img = NULL;
	struct cafs_node *file = NULL;
	struct cafs_make_options mo = { .size = sizeof mo }; /* casync's defaults */
	uint8_t digest[CAFS_DIGEST_SIZE];
	int r;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DIR OUT.caidx FILE DEST\n", argv[0]);
		return 2;
	}
	r = cafs_ctx_new(&ctx);
	if (r < 0)
		return 1;
	cafs_ctx_set_log_fn(ctx, on_log, NULL);

	r = cafs_make(ctx, argv[2], argv[1], &mo, digest);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < sizeof(digest); i++)
		printf("%02x", digest[i]);
	printf("\n");

	r = cafs_image_open(ctx, argv[2], NULL, &img);
	if (r < 0)
		goto out;
	r = cafs_image_lookup(img, argv[3], &file);
	if (r < 0) {
		fprintf(stderr, "example-make: %s: %s\n", argv[3], strerror(-r));
		goto out;
	}
	r = cafs_image_extract(img, argv[4], NULL);
	if (r < 0)
		goto out;
	/* the node keeps its image: ours may go first */
	img = cafs_image_unref(img);
	r = print_file(file);
out:
	cafs_node_unref(file);
	cafs_image_unref(img);
	cafs_ctx_unref(ctx);
	if (r < 0)
		fprintf(stderr, "example-make: failed: %s\n", strerror(-r));
	return r < 0 ? 1 : 0;
}
