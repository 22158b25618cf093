/* SPDX-License-Identifier: MIT
 *
 * bbx-log - the forensic view of a run: what each process did, one line per event,
 * filtered, as a process tree, as totals, as JSON Lines or OCSF, and live (--follow).
 *
 * An event is a journal record, except that a RESULT is folded into the record it
 * refers to (REF) and shown as that event's outcome.  The program of an event is the
 * last program its process was seen to run (PROC, or an EXEC of the exec family that
 * did not fail), else its parent's at the time it was first seen (a fork, or a child
 * of posix_spawn/system/popen/bbx-run, whose EXEC the parent wrote).  Reading never
 * changes the journal; a torn tail is reported, never an error (invariant 7).
 */
#include "common.h"
#include "journal/pathmap.h"
#include "journal/reader.h"
#include "journal/run.h"

#include <err.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bbx-log [OPTION...] [JOURNAL]\n"
		"Show what a run did (default: the latest run), one line per event:\n"
		"  TIME PID PROGRAM TYPE OP TARGET [-> TARGET2] [DECISION] [RESULT]\n"
		"  -p, --pid N        only process N (repeatable)\n"
		"  -o, --op NAME      only this call or record type (repeatable)\n"
		"  -P, --path GLOB    only events whose path or second path matches\n"
		"      --since WHEN   from WHEN: 2026-11-23T02:00:00[Z|+01:00], 5m (ago), seq:N\n"
		"      --until WHEN   up to WHEN (same forms)\n"
		"  -d, --denied       refused calls (DENY) only\n"
		"  -x, --exec         process events (EXEC, PROC, EXIT) only\n"
		"  -t, --tree         the process tree, with argv, exit status and counts\n"
		"  -s, --stats        totals by type, operation, decision; top programs, paths\n"
		"  -j, --json         JSON Lines (with --stats/--tree: JSON too)\n"
		"      --format F     text, json or ocsf (OCSF 1.1 JSON Lines)\n"
		"  -r, --records      every record, RESULTs unfolded (the format of bbx-log 0.1)\n"
		"  -f, --follow       keep reading as the run appends, until it is sealed\n"
		"      --no-pager     never page; --color=auto|always|never\n"
		"  -h, --help         this text\n");
}

/* ---- small helpers --------------------------------------------------------------- */

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		err(1, "realloc");
	return p;
}

/* u64 -> u64 open-addressing map (pid -> proc index, seq -> event index).  Value 0
 * means absent, so callers store index + 1. */
struct u64map {
	uint64_t *k, *v;
	size_t cap, len;
};

