/* SPDX-License-Identifier: MIT
 *
 * bbx-log - list a journal's records, one readable line each.
 * (The full forensic view - filters, JSON, process tree, verify - builds on this.)
 */
#include "common.h"
#include "journal/reader.h"

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: bbx-log [JOURNAL]\n"
		   "List the records of a run's journal (default: the latest run), one per line:\n"
		   "  SEQ TIME PID TYPE OP PATH [-> PATH2] [key=value...]\n"
		   "  -h, --help  this text\n");
}

/* Prints s with non-printable bytes escaped, so every line stays one line. */
static void put_esc(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch == 0x7f || ch == '\\')
			printf("\\x%02x", ch);
		else
			putchar(ch);
	}
}

static void put_str(const char *s) { put_esc(s, strlen(s)); }

static void print_rec(const struct bbx_rec *r)
{
	time_t t = (time_t)(r->h.realtime_ns / 1000000000ull);
	struct tm tm;
	localtime_r(&t, &tm);
	printf("%llu %02d:%02d:%02d.%03u %d %s %s ", (unsigned long long)r->h.seq, tm.tm_hour,
	       tm.tm_min, tm.tm_sec, (unsigned)(r->h.realtime_ns / 1000000 % 1000), r->h.pid,
	       bbx_rec_type_name(r->type), r->op ? r->op : "-");
	if (r->type == BBX_REC_EXEC) {
		put_str(r->exe ? r->exe : "-");
		printf(" argv=[");
		for (size_t i = 0; i < r->argv_len;) {
			size_t l = strlen(r->argv + i);
			printf("%s\"", i ? " " : "");
			put_esc(r->argv + i, l);
			printf("\"");
			i += l + 1;
		}
		printf("]");
		if (r->cwd) {
			printf(" cwd=");
			put_str(r->cwd);
		}
		printf(" ppid=%d\n", r->h.ppid);
		return;
	}
	put_str(r->path ? r->path : "-");
	if (r->path2) {
		printf(" -> ");
		put_str(r->path2);
	}
	switch (r->type) {
	case BBX_REC_CREATE: case BBX_REC_PRESERVE: case BBX_REC_FINAL: case BBX_REC_RENAME:
		printf(" kind=%s", bbx_kind_name((int)r->kind));
		break;
	}
	if (r->type == BBX_REC_PRESERVE)
		printf(" how=%s", bbx_how_name((int)r->how));
	if (r->object)
		printf(" obj=%s", r->object);
	if (r->target) {
		printf(" target=");
		put_esc(r->target, r->target_len);
	}
	if (r->type == BBX_REC_SIZE)
		printf(" size=%llu", (unsigned long long)r->size);
	if (r->type == BBX_REC_CREATE)
		printf(" mode=%04o", r->flags & 07777);
	if (r->type == BBX_REC_RENAME && r->flags)
		printf(" flags=%#x", r->flags);
	if (r->type == BBX_REC_META) {
		printf(" changes=%s%s%s%s", r->mask & BBX_META_MODE ? "mode," : "",
		       r->mask & BBX_META_OWNER ? "owner," : "", r->mask & BBX_META_TIMES ? "times," : "",
		       r->mask & BBX_META_XATTR ? "xattr," : "");
		if (r->xname)
			printf(" xattr=%s%s", r->xname, r->has_xvalue ? "" : "(absent)");
	}
	if (r->has_stat && r->type != BBX_REC_FINAL)
		printf(" was=%04o,%u:%u,%llu", r->st.mode & 07777, r->st.uid, r->st.gid,
		       (unsigned long long)r->st.size);
	if (r->has_ref)
		printf(" ref=%llu", (unsigned long long)r->ref);
	if (r->has_ret) {
		printf(" ret=%lld", (long long)r->ret);
		if (r->ret < 0)
			printf(" err=%s", strerrorname_np(r->err) ? strerrorname_np(r->err) : "?");
	}
	if (r->has_ino)
		printf(" ino=%llu", (unsigned long long)r->ino);
	if (r->type == BBX_REC_SEAL)
		printf(" paths=%llu", (unsigned long long)r->count);
	if (r->text) {
		printf(" text=");
		put_str(r->text);
	}
	putchar('\n');
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			return 0;
		}
		usage(stderr);
		return 2;
	}
	if (argc - optind > 1) {
		usage(stderr);
		return 2;
	}
	char dir[PATH_MAX], p[PATH_MAX + 16];
	bbx_tool_journal(optind < argc ? argv[optind] : NULL, dir, sizeof dir);
	snprintf(p, sizeof p, "%s/journal", dir);
	struct bbx_reader r;
	int rc = bbx_reader_open(&r, p);
	if (rc)
		errx(1, "%s: %s", p, strerror(-rc));
	struct bbx_rec rec;
	size_t n = 0;
	int st;
	while ((st = bbx_reader_next(&r, &rec, NULL)) == BBX_READ_OK) {
		print_rec(&rec);
		n++;
	}
	fflush(stdout);
	if (r.bad_ranges)
		warnx("%zu damaged range(s) (%zu bytes) skipped in %s", r.bad_ranges, r.bad_bytes, p);
	if (st == BBX_READ_TORN)
		warnx("torn tail: the last %zu bytes at offset %zu are an incomplete record "
		      "(the end of the log)", r.torn_len, r.torn_off);
	bbx_reader_close(&r);
	return ferror(stdout) ? 1 : 0;
}
