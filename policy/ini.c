/* SPDX-License-Identifier: MIT
 *
 * ini.c - the INI front end of the policy compiler (ini.h): libinih's
 * ini_parse_stream() fed by our own reader.
 *
 * Why a reader of our own: Debian's libinih is built without INI_HANDLER_LINENO, so
 * the handler cannot know its line; inih splits a line longer than its buffer
 * (INI_MAX_LINE, 200 on Debian) into two lines, the second parsed as if it were new
 * (a silently different policy); it treats an indented line as the continuation of the
 * previous value; and it never tells the handler about a section that holds no key.
 * The reader counts lines, refuses an over-long line (the buffer size inih asks for is
 * its INI_MAX_LINE), strips leading blanks (no continuation lines: an indented key is a
 * key), and checks every section header itself.  inih still does the splitting into
 * key and value and the comment stripping.
 */
#include "ini.h"

#include <ini.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int bbx_ini_max_line = 200;

struct ini_state {
	FILE *f;
	const char *fname;
	const struct bbx_ini_cb *cb;
	char *buf;
	size_t cap;
	int line;     /* of the line last handed to inih */
	bool stop;    /* an error was recorded: hand inih no more lines */
	int err_line; /* 0: no error */
	char msg[1024];
};

static void fail(struct ini_state *s, int line, const char *msg)
{
	if (s->err_line)
		return;
	s->err_line = line;
	snprintf(s->msg, sizeof s->msg, "%s", msg);
	s->stop = true;
}

static char *reader(char *out, int num, void *stream)
{
	struct ini_state *s = stream;
	if (s->stop)
		return NULL;
	bbx_ini_max_line = num;
	ssize_t n = getline(&s->buf, &s->cap, s->f);
	if (n < 0)
		return NULL;
	s->line++;
	size_t len = (size_t)n;
	if (strlen(s->buf) != len) {
		fail(s, s->line, "NUL byte in line");
		return NULL;
	}
	size_t body = len && s->buf[len - 1] == '\n' ? len - 1 : len;
	if (body && s->buf[body - 1] == '\r')
		body--;
	if (body > (size_t)num - 2) {
		char m[96];
		snprintf(m, sizeof m, "line too long (max %d bytes)", num - 2);
		fail(s, s->line, m);
		return NULL;
	}
	char *p = s->buf;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '[') {
		char *end = strchr(p, ']');
		if (!end) {
			fail(s, s->line, "expected \"[section]\"");
			return NULL;
		}
		char name[256], m[512];
		size_t nl = (size_t)(end - p - 1);
		if (nl >= sizeof name)
			nl = sizeof name - 1;
		memcpy(name, p + 1, nl);
		name[nl] = 0;
		if (s->cb->section(s->cb->user, name, s->line, m, sizeof m)) {
			fail(s, s->line, m);
			return NULL;
		}
	}
	snprintf(out, (size_t)num, "%s", p);
	return out;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct ini_state *s = user;
	char m[1024];
	if (s->stop)
		return 0;
	if (s->cb->pair(s->cb->user, section, key, value, s->line, m, sizeof m)) {
		fail(s, s->line, m);
		return 0;
	}
	return 1;
}

int bbx_ini_parse(FILE *f, const char *fname, const struct bbx_ini_cb *cb, char *err,
		  size_t cap)
{
	struct ini_state s = {.f = f, .fname = fname, .cb = cb};
	/* One struct serves as both the reader's stream and the handler's user. */
	int r = ini_parse_stream(reader, &s, handler, &s);
	free(s.buf);
	if (r > 0 && (!s.err_line || r < s.err_line)) {
		/* inih's own syntax error: a line that is neither a header nor key = value */
		snprintf(err, cap, "%s:%d: expected \"[section]\" or \"key = value\"", fname, r);
		return -1;
	}
	if (s.err_line) {
		snprintf(err, cap, "%s:%d: %s", fname, s.err_line, s.msg);
		return -1;
	}
	if (r < 0) {
		snprintf(err, cap, "%s: cannot parse (out of memory)", fname);
		return -1;
	}
	if (ferror(f)) {
		snprintf(err, cap, "%s: read error", fname);
		return -1;
	}
	return 0;
}