static size_t u64map_slot(const struct u64map *m, uint64_t key)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ull;
	size_t i = (size_t)(h ^ (h >> 29)) & (m->cap - 1);
	while (m->v[i] && m->k[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static uint64_t u64map_get(const struct u64map *m, uint64_t key)
{
	return m->cap ? m->v[u64map_slot(m, key)] : 0;
}

static void u64map_put(struct u64map *m, uint64_t key, uint64_t val)
{
	if (2 * (m->len + 1) > m->cap) {
		struct u64map n = {0};
		n.cap = m->cap ? 2 * m->cap : 256;
		n.k = calloc(n.cap, sizeof *n.k);
		n.v = calloc(n.cap, sizeof *n.v);
		if (!n.k || !n.v)
			err(1, "calloc");
		for (size_t i = 0; i < m->cap; i++)
			if (m->v[i]) {
				size_t s = u64map_slot(&n, m->k[i]);
				n.k[s] = m->k[i];
				n.v[s] = m->v[i];
				n.len++;
			}
		free(m->k);
		free(m->v);
		*m = n;
	}
	size_t s = u64map_slot(m, key);
	if (!m->v[s])
		m->len++;
	m->k[s] = key;
	m->v[s] = val;
}

static const char *base_name(const char *p)
{
	if (!p)
		return NULL;
	const char *s = strrchr(p, '/');
	return s && s[1] ? s + 1 : p;
}

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static const char *decision_name(uint32_t d)
{
	static const char *const n[] = {"allow", "log", "deny", "audit", "ask"};
	return d < 5 ? n[d] : "?";
}

static const char *class_name(uint32_t c)
{
	static const char *const n[] = {"none", "safe", "risky", "dangerous", "destructive"};
	return c < 5 ? n[c] : "?";
}

static const char *access_name(uint32_t a)
{
	static const char *const n[] = {"?", "write", "read", "exec", "connect", "syscall"};
	return a < 6 ? n[a] : "?";
}

/* PRESERVE has two forms: content (the name stays) and removal (the name goes). */
static bool preserve_is_content(const struct bbx_rec *r)
{
	return r->type == BBX_REC_PRESERVE && (r->how == BBX_HOW_COPY || r->how == BBX_HOW_REFLINK) &&
	       r->op && strcmp(r->op, "unlink") && strcmp(r->op, "unlinkat") &&
	       strcmp(r->op, "remove") && strncmp(r->op, "rename", 6);
}

static bool is_spawn_op(const char *op)
{
	return op && (!strncmp(op, "posix_spawn", 11) || !strcmp(op, "system") ||
		      !strcmp(op, "popen") || !strcmp(op, "bbx-run"));
}

/* The short verb of an event: what happened, in one word. */
static const char *verb_of(const struct bbx_rec *r)
{
	switch (r->type) {
	case BBX_REC_EXEC: return "exec";
	case BBX_REC_CREATE: return "create";
	case BBX_REC_PRESERVE:
		return preserve_is_content(r) ? "write"
		       : r->op && !strncmp(r->op, "rename", 6) ? "replace" : "delete";
	case BBX_REC_SIZE: return "append";
	case BBX_REC_RMDIR: return "rmdir";
	case BBX_REC_RENAME: return "rename";
	case BBX_REC_META: return "meta";
	case BBX_REC_DENY: return "denied";
	case BBX_REC_PROC: return "proc";
	case BBX_REC_EXIT: return "exit";
	case BBX_REC_NET: return "connect";
	case BBX_REC_RESOLVE: return "resolve";
	default: return NULL;
	}
}

/* ---- processes -------------------------------------------------------------------- */

enum { C_CREATE, C_WRITE, C_DELETE, C_RENAME, C_META, C_EXEC, C_DENY, C_NET, C_NCOUNT };
static const char *const count_name[C_NCOUNT] = {"creates", "writes", "deletes", "renames",
						 "meta", "execs", "denials", "connects"};

struct proc {
	int32_t pid, ppid;
	uint64_t first_seq;
	const char *exe, *argv;
	size_t argv_len;
	const struct bbx_rec *spawn; /* a spawn EXEC its next new child inherits */
	bool has_status;
	uint32_t status;
	unsigned long counts[C_NCOUNT];
	bool shown, is_cmd; /* is_cmd: the command bbx-run started */
};

struct ev {
	struct bbx_rec r;
	size_t result;  /* index + 1 of the RESULT folded into this event */
	bool folded;    /* this is a RESULT folded into another event */
	const char *prog;
	size_t proc;    /* index of the writer's proc */
};

static struct {
	struct ev *ev;
	size_t nev, cap;
	struct proc *procs;
	size_t nproc, pcap;
	struct u64map seqs, pids;
	size_t spawner; /* index + 1 of the last process with a pending spawn */
	bool sealed;
	size_t shown; /* events [0, shown) have been printed (--follow) */
	size_t bad_ranges, bad_bytes;
	char host[256];
	char exit_meta[32];
} L;

static size_t proc_new(int32_t pid, int32_t ppid, uint64_t seq)
{
	if (L.nproc == L.pcap) {
		L.pcap = L.pcap ? 2 * L.pcap : 64;
		L.procs = xrealloc(L.procs, L.pcap * sizeof *L.procs);
	}
	struct proc *p = &L.procs[L.nproc];
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->ppid = ppid;
	p->first_seq = seq;
	u64map_put(&L.pids, (uint64_t)(uint32_t)pid, L.nproc + 1);
	return L.nproc++;
}

/* Hands the pending spawn of process sp (its EXEC) to the new process c. */
static void take_spawn(size_t sp, size_t c)
{
	const struct bbx_rec *s = L.procs[sp].spawn;
	L.procs[c].exe = s->exe;
	L.procs[c].argv = s->argv;
	L.procs[c].argv_len = s->argv_len;
	L.procs[c].is_cmd = s->op && !strcmp(s->op, "bbx-run");
	L.procs[sp].spawn = NULL;
	if (L.spawner == sp + 1)
		L.spawner = 0;
}

/* The process pid, made on first sight.  A new process inherits its parent's program
 * (a fork), or takes the parent's pending spawn.  A parent never seen itself (a shell
 * that journaled nothing but forked children that did) is made up when a spawn is
 * pending: it is taken to be that spawned child (PROC records, once written, name every
 * process and make this guess unnecessary). */
static size_t proc_get(int32_t pid, int32_t ppid, uint64_t seq)
{
	uint64_t i = u64map_get(&L.pids, (uint64_t)(uint32_t)pid);
	if (i)
		return (size_t)i - 1;
	uint64_t pi = u64map_get(&L.pids, (uint64_t)(uint32_t)ppid);
	if (!pi && ppid > 0 && L.spawner) {
		size_t sp = L.spawner - 1;
		size_t q = proc_new(ppid, L.procs[sp].pid, seq);
		take_spawn(sp, q);
		pi = q + 1;
	}
	size_t n = proc_new(pid, ppid, seq);
	if (pi) {
		size_t pp = pi - 1;
		if (L.procs[pp].spawn) {
			take_spawn(pp, n);
		} else { /* a fork: the parent's program until it execs */
			L.procs[n].exe = L.procs[pp].exe;
			L.procs[n].argv = L.procs[pp].argv;
			L.procs[n].argv_len = L.procs[pp].argv_len;
		}
	}
	return n;
}

static const struct bbx_rec *result_of(const struct ev *e)
{
	return e->result ? &L.ev[e->result - 1].r : NULL;
}

static void count_event(struct proc *p, const struct bbx_rec *r)
{
	switch (r->type) {
	case BBX_REC_CREATE: p->counts[C_CREATE]++; break;
	case BBX_REC_PRESERVE: p->counts[preserve_is_content(r) ? C_WRITE : C_DELETE]++; break;
	case BBX_REC_SIZE: p->counts[C_WRITE]++; break;
	case BBX_REC_RMDIR: p->counts[C_DELETE]++; break;
	case BBX_REC_RENAME: p->counts[C_RENAME]++; break;
	case BBX_REC_META: p->counts[C_META]++; break;
	case BBX_REC_EXEC: p->counts[C_EXEC]++; break;
	case BBX_REC_DENY: p->counts[C_DENY]++; break;
	case BBX_REC_NET: p->counts[C_NET]++; break;
	}
}

/* Applies event i to the process table, in file order, and names its program. */
static void attribute(size_t i)
{
	struct ev *e = &L.ev[i];
	const struct bbx_rec *r = &e->r;
	size_t pi = proc_get(r->h.pid, r->h.ppid, r->h.seq);
	e->proc = pi;
	struct proc *p = &L.procs[pi];
	if (r->type == BBX_REC_PROC) {
		if (r->exe)
			p->exe = r->exe;
		if (r->argv) {
			p->argv = r->argv;
			p->argv_len = r->argv_len;
		}
	}
	if (r->type == BBX_REC_EXEC && !p->exe && r->op && !strcmp(r->op, "bbx-run"))
		p->exe = "bbx-run";
	e->prog = base_name(p->exe);
	if (r->type == BBX_REC_EXEC) {
		const struct bbx_rec *res = result_of(e);
		bool failed = res && (res->ret < 0 || res->err);
		if (is_spawn_op(r->op)) {
			if (!failed) {
				p->spawn = r;
				L.spawner = pi + 1;
			}
		} else if (!failed) {
			p->exe = r->exe;
			p->argv = r->argv;
			p->argv_len = r->argv_len;
		}
	}
	if (r->type == BBX_REC_EXIT && r->has_pid) {
		size_t ci = proc_get((int32_t)r->pid, r->h.pid, r->h.seq);
		L.procs[ci].has_status = r->has_status;
		L.procs[ci].status = r->status;
	}
	count_event(&L.procs[pi], r); /* proc_get may have moved the table */
}

/* ---- loading -------------------------------------------------------------------- */

/* Reads the records of path from offset *off on, appends them as events and folds
 * RESULTs.  Keeps the mapping alive (events point into it).  Returns the number of
 * new events; *torn is set when the log ends in an incomplete record. */
static size_t load(const char *path, size_t *off, bool *torn)
{
	struct bbx_reader *rd = malloc(sizeof *rd);
	if (!rd)
		err(1, "malloc");
	int rc = bbx_reader_open(rd, path);
	if (rc)
		errx(1, "%s: %s", path, strerror(-rc));
	if (*off > rd->size) /* the journal shrank: not an append-only log any more */
		errx(1, "%s: shorter than already read (%zu < %zu bytes)", path, rd->size, *off);
	rd->off = *off;
	size_t first = L.nev;
	struct bbx_rec rec;
	int st;
	while ((st = bbx_reader_next(rd, &rec, NULL)) == BBX_READ_OK) {
		if (L.nev == L.cap) {
			L.cap = L.cap ? 2 * L.cap : 1024;
			L.ev = xrealloc(L.ev, L.cap * sizeof *L.ev);
		}
		struct ev *e = &L.ev[L.nev];
		memset(e, 0, sizeof *e);
		e->r = rec;
		if (rec.type == BBX_REC_RESULT && rec.has_ref) {
			uint64_t t = u64map_get(&L.seqs, rec.ref);
			if (t && t - 1 >= L.shown && !L.ev[t - 1].result) {
				L.ev[t - 1].result = L.nev + 1;
				e->folded = true;
			}
		}
		if (rec.type == BBX_REC_SEAL)
			L.sealed = true;
		if (rec.type != BBX_REC_RESULT)
			u64map_put(&L.seqs, rec.h.seq, L.nev + 1);
		L.nev++;
		*off = rd->off;
	}
	*torn = st == BBX_READ_TORN;
	L.bad_ranges += rd->bad_ranges;
	L.bad_bytes += rd->bad_bytes;
	if (*torn)
		*off = rd->torn_off; /* read again from there: the writer may complete it */
	if (L.nev == first) {
		bbx_reader_close(rd);
		free(rd);
	} /* else the mapping stays: the new events point into it */
	return L.nev - first;
}

/* ---- filters ----------------------------------------------------------------------- */

static struct {
	long *pids;
	size_t npids;
	char **ops;
	size_t nops;
	const char *path;
	uint64_t since_ns, until_ns, since_seq, until_seq;
	bool has_since, has_until, since_is_seq, until_is_seq;
	bool denied, exec, records;
} F;

/* WHEN: ISO 8601 date-time (local time unless Z or +hh:mm), a relative age ("90s",
 * "5m", "2h", "1d" ago), or "seq:N".  Returns false if it does not parse. */
static bool parse_when(const char *s, uint64_t *ns, uint64_t *seq, bool *is_seq)
{
	char *end;
	*is_seq = false;
	if (!strncmp(s, "seq:", 4)) {
		errno = 0;
		unsigned long long v = strtoull(s + 4, &end, 10);
		if (errno || end == s + 4 || *end)
			return false;
		*seq = v;
		*is_seq = true;
		return true;
	}
	errno = 0;
	double v = strtod(s, &end);
	if (!errno && end != s && v >= 0 && end[0] && !end[1] && strchr("smhd", end[0])) {
		double mul = end[0] == 's' ? 1 : end[0] == 'm' ? 60 : end[0] == 'h' ? 3600 : 86400;
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		double t = (double)now.tv_sec * 1e9 + (double)now.tv_nsec - v * mul * 1e9;
		*ns = t > 0 ? (uint64_t)t : 0;
		return true;
	}
	struct tm tm = {0};
	const char *p = strptime(s, "%Y-%m-%d", &tm);
	if (!p)
		return false;
	if (*p == 'T' || *p == ' ') {
		p = strptime(p + 1, "%H:%M", &tm);
		if (!p)
			return false;
		if (*p == ':') {
			p = strptime(p + 1, "%S", &tm);
			if (!p)
				return false;
		}
	}
	uint64_t frac = 0;
	if (*p == '.') {
		uint64_t scale = 100000000;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += (uint64_t)(*p - '0') * scale;
	}
	time_t t;
	if (!*p) {
		tm.tm_isdst = -1;
		t = mktime(&tm);
	} else {
		t = timegm(&tm);
		if (*p == 'Z' && !p[1]) {
		} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
			int hh = atoi(p + 1), mm = atoi(p + 4);
			long d = (hh * 60 + mm) * 60;
			t -= *p == '+' ? d : -d;
		} else
			return false;
	}
	if (t < 0)
		return false;
	*ns = (uint64_t)t * 1000000000ull + frac;
	return true;
}

static bool op_matches(const struct bbx_rec *r)
{
	if (!F.nops)
		return true;
	const char *v = verb_of(r);
	for (size_t i = 0; i < F.nops; i++)
		if ((r->op && !strcmp(F.ops[i], r->op)) ||
		    !strcasecmp(F.ops[i], bbx_rec_type_name(r->type)) || (v && !strcmp(F.ops[i], v)))
			return true;
	return false;
}

static bool selected(const struct ev *e)
{
	const struct bbx_rec *r = &e->r;
	if (e->folded && !F.records)
		return false;
	if (F.npids) {
		bool hit = false;
		for (size_t i = 0; i < F.npids; i++)
			if (F.pids[i] == r->h.pid || (r->type == BBX_REC_EXIT && (uint64_t)F.pids[i] == r->pid))
				hit = true;
		if (!hit)
			return false;
	}
	if (!op_matches(r))
		return false;
	if (F.path) {
		bool hit = (r->path && !fnmatch(F.path, r->path, 0)) ||
			   (r->path2 && !fnmatch(F.path, r->path2, 0)) ||
			   (r->exe && (r->type == BBX_REC_EXEC || r->type == BBX_REC_PROC) &&
			    !fnmatch(F.path, r->exe, 0));
		if (!hit)
			return false;
	}
	if (F.has_since && (F.since_is_seq ? r->h.seq < F.since_seq : r->h.realtime_ns < F.since_ns))
		return false;
	if (F.has_until && (F.until_is_seq ? r->h.seq > F.until_seq : r->h.realtime_ns > F.until_ns))
		return false;
	if (F.denied && r->type != BBX_REC_DENY)
		return false;
	if (F.exec && r->type != BBX_REC_EXEC && r->type != BBX_REC_PROC && r->type != BBX_REC_EXIT)
		return false;
	return true;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if it is not one
 * (overlong forms, surrogates and code points past U+10FFFF are not valid). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t l;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) { l = 2; cp = c & 0x1f; }
	else if (c >= 0xe0 && c <= 0xef) { l = 3; cp = c & 0x0f; }
	else if (c >= 0xf0 && c <= 0xf4) { l = 4; cp = c & 0x07; }
	else
		return 0;
	if (n < l)
		return 0;
	for (size_t i = 1; i < l; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((l == 3 && cp < 0x800) || (l == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return l;
}

/* ---- text output --------------------------------------------------------------- */

static bool color;
#define C(code) (color ? "\033[" code "m" : "")

/* Writes s with control bytes, backslash and bytes that are not UTF-8 escaped as
 * \xNN, so every event stays one line and no byte is lost. */
static void put_esc(FILE *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = utf8_len(u + i, n - i);
		if (!l || u[i] < 0x20 || u[i] == 0x7f || u[i] == '\\') {
			fprintf(o, "\\x%02x", u[i]);
			i++;
		} else {
			fwrite(u + i, 1, l, o);
			i += l;
		}
	}
}

static void put_str(FILE *o, const char *s) { put_esc(o, s, strlen(s)); }

static void put_argv(FILE *o, const char *a, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t l = strlen(a + i);
		if (i)
			putc(' ', o);
		bool q = !l || strpbrk(a + i, " \t'\"") != NULL;
		if (q)
			putc('\'', o);
		put_esc(o, a + i, l);
		if (q)
			putc('\'', o);
		i += l + 1;
	}
}

/* The status of an EXIT, in words: "exit 3" or "killed SIGTERM". */
static void status_text(uint32_t st, char *out, size_t cap)
{
	int s = (int)st;
	if (WIFEXITED(s))
		snprintf(out, cap, "exit %d", WEXITSTATUS(s));
	else if (WIFSIGNALED(s)) {
		const char *n = sigabbrev_np(WTERMSIG(s));
		snprintf(out, cap, "killed SIG%s%s", n ? n : "?", WCOREDUMP(s) ? " (core)" : "");
	} else
		snprintf(out, cap, "status %#x", st);
}

/* The old one-line-per-record format (--records). */
static void print_record(FILE *o, const struct bbx_rec *r)
{
	time_t t = (time_t)(r->h.realtime_ns / 1000000000ull);
	struct tm tm;
	localtime_r(&t, &tm);
	fprintf(o, "%llu %02d:%02d:%02d.%03u %d %s %s ", (unsigned long long)r->h.seq, tm.tm_hour,
		tm.tm_min, tm.tm_sec, (unsigned)(r->h.realtime_ns / 1000000 % 1000), r->h.pid,
		bbx_rec_type_name(r->type), r->op ? r->op : "-");
	if (r->type == BBX_REC_EXEC || r->type == BBX_REC_PROC) {
		put_str(o, r->exe ? r->exe : "-");
		fprintf(o, " argv=[");
		for (size_t i = 0; i < r->argv_len;) {
			size_t l = strlen(r->argv + i);
			fprintf(o, "%s\"", i ? " " : "");
			put_esc(o, r->argv + i, l);
			fprintf(o, "\"");
			i += l + 1;
		}
		fprintf(o, "]");
		if (r->cwd) {
			fprintf(o, " cwd=");
			put_str(o, r->cwd);
		}
		fprintf(o, " ppid=%d", r->h.ppid);
	} else {
		put_str(o, r->path ? r->path : r->addr ? r->addr : r->host ? r->host : "-");
		if (r->path2) {
			fprintf(o, " -> ");
			put_str(o, r->path2);
		}
	}
	switch (r->type) {
	case BBX_REC_CREATE: case BBX_REC_PRESERVE: case BBX_REC_FINAL: case BBX_REC_RENAME:
		fprintf(o, " kind=%s", bbx_kind_name((int)r->kind));
		break;
	}
	if (r->type == BBX_REC_PRESERVE)
		fprintf(o, " how=%s", bbx_how_name((int)r->how));
	if (r->object)
		fprintf(o, " obj=%s", r->object);
	if (r->target) {
		fprintf(o, " target=");
		put_esc(o, r->target, r->target_len);
	}
	if (r->type == BBX_REC_SIZE)
		fprintf(o, " size=%llu", (unsigned long long)r->size);
	if (r->type == BBX_REC_CREATE)
		fprintf(o, " mode=%04o", r->flags & 07777);
	if (r->type == BBX_REC_RENAME && r->flags)
		fprintf(o, " flags=%#x", r->flags);
	if (r->type == BBX_REC_META) {
		fprintf(o, " changes=%s%s%s%s", r->mask & BBX_META_MODE ? "mode," : "",
			r->mask & BBX_META_OWNER ? "owner," : "", r->mask & BBX_META_TIMES ? "times," : "",
			r->mask & BBX_META_XATTR ? "xattr," : "");
		if (r->xname)
			fprintf(o, " xattr=%s%s", r->xname, r->has_xvalue ? "" : "(absent)");
	}
	if (r->has_stat && r->type != BBX_REC_FINAL)
		fprintf(o, " was=%04o,%u:%u,%llu", r->st.mode & 07777, r->st.uid, r->st.gid,
			(unsigned long long)r->st.size);
	if (r->has_ref)
		fprintf(o, " ref=%llu", (unsigned long long)r->ref);
	if (r->has_ret) {
		fprintf(o, " ret=%lld", (long long)r->ret);
		if (r->ret < 0)
			fprintf(o, " err=%s", errname(r->err));
	}
	if (r->has_ino)
		fprintf(o, " ino=%llu", (unsigned long long)r->ino);
	if (r->type == BBX_REC_SEAL)
		fprintf(o, " paths=%llu", (unsigned long long)r->count);
	if (r->has_decision)
		fprintf(o, " decision=%s", decision_name(r->decision));
	if (r->type == BBX_REC_DENY && r->access)
		fprintf(o, " access=%s", access_name(r->access));
	if (r->type == BBX_REC_DENY && r->err)
		fprintf(o, " err=%s", errname(r->err));
	if (r->type == BBX_REC_EXIT) {
		char s[64];
		status_text(r->status, s, sizeof s);
		fprintf(o, " pid=%llu status=%s", (unsigned long long)r->pid, s);
	}
	if (r->rule) {
		fprintf(o, " rule=");
		put_str(o, r->rule);
	}
	if (r->text) {
		fprintf(o, " text=");
		put_str(o, r->text);
	}
	putc('\n', o);
}

/* The outcome of an event from its folded RESULT: "ok", "= RET" or the errno name. */
static const char *outcome(const struct ev *e, char *buf, size_t cap)
{
	const struct bbx_rec *res = result_of(e);
	if (!res)
		return NULL;
	if (res->err || (res->has_ret && res->ret < 0))
		return errname(res->err);
	if (!res->has_ret || res->ret == 0)
		return "ok";
	snprintf(buf, cap, "= %lld", (long long)res->ret);
	return buf;
}

static void print_event(FILE *o, const struct ev *e)
{
	const struct bbx_rec *r = &e->r;
	if (F.records) {
		print_record(o, r);
		return;
	}
	time_t t = (time_t)(r->h.realtime_ns / 1000000000ull);
	struct tm tm;
	localtime_r(&t, &tm);
	const char *verb = verb_of(r);
	const char *vc = r->type == BBX_REC_DENY ? "1;31" : r->type == BBX_REC_EXEC || r->type == BBX_REC_PROC ? "1;36"
		       : verb && (!strcmp(verb, "delete") || !strcmp(verb, "rmdir")) ? "33" : "1";
	fprintf(o, "%s%02d:%02d:%02d.%03u%s %d ", C("2"), tm.tm_hour, tm.tm_min, tm.tm_sec,
		(unsigned)(r->h.realtime_ns / 1000000 % 1000), C("0"), r->h.pid);
	put_str(o, e->prog ? e->prog : "?");
	fprintf(o, " %s%s%s%s ", color ? "\033[" : "", color ? vc : "", color ? "m" : "",
		verb ? verb : bbx_rec_type_name(r->type));
	fprintf(o, "%s%s", r->op ? r->op : "-", C("0"));
	switch (r->type) {
	case BBX_REC_EXEC: case BBX_REC_PROC:
		putc(' ', o);
		put_str(o, r->exe ? r->exe : "-");
		if (r->argv_len) {
			fprintf(o, " [");
			put_argv(o, r->argv, r->argv_len);
			putc(']', o);
		}
		break;
	case BBX_REC_EXIT: {
		char s[64];
		status_text(r->status, s, sizeof s);
		fprintf(o, " pid %llu %s", (unsigned long long)r->pid, s);
		break;
	}
	default:
		if (r->path) {
			putc(' ', o);
			put_str(o, r->path);
		}
		if (r->path2) {
			fprintf(o, " -> ");
			put_str(o, r->path2);
		}
		if (r->addr) {
			putc(' ', o);
			put_str(o, r->addr);
		}
		if (r->host) {
			fprintf(o, " (");
			put_str(o, r->host);
			putc(')', o);
		}
		if (r->type == BBX_REC_DENY && r->argv_len) {
			fprintf(o, " [");
			put_argv(o, r->argv, r->argv_len);
			putc(']', o);
		}
		if (r->type == BBX_REC_META)
			fprintf(o, " %s%s%s%s", r->mask & BBX_META_MODE ? "+mode" : "",
				r->mask & BBX_META_OWNER ? "+owner" : "", r->mask & BBX_META_TIMES ? "+times" : "",
				r->mask & BBX_META_XATTR ? "+xattr" : "");
		if (r->type == BBX_REC_SIZE)
			fprintf(o, " from %llu bytes", (unsigned long long)r->size);
		if (r->text) {
			fprintf(o, " \"");
			put_str(o, r->text);
			putc('"', o);
		}
		if (r->type == BBX_REC_SEAL)
			fprintf(o, " %llu paths", (unsigned long long)r->count);
	}
	if (r->has_decision)
		fprintf(o, " %s%s%s", r->decision == BBX_DEC_DENY ? C("1;31") : "",
			decision_name(r->decision), C("0"));
	if (r->type == BBX_REC_DENY) {
		if (r->err)
			fprintf(o, " %s%s%s", C("31"), errname(r->err), C("0"));
		if (r->reason) {
			fprintf(o, " (");
			put_str(o, r->reason);
			putc(')', o);
		}
		if (r->rule) {
			fprintf(o, " rule ");
			put_str(o, r->rule);
		}
	} else if (r->type == BBX_REC_RESULT && r->has_ret) { /* a RESULT without its record */
		fprintf(o, " ref %llu = %lld", (unsigned long long)r->ref, (long long)r->ret);
		if (r->err)
			fprintf(o, " %s", errname(r->err));
	}
	char buf[32];
	const char *res = outcome(e, buf, sizeof buf);
	if (res) {
		bool bad = strcmp(res, "ok") && res[0] != '=';
		fprintf(o, " %s%s%s", bad ? C("31") : C("32"), res, C("0"));
	}
	putc('\n', o);
}

/* ---- JSON --------------------------------------------------------------------- */

/* A JSON string of n bytes.  Valid UTF-8 is copied; a byte that is not part of a valid
 * UTF-8 sequence (0x80-0xff) becomes the lone surrogate \udcNN, the "surrogateescape"
 * of PEP 383: no valid UTF-8 text contains U+DC80-U+DCFF, so the original bytes come
 * back exactly (Python: s.encode("utf-8", "surrogateescape")). */
static void json_strn(FILE *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	putc('"', o);
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		if (c == '"' || c == '\\') {
			putc('\\', o);
			putc(c, o);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			static const char *const sh[] = {['\n'] = "\\n", ['\t'] = "\\t", ['\r'] = "\\r",
							 ['\b'] = "\\b", ['\f'] = "\\f"};
			if (c < 0x20 && sh[c])
				fputs(sh[c], o);
			else
				fprintf(o, "\\u%04x", c);
			i++;
		} else {
			size_t l = utf8_len(u + i, n - i);
			if (!l) {
				fprintf(o, "\\udc%02x", c);
				i++;
			} else {
				fwrite(u + i, 1, l, o);
				i += l;
			}
		}
	}
	putc('"', o);
}

static void json_str(FILE *o, const char *s) { json_strn(o, s, strlen(s)); }

static void json_key(FILE *o, bool *first, const char *k)
{
	fprintf(o, "%s\"%s\":", *first ? "" : ",", k);
	*first = false;
}

static void json_kstr(FILE *o, bool *first, const char *k, const char *v)
{
	if (!v)
		return;
	json_key(o, first, k);
	json_str(o, v);
}

static void json_list(FILE *o, const char *a, size_t n)
{
	putc('[', o);
	for (size_t i = 0; i < n;) {
		size_t l = strlen(a + i);
		if (i)
			putc(',', o);
		json_strn(o, a + i, l);
		i += l + 1;
	}
	putc(']', o);
}

static void rfc3339(uint64_t ns, char *out, size_t cap)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t l = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + l, cap - l, ".%09lluZ", (unsigned long long)(ns % 1000000000ull));
}

static void json_stat(FILE *o, bool *first, const char *k, const struct bbx_stat *st)
{
	json_key(o, first, k);
	fprintf(o, "{\"mode\":%u,\"uid\":%u,\"gid\":%u,\"size\":%llu,\"ino\":%llu,\"nlink\":%llu,"
		   "\"mtime_ns\":%lld}",
		st->mode, st->uid, st->gid, (unsigned long long)st->size, (unsigned long long)st->ino,
		(unsigned long long)st->nlink, (long long)(st->mtime_sec * 1000000000ll + st->mtime_nsec));
}

static void print_json(FILE *o, const struct ev *e)
{
	const struct bbx_rec *r = &e->r;
	bool f = true;
	char ts[64];
	rfc3339(r->h.realtime_ns, ts, sizeof ts);
	fprintf(o, "{\"seq\":%llu,\"type\":\"%s\",\"time\":\"%s\",\"time_ns\":%llu,\"mono_ns\":%llu,"
		   "\"pid\":%d,\"ppid\":%d,\"uid\":%u",
		(unsigned long long)r->h.seq, bbx_rec_type_name(r->type), ts,
		(unsigned long long)r->h.realtime_ns, (unsigned long long)r->h.mono_ns, r->h.pid,
		r->h.ppid, r->h.uid);
	f = false;
	json_kstr(o, &f, "program", e->prog);
	json_kstr(o, &f, "op", r->op);
	json_kstr(o, &f, "verb", verb_of(r));
	json_kstr(o, &f, "path", r->path);
	json_kstr(o, &f, "path2", r->path2);
	if (r->target) {
		json_key(o, &f, "target");
		json_strn(o, r->target, r->target_len);
	}
	json_kstr(o, &f, "exe", r->exe);
	if (r->argv) {
		json_key(o, &f, "argv");
		json_list(o, r->argv, r->argv_len);
	}
	json_kstr(o, &f, "cwd", r->cwd);
	if (r->env) {
		json_key(o, &f, "env");
		json_list(o, r->env, r->env_len);
	}
	json_kstr(o, &f, "addr", r->addr);
	json_kstr(o, &f, "host", r->host);
	switch (r->type) {
	case BBX_REC_CREATE: case BBX_REC_PRESERVE: case BBX_REC_FINAL: case BBX_REC_RENAME:
		json_kstr(o, &f, "kind", bbx_kind_name((int)r->kind));
	}
	if (r->type == BBX_REC_PRESERVE)
		json_kstr(o, &f, "how", bbx_how_name((int)r->how));
	json_kstr(o, &f, "object", r->object);
	if (r->has_size)
		fprintf(o, ",\"size\":%llu", (unsigned long long)r->size);
	if (r->type == BBX_REC_CREATE || r->type == BBX_REC_RENAME)
		fprintf(o, ",\"flags\":%u", r->flags);
	if (r->type == BBX_REC_META) {
		fprintf(o, ",\"changes\":[");
		const char *sep = "";
		static const char *const mn[] = {"mode", "owner", "times", "xattr", "nofollow"};
		for (int b = 0; b < 5; b++)
			if (r->mask & (1u << b)) {
				fprintf(o, "%s\"%s\"", sep, mn[b]);
				sep = ",";
			}
		putc(']', o);
		json_kstr(o, &f, "xattr", r->xname);
	}
	if (r->has_stat)
		json_stat(o, &f, "stat", &r->st);
	if (r->has_ino)
		fprintf(o, ",\"dev\":%llu,\"ino\":%llu", (unsigned long long)r->dev, (unsigned long long)r->ino);
	if (r->has_decision)
		json_kstr(o, &f, "decision", decision_name(r->decision));
	if (r->type == BBX_REC_DENY || (r->type == BBX_REC_EXEC && r->has_decision))
		json_kstr(o, &f, "class", class_name(r->klass));
	if (r->type == BBX_REC_DENY)
		json_kstr(o, &f, "access", access_name(r->access));
	json_kstr(o, &f, "rule", r->rule);
	json_kstr(o, &f, "reason", r->reason);
	json_kstr(o, &f, "text", r->text);
	if (r->type == BBX_REC_SEAL)
		fprintf(o, ",\"count\":%llu", (unsigned long long)r->count);
	if (r->type == BBX_REC_EXIT) {
		if (r->has_pid)
			fprintf(o, ",\"exit_pid\":%llu", (unsigned long long)r->pid);
		if (r->has_status) {
			int s = (int)r->status;
			fprintf(o, ",\"status\":%u", r->status);
			if (WIFEXITED(s))
				fprintf(o, ",\"exit_code\":%d", WEXITSTATUS(s));
			if (WIFSIGNALED(s)) {
				const char *n = sigabbrev_np(WTERMSIG(s));
				fprintf(o, ",\"signal\":\"SIG%s\"", n ? n : "?");
			}
		}
	}
	const struct bbx_rec *res = r->type == BBX_REC_RESULT ? r : result_of(e);
	if (r->type == BBX_REC_RESULT && r->has_ref)
		fprintf(o, ",\"ref\":%llu", (unsigned long long)r->ref);
	if (res && res != r)
		fprintf(o, ",\"result_seq\":%llu", (unsigned long long)res->h.seq);
	if (res && res->has_ret)
		fprintf(o, ",\"ret\":%lld", (long long)res->ret);
	if (res && (res->err || (res->has_ret && res->ret < 0)))
		fprintf(o, ",\"errno\":\"%s\"", errname(res->err));
	else if (r->type == BBX_REC_DENY && r->err)
		fprintf(o, ",\"errno\":\"%s\"", errname(r->err));
	char buf[32];
	const char *oc = outcome(e, buf, sizeof buf);
	if (oc)
		fprintf(o, ",\"result\":\"%s\"", oc);
	fputs("}\n", o);
}

/* ---- OCSF ------------------------------------------------------------------------ */

/* OCSF 1.1: File System Activity (1001), Process Activity (1007), Network Activity
 * (4001).  Records with no such meaning (DIRMETA, RESULT, FINAL, SEAL, NOTE, RESOLVE)
 * are not emitted. */
static void ocsf_addr(FILE *o, const char *addr)
{
	char ip[128] = "";
	long port = -1;
	if (addr[0] == '[') {
		const char *e = strchr(addr, ']');
		if (e && (size_t)(e - addr - 1) < sizeof ip) {
			memcpy(ip, addr + 1, (size_t)(e - addr - 1));
			ip[e - addr - 1] = 0;
			if (e[1] == ':')
				port = atol(e + 2);
		}
	} else if (strncmp(addr, "unix:", 5)) {
		const char *c = strrchr(addr, ':');
		size_t l = c ? (size_t)(c - addr) : strlen(addr);
		if (l < sizeof ip) {
			memcpy(ip, addr, l);
			ip[l] = 0;
			if (c)
				port = atol(c + 1);
		}
	}
	fputs(",\"dst_endpoint\":{", o);
	if (ip[0]) {
		fputs("\"ip\":", o);
		json_str(o, ip);
		if (port >= 0)
			fprintf(o, ",\"port\":%ld", port);
	} else {
		fputs("\"name\":", o);
		json_str(o, addr);
	}
	putc('}', o);
}

static void ocsf_process(FILE *o, const char *key, int32_t pid, const char *exe, const char *argv,
			 size_t argv_len, const char *cwd)
{
	fprintf(o, "\"%s\":{\"pid\":%d", key, pid);
	if (exe) {
		fputs(",\"name\":", o);
		json_str(o, base_name(exe));
		fputs(",\"file\":{\"path\":", o);
		json_str(o, exe);
		fputs(",\"name\":", o);
		json_str(o, base_name(exe));
		fputs(",\"type_id\":1}", o);
	}
	if (argv && argv_len) {
		/* cmd_line: argv joined with spaces (lossy for arguments with spaces) */
		fputs(",\"cmd_line\":", o);
		char *j = malloc(argv_len);
		if (!j)
			err(1, "malloc");
		memcpy(j, argv, argv_len);
		for (size_t i = 0; i + 1 < argv_len; i++)
			if (!j[i])
				j[i] = ' ';
		json_strn(o, j, argv_len - 1);
		free(j);
	}
	if (cwd) {
		fputs(",\"cwd\":", o);
		json_str(o, cwd);
	}
	putc('}', o);
}

static int ocsf_file_type(uint32_t kind)
{
	switch (kind) {
	case BBX_KIND_FILE: case BBX_KIND_HARDLINK: return 1;
	case BBX_KIND_DIR: return 2;
	case BBX_KIND_CHR: return 3;
	case BBX_KIND_BLK: return 4;
	case BBX_KIND_SOCK: return 5;
	case BBX_KIND_SYMLINK: return 6;
	case BBX_KIND_FIFO: return 99;
	default: return 0;
	}
}

static void print_ocsf(FILE *o, const struct ev *e)
{
	const struct bbx_rec *r = &e->r;
	int cls = 0, act = 0;
	bool remove_op = r->op && (!strcmp(r->op, "unlink") || !strcmp(r->op, "unlinkat") ||
				   !strcmp(r->op, "remove") || !strcmp(r->op, "rmdir"));
	switch (r->type) {
	case BBX_REC_CREATE: cls = 1001; act = 1; break;
	case BBX_REC_PRESERVE: cls = 1001; act = preserve_is_content(r) ? 3 : 4; break;
	case BBX_REC_SIZE: cls = 1001; act = 3; break;
	case BBX_REC_RMDIR: cls = 1001; act = 4; break;
	case BBX_REC_RENAME: cls = 1001; act = 5; break;
	case BBX_REC_META: cls = 1001; act = r->mask & (BBX_META_MODE | BBX_META_OWNER) ? 7 : 6; break;
	case BBX_REC_EXEC: case BBX_REC_PROC: cls = 1007; act = 1; break;
	case BBX_REC_EXIT: cls = 1007; act = 2; break;
	case BBX_REC_NET: cls = 4001; act = 1; break;
	case BBX_REC_DENY:
		switch (r->access) {
		case BBX_ACC_EXEC: cls = 1007; act = 1; break;
		case BBX_ACC_CONNECT: cls = 4001; act = 5; break;
		case BBX_ACC_READ: cls = 1001; act = 2; break;
		case BBX_ACC_WRITE:
			cls = 1001;
			act = r->op && !strncmp(r->op, "rename", 6) ? 5 : remove_op ? 4 : 3;
			break;
		default: cls = 1007; act = 99; break;
		}
		break;
	default:
		return;
	}
	if (cls == 4001 && !r->addr)
		return; /* nothing to name the endpoint with */
	const struct bbx_rec *res = result_of(e);
	bool failed = r->type == BBX_REC_DENY ? r->decision != BBX_DEC_AUDIT
		    : res && (res->err || (res->has_ret && res->ret < 0));
	int sev = r->type == BBX_REC_DENY ? 3 : r->has_decision && r->decision == BBX_DEC_LOG ? 2 : 1;
	fprintf(o, "{\"category_uid\":%d,\"class_uid\":%d,\"activity_id\":%d,\"type_uid\":%d,"
		   "\"severity_id\":%d,\"time\":%llu,",
		cls / 1000, cls, act, cls * 100 + act, sev,
		(unsigned long long)(r->h.realtime_ns / 1000000ull));
	fprintf(o, "\"metadata\":{\"version\":\"1.1.0\",\"product\":{\"name\":\"bbx\","
		   "\"vendor_name\":\"bbx\",\"version\":\"%s\"},\"uid\":\"%llu\"",
		PACKAGE_VERSION, (unsigned long long)r->h.seq);
	if (r->op) {
		fputs(",\"log_name\":", o);
		json_str(o, r->op);
	}
	fputs("},\"device\":{\"type_id\":0", o);
	if (L.host[0]) {
		fputs(",\"hostname\":", o);
		json_str(o, L.host);
	}
	fputs("},\"actor\":{", o);
	const struct proc *p = &L.procs[e->proc];
	ocsf_process(o, "process", r->h.pid, p->exe, p->argv, p->argv_len, NULL);
	fputs(",\"user\":{\"uid\":", o);
	fprintf(o, "\"%u\"}}", r->h.uid);
	fprintf(o, ",\"status_id\":%d,\"status\":\"%s\"", failed ? 2 : 1, failed ? "Failure" : "Success");
	if (failed && res)
		fprintf(o, ",\"status_code\":\"%s\"", errname(res->err));
	else if (r->type == BBX_REC_DENY && r->err)
		fprintf(o, ",\"status_code\":\"%s\"", errname(r->err));
	if (r->has_decision) {
		static const int dispo[] = {1, 17, 2, 15, 14};
		static const char *const dname[] = {"Allowed", "Logged", "Blocked", "Detected", "Delayed"};
		uint32_t d = r->decision < 5 ? r->decision : 0;
		fprintf(o, ",\"disposition_id\":%d,\"disposition\":\"%s\"", dispo[d], dname[d]);
	}
	if (r->reason) {
		fputs(",\"status_detail\":", o);
		json_str(o, r->reason);
	}
	if (cls == 1001) {
		const char *path = r->path ? r->path : "";
		fputs(",\"file\":{\"path\":", o);
		json_str(o, path);
		fputs(",\"name\":", o);
		json_str(o, base_name(path));
		fprintf(o, ",\"type_id\":%d}", ocsf_file_type(r->type == BBX_REC_RMDIR ? BBX_KIND_DIR : r->kind));
		if (r->path2) {
			fputs(",\"file_result\":{\"path\":", o);
			json_str(o, r->path2);
			fputs(",\"name\":", o);
			json_str(o, base_name(r->path2));
			fprintf(o, ",\"type_id\":%d}", ocsf_file_type(r->kind));
		}
	} else if (cls == 1007) {
		putc(',', o);
		if (r->type == BBX_REC_EXIT) {
			uint64_t ci = u64map_get(&L.pids, r->pid);
			const struct proc *c = ci ? &L.procs[ci - 1] : NULL;
			ocsf_process(o, "process", (int32_t)r->pid, c ? c->exe : NULL, c ? c->argv : NULL,
				     c ? c->argv_len : 0, NULL);
			if (r->has_status && WIFEXITED((int)r->status))
				fprintf(o, ",\"exit_code\":%d", WEXITSTATUS((int)r->status));
		} else {
			ocsf_process(o, "process", r->h.pid, r->exe ? r->exe : r->path, r->argv,
				     r->argv_len, r->cwd);
		}
	} else {
		ocsf_addr(o, r->addr);
		if (r->host) {
			fputs(",\"dst_endpoint_host\":", o);
			json_str(o, r->host);
		}
	}
	fprintf(o, ",\"unmapped\":{\"bbx_type\":\"%s\"", bbx_rec_type_name(r->type));
	if (r->rule) {
		fputs(",\"rule\":", o);
		json_str(o, r->rule);
	}
	fputs("}}\n", o);
}

/* ---- tree and stats ----------------------------------------------------------------- */

static size_t *kid, *sib;

static void tree_node(FILE *o, size_t i, const char *prefix, bool last, bool root, bool json,
		      int depth)
{
	struct proc *p = &L.procs[i];
	p->shown = true;
	char st[64] = "?";
	if (p->has_status)
		status_text(p->status, st, sizeof st);
	else if (p->is_cmd && L.exit_meta[0])
		snprintf(st, sizeof st, "exit %s", L.exit_meta);
	if (json) {
		fprintf(o, "{\"pid\":%d,\"ppid\":%d,\"depth\":%d", p->pid, p->ppid, depth);
		if (p->exe) {
			fputs(",\"program\":", o);
			json_str(o, base_name(p->exe));
			fputs(",\"exe\":", o);
			json_str(o, p->exe);
		}
		if (p->argv) {
			fputs(",\"argv\":", o);
			json_list(o, p->argv, p->argv_len);
		}
		fputs(",\"status\":", o);
		json_str(o, st);
		if (p->has_status && WIFEXITED((int)p->status))
			fprintf(o, ",\"exit_code\":%d", WEXITSTATUS((int)p->status));
		else if (!p->has_status && p->is_cmd && L.exit_meta[0])
			fprintf(o, ",\"exit_code\":%d", atoi(L.exit_meta)); /* bbx-run's meta */
		fputs(",\"counts\":{", o);
		for (int c = 0; c < C_NCOUNT; c++)
			fprintf(o, "%s\"%s\":%lu", c ? "," : "", count_name[c], p->counts[c]);
		fputs("}}\n", o);
	} else {
		fprintf(o, "%s%s%s%d%s ", prefix, root ? "" : last ? "`- " : "|- ", C("1"), p->pid, C("0"));
		if (p->argv_len)
			put_argv(o, p->argv, p->argv_len);
		else
			put_str(o, p->exe ? base_name(p->exe) : "?");
		fprintf(o, "  [%s]", st);
		for (int c = 0; c < C_NCOUNT; c++)
			if (p->counts[c])
				fprintf(o, " %s=%lu", count_name[c], p->counts[c]);
		putc('\n', o);
	}
	/* children, in order of first appearance (kid/sib lists built by print_tree) */
	char sub[4096];
	snprintf(sub, sizeof sub, "%s%s", prefix, root ? "" : last ? "   " : "|  ");
	for (size_t k = kid[i]; k; k = sib[k - 1]) {
		size_t n = sib[k - 1];
		while (n && L.procs[n - 1].shown)
			n = sib[n - 1];
		if (!L.procs[k - 1].shown)
			tree_node(o, k - 1, sub, n == 0, false, json, depth + 1);
	}
}

static void print_tree(FILE *o, bool json)
{
	/* each process's children as a list in order of appearance: kid[p] is the first
	 * (index + 1), sib[c] the next; O(processes) whatever the shape of the tree */
	kid = calloc(L.nproc + 1, sizeof *kid);
	sib = calloc(L.nproc + 1, sizeof *sib);
	size_t *tail = calloc(L.nproc + 1, sizeof *tail);
	if (!kid || !sib || !tail)
		err(1, "calloc");
	for (size_t i = 0; i < L.nproc; i++) {
		uint64_t pi = u64map_get(&L.pids, (uint64_t)(uint32_t)L.procs[i].ppid);
		if (!pi || pi - 1 == i)
			continue;
		if (tail[pi - 1])
			sib[tail[pi - 1] - 1] = i + 1;
		else
			kid[pi - 1] = i + 1;
		tail[pi - 1] = i + 1;
	}
	free(tail);
	for (size_t i = 0; i < L.nproc; i++) {
		if (L.procs[i].shown)
			continue;
		uint64_t pi = u64map_get(&L.pids, (uint64_t)(uint32_t)L.procs[i].ppid);
		if (pi && !L.procs[pi - 1].shown && pi - 1 != i)
			continue; /* printed under its parent */
		tree_node(o, i, "", true, true, json, 0);
	}
}

struct counter {
	struct bbx_pathmap m;
	const char **keys;
	size_t n, cap;
};

static void counter_add(struct counter *c, const char *key, size_t by)
{
	size_t *slot;
	int rc = bbx_pathmap_put(&c->m, key, &slot);
	if (rc < 0)
		errx(1, "out of memory");
	if (rc == 1) {
		*slot = 0;
		if (c->n == c->cap) {
			c->cap = c->cap ? 2 * c->cap : 32;
			c->keys = xrealloc(c->keys, c->cap * sizeof *c->keys);
		}
		c->keys[c->n++] = key;
	}
	*slot += by;
}

static const struct counter *sort_ctx;
static int by_count(const void *a, const void *b)
{
	size_t ca = *bbx_pathmap_get(&sort_ctx->m, *(const char *const *)a);
	size_t cb = *bbx_pathmap_get(&sort_ctx->m, *(const char *const *)b);
	if (ca != cb)
		return ca < cb ? 1 : -1;
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void counter_print(FILE *o, const char *title, struct counter *c, size_t top, bool json)
{
	sort_ctx = c;
	qsort(c->keys, c->n, sizeof *c->keys, by_count);
	size_t n = top && top < c->n ? top : c->n;
	if (json) {
		fprintf(o, ",\"%s\":%s", title, top ? "[" : "{");
		for (size_t i = 0; i < n; i++) {
			if (i)
				putc(',', o);
			if (top)
				putc('[', o);
			json_str(o, c->keys[i]);
			fprintf(o, "%s%zu%s", top ? "," : ":", *bbx_pathmap_get(&c->m, c->keys[i]), top ? "]" : "");
		}
		fputs(top ? "]" : "}", o);
		return;
	}
	fprintf(o, "%s%s:%s\n", C("1"), title, C("0"));
	for (size_t i = 0; i < n; i++) {
		fprintf(o, "  %8zu  ", *bbx_pathmap_get(&c->m, c->keys[i]));
		put_str(o, c->keys[i]);
		putc('\n', o);
	}
}

static void print_stats(FILE *o, bool json)
{
	struct counter types = {0}, ops = {0}, decs = {0}, progs = {0}, paths = {0};
	unsigned long long pres_n[8] = {0}, pres_b[8] = {0};
	size_t nsel = 0, nfail = 0;
	for (size_t i = 0; i < L.nev; i++) {
		const struct ev *e = &L.ev[i];
		if (!selected(e))
			continue;
		const struct bbx_rec *r = &e->r;
		nsel++;
		counter_add(&types, bbx_rec_type_name(r->type), 1);
		counter_add(&ops, r->op ? r->op : bbx_rec_type_name(r->type), 1);
		if (r->has_decision)
			counter_add(&decs, decision_name(r->decision), 1);
		else if (r->type == BBX_REC_DENY)
			counter_add(&decs, "deny", 1);
		const struct bbx_rec *res = result_of(e);
		if (res && (res->err || (res->has_ret && res->ret < 0)))
			nfail++;
		if (r->type == BBX_REC_FINAL || r->type == BBX_REC_SEAL || r->type == BBX_REC_RESULT)
			continue; /* bookkeeping, not activity */
		counter_add(&progs, e->prog ? e->prog : "?", 1);
		if (r->path && r->type != BBX_REC_DIRMETA)
			counter_add(&paths, r->path, 1);
		if (r->type == BBX_REC_PRESERVE && r->object && r->how < 8) {
			pres_n[r->how]++;
			pres_b[r->how] += r->has_stat ? r->st.size : 0;
		}
	}
	if (json) {
		fprintf(o, "{\"events\":%zu,\"records\":%zu,\"processes\":%zu,\"failed\":%zu,\"sealed\":%s",
			nsel, L.nev, L.nproc, nfail, L.sealed ? "true" : "false");
		counter_print(o, "by_type", &types, 0, true);
		counter_print(o, "by_op", &ops, 0, true);
		counter_print(o, "by_decision", &decs, 0, true);
		fputs(",\"preserved\":{", o);
		for (int h = 1; h <= 3; h++)
			fprintf(o, "%s\"%s\":{\"count\":%llu,\"bytes\":%llu}", h > 1 ? "," : "",
				bbx_how_name(h), pres_n[h], pres_b[h]);
		putc('}', o);
		counter_print(o, "top_programs", &progs, 10, true);
		counter_print(o, "top_paths", &paths, 10, true);
		fputs("}\n", o);
	} else {
		fprintf(o, "%zu events (%zu records), %zu processes, %zu failed calls, %s\n", nsel,
			L.nev, L.nproc, nfail, L.sealed ? "sealed" : "not sealed");
		counter_print(o, "by type", &types, 0, false);
		counter_print(o, "by operation", &ops, 0, false);
		if (decs.n)
			counter_print(o, "by decision", &decs, 0, false);
		fprintf(o, "%spreserved:%s\n", C("1"), C("0"));
		for (int h = 1; h <= 3; h++)
			fprintf(o, "  %8llu  %s (%llu bytes)\n", pres_n[h], bbx_how_name(h), pres_b[h]);
		counter_print(o, "top programs", &progs, 10, false);
		counter_print(o, "top paths", &paths, 10, false);
	}
	struct counter *all[] = {&types, &ops, &decs, &progs, &paths};
	for (size_t i = 0; i < 5; i++) {
		bbx_pathmap_free(&all[i]->m);
		free(all[i]->keys);
	}
}

/* ---- main ------------------------------------------------------------------------- */

static volatile sig_atomic_t stop;
static void on_sigint(int s) { (void)s; stop = 1; }

enum { O_SINCE = 256, O_UNTIL, O_FORMAT, O_NOPAGER, O_COLOR };

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"pid", required_argument, 0, 'p'}, {"op", required_argument, 0, 'o'},
		{"path", required_argument, 0, 'P'}, {"since", required_argument, 0, O_SINCE},
		{"until", required_argument, 0, O_UNTIL}, {"denied", no_argument, 0, 'd'},
		{"exec", no_argument, 0, 'x'}, {"tree", no_argument, 0, 't'},
		{"stats", no_argument, 0, 's'}, {"json", no_argument, 0, 'j'},
		{"format", required_argument, 0, O_FORMAT}, {"records", no_argument, 0, 'r'},
		{"follow", no_argument, 0, 'f'}, {"no-pager", no_argument, 0, O_NOPAGER},
		{"color", required_argument, 0, O_COLOR}, {"colour", required_argument, 0, O_COLOR},
		{"help", no_argument, 0, 'h'},
		/* --verify is wired here by the lead (tools/verify.c, bbx_verify()). */
		{0, 0, 0, 0}};
	enum { FMT_TEXT, FMT_JSON, FMT_OCSF } fmt = FMT_TEXT;
	bool tree = false, stats = false, follow = false, nopager = false;
	int colormode = 0; /* 0 auto, 1 always, -1 never */
	int ch;
	char *end;
	while ((ch = getopt_long(argc, argv, "p:o:P:dxtsjrfh", lo, NULL)) != -1) {
		switch (ch) {
		case 'p':
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v <= 0 || v > INT32_MAX)
				errx(2, "--pid: not a process id: %s", optarg);
			F.pids = xrealloc(F.pids, (F.npids + 1) * sizeof *F.pids);
			F.pids[F.npids++] = v;
			break;
		case 'o':
			F.ops = xrealloc(F.ops, (F.nops + 1) * sizeof *F.ops);
			F.ops[F.nops++] = optarg;
			break;
		case 'P': F.path = optarg; break;
		case O_SINCE:
			if (!parse_when(optarg, &F.since_ns, &F.since_seq, &F.since_is_seq))
				errx(2, "--since: not a date-time, age or seq:N: %s", optarg);
			F.has_since = true;
			break;
		case O_UNTIL:
			if (!parse_when(optarg, &F.until_ns, &F.until_seq, &F.until_is_seq))
				errx(2, "--until: not a date-time, age or seq:N: %s", optarg);
			F.has_until = true;
			break;
		case 'd': F.denied = true; break;
		case 'x': F.exec = true; break;
		case 't': tree = true; break;
		case 's': stats = true; break;
		case 'j': fmt = FMT_JSON; break;
		case O_FORMAT:
			if (!strcmp(optarg, "text")) fmt = FMT_TEXT;
			else if (!strcmp(optarg, "json")) fmt = FMT_JSON;
			else if (!strcmp(optarg, "ocsf")) fmt = FMT_OCSF;
			else errx(2, "--format: text, json or ocsf, not %s", optarg);
			break;
		case 'r': F.records = true; break;
		case 'f': follow = true; break;
		case O_NOPAGER: nopager = true; break;
		case O_COLOR:
			if (!strcmp(optarg, "auto")) colormode = 0;
			else if (!strcmp(optarg, "always")) colormode = 1;
			else if (!strcmp(optarg, "never")) colormode = -1;
			else errx(2, "--color: auto, always or never, not %s", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind > 1) {
		usage(stderr);
		return 2;
	}
	if (tree + stats > 1 || ((tree || stats) && (follow || fmt == FMT_OCSF)))
		errx(2, "--tree, --stats, --follow and --format=ocsf do not combine");

	char dir[PATH_MAX], jpath[PATH_MAX + 16];
	bbx_tool_journal(optind < argc ? argv[optind] : NULL, dir, sizeof dir);
	snprintf(jpath, sizeof jpath, "%s/journal", dir);
	if (bbx_run_meta_get(dir, "host", L.host, sizeof L.host))
		L.host[0] = 0;
	if (bbx_run_meta_get(dir, "exit", L.exit_meta, sizeof L.exit_meta))
		L.exit_meta[0] = 0;

	bool tty = isatty(STDOUT_FILENO);
	const char *nc = getenv("NO_COLOR");
	color = fmt == FMT_TEXT &&
		(colormode == 1 || (colormode == 0 && tty && !(nc && nc[0])));
	FILE *out = stdout, *pager = NULL;
	if (tty && !nopager && !follow) {
		const char *pg = getenv("PAGER");
		if (!pg || !pg[0])
			pg = "less -FRX";
		if (strcmp(pg, "cat")) {
			fflush(stdout);
			signal(SIGPIPE, SIG_IGN);
			pager = popen(pg, "w");
			if (pager)
				out = pager;
		}
	}

	size_t off = 0;
	bool torn = false;
	load(jpath, &off, &torn);
	if (follow) {
		struct sigaction sa = {.sa_handler = on_sigint};
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	for (;;) {
		for (size_t i = L.shown; i < L.nev; i++)
			attribute(i);
		if (!tree && !stats)
			for (size_t i = L.shown; i < L.nev; i++) {
				const struct ev *e = &L.ev[i];
				if (!selected(e))
					continue;
				if (fmt == FMT_JSON)
					print_json(out, e);
				else if (fmt == FMT_OCSF)
					print_ocsf(out, e);
				else
					print_event(out, e);
			}
		L.shown = L.nev;
		if (!follow || L.sealed || stop)
			break;
		fflush(out);
		while (!stop) {
			struct timespec ts = {0, 200 * 1000000};
			nanosleep(&ts, NULL);
			if (load(jpath, &off, &torn))
				break;
		}
		if (stop && L.shown == L.nev)
			break;
	}
	if (tree)
		print_tree(out, fmt == FMT_JSON);
	if (stats)
		print_stats(out, fmt == FMT_JSON);
	int bad_out = fflush(out) || ferror(out);
	if (pager) {
		pclose(pager);
		bad_out = 0; /* quitting the pager early is not a failure */
	}
	if (L.bad_ranges)
		warnx("%zu damaged range(s) (%zu bytes) skipped in %s", L.bad_ranges, L.bad_bytes, jpath);
	if (torn)
		warnx("torn tail at offset %zu: an incomplete record (the end of the log)", off);
	return bad_out ? 1 : 0;
}
