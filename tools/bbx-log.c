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
#include "log.h"
#include "verify.h"
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
		"  -j, --json         JSON Lines (with --stats/--tree/--verify: JSON too)\n"
		"  -V, --verify       check integrity: checksums, hash chain, sequence numbers,\n"
		"                     seal, torn tail, objects; exit 0 clean, 1 problems\n"
		"      --format F     text, json or ocsf (OCSF 1.1 JSON Lines)\n"
		"  -r, --records      every record, RESULTs unfolded (the format of bbx-log 0.1)\n"
		"  -f, --follow       keep reading as the run appends, until it is sealed\n"
		"      --no-pager     never page; --color=auto|always|never\n"
		"  -h, --help         this text\n"
		"      --version      the version and journal format\n");
}

/* ---- small helpers --------------------------------------------------------------- */

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		err(1, "realloc");
	return p;
}

static size_t u64map_slot(const struct u64map *m, uint64_t key)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ull;
	size_t i = (size_t)(h ^ (h >> 29)) & (m->cap - 1);
	while (m->v[i] && m->k[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

uint64_t bbx_log_map_get(const struct u64map *m, uint64_t key)
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

const char *bbx_log_basename(const char *p)
{
	if (!p)
		return NULL;
	const char *s = strrchr(p, '/');
	return s && s[1] ? s + 1 : p;
}

const char *bbx_log_errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

const char *bbx_log_decision_name(uint32_t d)
{
	static const char *const n[] = {"allow", "log", "deny", "audit", "ask"};
	return d < 5 ? n[d] : "?";
}

const char *bbx_log_class_name(uint32_t c)
{
	static const char *const n[] = {"none", "safe", "risky", "dangerous", "destructive"};
	return c < 5 ? n[c] : "?";
}

const char *bbx_log_access_name(uint32_t a)
{
	static const char *const n[] = {"?", "write", "read", "exec", "connect", "syscall"};
	return a < 6 ? n[a] : "?";
}

/* PRESERVE has two forms: content (the name stays) and removal (the name goes). */
bool bbx_log_is_content(const struct bbx_rec *r)
{
	return r->type == BBX_REC_PRESERVE &&
	       (r->how == BBX_HOW_COPY || r->how == BBX_HOW_REFLINK || r->how == BBX_HOW_LOST ||
		r->how == BBX_HOW_PACKED) &&
	       r->op && strcmp(r->op, "unlink") && strcmp(r->op, "unlinkat") &&
	       strcmp(r->op, "remove") && strncmp(r->op, "rename", 6);
}

static bool is_spawn_op(const char *op)
{
	return op && (!strncmp(op, "posix_spawn", 11) || !strcmp(op, "system") ||
		      !strcmp(op, "popen") || !strcmp(op, "bbx-run"));
}

/* The short verb of an event: what happened, in one word. */
const char *bbx_log_verb(const struct bbx_rec *r)
{
	switch (r->type) {
	case BBX_REC_EXEC: return "exec";
	case BBX_REC_CREATE: return "create";
	case BBX_REC_PRESERVE:
		return bbx_log_is_content(r) ? "write"
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

const char *const bbx_log_count_name[C_NCOUNT] = {"creates", "writes", "deletes", "renames",
						 "meta", "execs", "denials", "connects"};
struct bbx_log_state bbx_log;

static size_t proc_new(int32_t pid, int32_t ppid, uint64_t seq)
{
	if (bbx_log.nproc == bbx_log.pcap) {
		bbx_log.pcap = bbx_log.pcap ? 2 * bbx_log.pcap : 64;
		bbx_log.procs = xrealloc(bbx_log.procs, bbx_log.pcap * sizeof *bbx_log.procs);
	}
	struct proc *p = &bbx_log.procs[bbx_log.nproc];
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->ppid = ppid;
	p->first_seq = seq;
	u64map_put(&bbx_log.pids, (uint64_t)(uint32_t)pid, bbx_log.nproc + 1);
	return bbx_log.nproc++;
}

/* Hands the pending spawn of process sp (its EXEC) to the new process c. */
static void take_spawn(size_t sp, size_t c)
{
	const struct bbx_rec *s = bbx_log.procs[sp].spawn;
	bbx_log.procs[c].exe = s->exe;
	bbx_log.procs[c].argv = s->argv;
	bbx_log.procs[c].argv_len = s->argv_len;
	bbx_log.procs[c].is_cmd = s->op && !strcmp(s->op, "bbx-run");
	bbx_log.procs[sp].spawn = NULL;
	if (bbx_log.spawner == sp + 1)
		bbx_log.spawner = 0;
}

/* The process pid, made on first sight.  A new process inherits its parent's program
 * (a fork), or takes the parent's pending spawn.  A parent never seen itself (a shell
 * that journaled nothing but forked children that did) is made up when a spawn is
 * pending: it is taken to be that spawned child (PROC records, once written, name every
 * process and make this guess unnecessary). */
static size_t proc_get(int32_t pid, int32_t ppid, uint64_t seq)
{
	uint64_t i = bbx_log_map_get(&bbx_log.pids, (uint64_t)(uint32_t)pid);
	if (i)
		return (size_t)i - 1;
	uint64_t pi = bbx_log_map_get(&bbx_log.pids, (uint64_t)(uint32_t)ppid);
	if (!pi && ppid > 0 && bbx_log.spawner) {
		size_t sp = bbx_log.spawner - 1;
		size_t q = proc_new(ppid, bbx_log.procs[sp].pid, seq);
		take_spawn(sp, q);
		pi = q + 1;
	}
	size_t n = proc_new(pid, ppid, seq);
	if (pi) {
		size_t pp = pi - 1;
		if (bbx_log.procs[pp].spawn) {
			take_spawn(pp, n);
		} else { /* a fork: the parent's program until it execs */
			bbx_log.procs[n].exe = bbx_log.procs[pp].exe;
			bbx_log.procs[n].argv = bbx_log.procs[pp].argv;
			bbx_log.procs[n].argv_len = bbx_log.procs[pp].argv_len;
		}
	}
	return n;
}

const struct bbx_rec *bbx_log_result(const struct ev *e)
{
	return e->result ? &bbx_log.ev[e->result - 1].r : NULL;
}

static void count_event(struct proc *p, const struct bbx_rec *r)
{
	switch (r->type) {
	case BBX_REC_CREATE: p->counts[C_CREATE]++; break;
	case BBX_REC_PRESERVE: p->counts[bbx_log_is_content(r) ? C_WRITE : C_DELETE]++; break;
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
	struct ev *e = &bbx_log.ev[i];
	const struct bbx_rec *r = &e->r;
	size_t pi = proc_get(r->h.pid, r->h.ppid, r->h.seq);
	e->proc = pi;
	struct proc *p = &bbx_log.procs[pi];
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
	e->prog = bbx_log_basename(p->exe);
	if (r->type == BBX_REC_EXEC) {
		const struct bbx_rec *res = bbx_log_result(e);
		bool failed = res && (res->ret < 0 || res->err);
		if (is_spawn_op(r->op)) {
			if (!failed) {
				p->spawn = r;
				bbx_log.spawner = pi + 1;
			}
		} else if (!failed) {
			p->exe = r->exe;
			p->argv = r->argv;
			p->argv_len = r->argv_len;
			/* bbx-run's command: its child execs it under the shim, and that is
			 * the journal's first exec. */
			static bool first_exec_seen;
			if (!first_exec_seen)
				p->is_cmd = true;
			first_exec_seen = true;
		}
	}
	if (r->type == BBX_REC_EXIT && r->has_pid) {
		size_t ci = proc_get((int32_t)r->pid, r->h.pid, r->h.seq);
		bbx_log.procs[ci].has_status = r->has_status;
		bbx_log.procs[ci].status = r->status;
	}
	count_event(&bbx_log.procs[pi], r); /* proc_get may have moved the table */
}

/* ---- loading -------------------------------------------------------------------- */

/* Reads the records of path from offset *off on, appends them as events and folds
 * RESULTs.  Keeps the mapping alive (events point into it).  Returns the number of
 * new events; *torn is set when the log ends in an incomplete record. */
static size_t load(const char *path, size_t *off, bool *torn)
{
	/* Kept for the life of the program (the events point into its mapping); listed so
	 * that it stays reachable. */
	static struct bbx_reader *volatile kept[64]; /* volatile: stores never optimised out */
	static size_t nkept;
	struct bbx_reader *rd = malloc(sizeof *rd);
	if (!rd)
		err(1, "malloc");
	if (nkept < sizeof kept / sizeof kept[0])
		kept[nkept++] = rd;
	int rc = bbx_reader_open(rd, path);
	if (rc)
		errx(1, "%s: %s", path, strerror(-rc));
	if (*off > rd->size) /* the journal shrank: not an append-only log any more */
		errx(1, "%s: shorter than already read (%zu < %zu bytes)", path, rd->size, *off);
	rd->off = *off;
	size_t first = bbx_log.nev;
	struct bbx_rec rec;
	int st;
	while ((st = bbx_reader_next(rd, &rec, NULL)) == BBX_READ_OK) {
		if (bbx_log.nev == bbx_log.cap) {
			bbx_log.cap = bbx_log.cap ? 2 * bbx_log.cap : 1024;
			bbx_log.ev = xrealloc(bbx_log.ev, bbx_log.cap * sizeof *bbx_log.ev);
		}
		struct ev *e = &bbx_log.ev[bbx_log.nev];
		memset(e, 0, sizeof *e);
		e->r = rec;
		if (rec.type == BBX_REC_RESULT && rec.has_ref) {
			uint64_t t = bbx_log_map_get(&bbx_log.seqs, rec.ref);
			if (t && t - 1 >= bbx_log.shown && !bbx_log.ev[t - 1].result) {
				bbx_log.ev[t - 1].result = bbx_log.nev + 1;
				e->folded = true;
			}
		}
		if (rec.type == BBX_REC_SEAL)
			bbx_log.sealed = true;
		if (rec.type != BBX_REC_RESULT)
			u64map_put(&bbx_log.seqs, rec.h.seq, bbx_log.nev + 1);
		bbx_log.nev++;
		*off = rd->off;
	}
	*torn = st == BBX_READ_TORN;
	bbx_log.bad_ranges += rd->bad_ranges;
	bbx_log.bad_bytes += rd->bad_bytes;
	if (*torn)
		*off = rd->torn_off; /* read again from there: the writer may complete it */
	if (bbx_log.nev == first) {
		bbx_reader_close(rd);
		free(rd);
	} /* else the mapping stays: the new events point into it */
	return bbx_log.nev - first;
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
	const char *v = bbx_log_verb(r);
	for (size_t i = 0; i < F.nops; i++)
		if ((r->op && !strcmp(F.ops[i], r->op)) ||
		    !strcasecmp(F.ops[i], bbx_rec_type_name(r->type)) || (v && !strcmp(F.ops[i], v)))
			return true;
	return false;
}

bool bbx_log_selected(const struct ev *e)
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
size_t bbx_log_utf8_len(const unsigned char *s, size_t n)
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

bool bbx_log_color;

/* Writes s with control bytes, backslash and bytes that are not UTF-8 escaped as
 * \xNN, so every event stays one line and no byte is lost. */
void bbx_log_put_esc(FILE *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t l = bbx_log_utf8_len(u + i, n - i);
		if (!l || u[i] < 0x20 || u[i] == 0x7f || u[i] == '\\') {
			fprintf(o, "\\x%02x", u[i]);
			i++;
		} else {
			fwrite(u + i, 1, l, o);
			i += l;
		}
	}
}

void bbx_log_put_str(FILE *o, const char *s) { bbx_log_put_esc(o, s, strlen(s)); }

void bbx_log_put_argv(FILE *o, const char *a, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t l = strlen(a + i);
		if (i)
			putc(' ', o);
		bool q = !l || strpbrk(a + i, " \t'\"") != NULL;
		if (q)
			putc('\'', o);
		bbx_log_put_esc(o, a + i, l);
		if (q)
			putc('\'', o);
		i += l + 1;
	}
}

/* The status of an EXIT, in words: "exit 3" or "killed SIGTERM". */
void bbx_log_status_text(uint32_t st, char *out, size_t cap)
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
		bbx_log_put_str(o, r->exe ? r->exe : "-");
		fprintf(o, " argv=[");
		for (size_t i = 0; i < r->argv_len;) {
			size_t l = strlen(r->argv + i);
			fprintf(o, "%s\"", i ? " " : "");
			bbx_log_put_esc(o, r->argv + i, l);
			fprintf(o, "\"");
			i += l + 1;
		}
		fprintf(o, "]");
		if (r->cwd) {
			fprintf(o, " cwd=");
			bbx_log_put_str(o, r->cwd);
		}
		fprintf(o, " ppid=%d", r->h.ppid);
	} else {
		bbx_log_put_str(o, r->path ? r->path : r->addr ? r->addr : r->host ? r->host : "-");
		if (r->path2) {
			fprintf(o, " -> ");
			bbx_log_put_str(o, r->path2);
		}
	}
	switch (r->type) {
	case BBX_REC_CREATE: case BBX_REC_PRESERVE: case BBX_REC_FINAL: case BBX_REC_RENAME:
		fprintf(o, " kind=%s", bbx_kind_name((int)r->kind));
		break;
	}
	if (r->type == BBX_REC_PRESERVE || (r->type == BBX_REC_CREATE && r->how))
		fprintf(o, " how=%s", bbx_how_name((int)r->how));
	if (r->object)
		fprintf(o, " obj=%s", r->object);
	if (r->has_offset)
		fprintf(o, " offset=%llu", (unsigned long long)r->offset);
	if (r->target) {
		fprintf(o, " target=");
		bbx_log_put_esc(o, r->target, r->target_len);
	}
	if (r->has_size)
		fprintf(o, " size=%llu", (unsigned long long)r->size);
	if (r->has_duration)
		fprintf(o, " duration=%lluns", (unsigned long long)r->duration);
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
	if (r->xattrs_len) {
		size_t off = 0, vlen, n = 0;
		const char *name;
		const void *val;
		while (bbx_xattrs_next(r->xattrs, r->xattrs_len, &off, &name, &val, &vlen) > 0)
			n++;
		fprintf(o, " xattrs=%zu", n);
	}
	if (r->has_stat && r->type != BBX_REC_FINAL)
		fprintf(o, " was=%04o,%u:%u,%llu", r->st.mode & 07777, r->st.uid, r->st.gid,
			(unsigned long long)r->st.size);
	if (r->has_ref)
		fprintf(o, " ref=%llu", (unsigned long long)r->ref);
	if (r->has_ret) {
		fprintf(o, " ret=%lld", (long long)r->ret);
		if (r->ret < 0)
			fprintf(o, " err=%s", bbx_log_errname(r->err));
	}
	if (r->has_ino)
		fprintf(o, " ino=%llu", (unsigned long long)r->ino);
	if (r->type == BBX_REC_SEAL)
		fprintf(o, " paths=%llu", (unsigned long long)r->count);
	if (r->has_decision)
		fprintf(o, " decision=%s", bbx_log_decision_name(r->decision));
	if (r->type == BBX_REC_DENY && r->access)
		fprintf(o, " access=%s", bbx_log_access_name(r->access));
	if (r->type == BBX_REC_DENY && r->err)
		fprintf(o, " err=%s", bbx_log_errname(r->err));
	if (r->type == BBX_REC_EXIT) {
		char s[64];
		bbx_log_status_text(r->status, s, sizeof s);
		fprintf(o, " pid=%llu status=%s", (unsigned long long)r->pid, s);
	}
	if (r->rule) {
		fprintf(o, " rule=");
		bbx_log_put_str(o, r->rule);
	}
	if (r->reason && r->type != BBX_REC_DENY) {
		fprintf(o, " reason=");
		bbx_log_put_str(o, r->reason);
	}
	if (r->text) {
		fprintf(o, " text=");
		bbx_log_put_str(o, r->text);
	}
	putc('\n', o);
}

/* The outcome of an event from its folded RESULT: "ok", "= RET" or the errno name. */
const char *bbx_log_outcome(const struct ev *e, char *buf, size_t cap)
{
	const struct bbx_rec *res = bbx_log_result(e);
	if (!res)
		return NULL;
	if (res->err || (res->has_ret && res->ret < 0))
		return bbx_log_errname(res->err);
	if (!res->has_ret || res->ret == 0)
		return "ok";
	snprintf(buf, cap, "= %lld", (long long)res->ret);
	return buf;
}

/* " (reason) rule file:line", where the record has them. */
static void put_reason_rule(FILE *o, const struct bbx_rec *r)
{
	if (r->reason) {
		fprintf(o, " (");
		bbx_log_put_str(o, r->reason);
		putc(')', o);
	}
	if (r->rule) {
		fprintf(o, " rule ");
		bbx_log_put_str(o, r->rule);
	}
}

/* What a PRESERVE kept, when it is worth a reader's eye: a pre-image that was not kept
 * (over [journal] max_preserve, allowed: undo cannot restore the path), or a copy large
 * or slow enough to explain why its call took long. */
static void print_kept(FILE *o, const struct bbx_rec *r)
{
	char hs[32];
	if (r->how == BBX_HOW_LOST) {
		fprintf(o, " %sNOT PRESERVED%s", C("1;31"), C("0"));
		if (r->has_size) {
			bbx_fmt_size(r->size, hs, sizeof hs);
			fprintf(o, " %s", hs);
		}
		fprintf(o, ", cannot be undone");
		put_reason_rule(o, r);
		return;
	}
	if (!r->has_size ||
	    (r->how != BBX_HOW_COPY && r->how != BBX_HOW_REFLINK && r->how != BBX_HOW_PACKED))
		return;
	uint64_t ms = r->has_duration ? r->duration / 1000000 : 0;
	if (r->size < (1u << 20) && ms < 100)
		return; /* small and quick: nothing to say */
	bbx_fmt_size(r->size, hs, sizeof hs);
	if (r->how == BBX_HOW_REFLINK)
		fprintf(o, " (kept %s by reflink)", hs);
	else
		fprintf(o, " (kept %s by copy in %llu.%02llu s)", hs, (unsigned long long)(ms / 1000),
			(unsigned long long)(ms % 1000 / 10));
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
	const char *verb = bbx_log_verb(r);
	const char *vc = r->type == BBX_REC_DENY ? "1;31" : r->type == BBX_REC_EXEC || r->type == BBX_REC_PROC ? "1;36"
		       : verb && (!strcmp(verb, "delete") || !strcmp(verb, "rmdir")) ? "33" : "1";
	fprintf(o, "%s%02d:%02d:%02d.%03u%s %d ", C("2"), tm.tm_hour, tm.tm_min, tm.tm_sec,
		(unsigned)(r->h.realtime_ns / 1000000 % 1000), C("0"), r->h.pid);
	bbx_log_put_str(o, e->prog ? e->prog : "?");
	fprintf(o, " %s%s%s%s ", bbx_log_color ? "\033[" : "", bbx_log_color ? vc : "", bbx_log_color ? "m" : "",
		verb ? verb : bbx_rec_type_name(r->type));
	fprintf(o, "%s%s", r->op ? r->op : "-", C("0"));
	switch (r->type) {
	case BBX_REC_EXEC: case BBX_REC_PROC:
		putc(' ', o);
		bbx_log_put_str(o, r->exe ? r->exe : "-");
		if (r->argv_len) {
			fprintf(o, " [");
			bbx_log_put_argv(o, r->argv, r->argv_len);
			putc(']', o);
		}
		break;
	case BBX_REC_EXIT: {
		char s[64];
		bbx_log_status_text(r->status, s, sizeof s);
		fprintf(o, " pid %llu %s", (unsigned long long)r->pid, s);
		break;
	}
	default:
		if (r->path) {
			putc(' ', o);
			bbx_log_put_str(o, r->path);
		}
		if (r->path2) {
			fprintf(o, " -> ");
			bbx_log_put_str(o, r->path2);
		}
		if (r->addr) {
			putc(' ', o);
			bbx_log_put_str(o, r->addr);
		}
		if (r->host) {
			fprintf(o, " (");
			bbx_log_put_str(o, r->host);
			putc(')', o);
		}
		if (r->type == BBX_REC_DENY && r->argv_len) {
			fprintf(o, " [");
			bbx_log_put_argv(o, r->argv, r->argv_len);
			putc(']', o);
		}
		if (r->type == BBX_REC_META)
			fprintf(o, " %s%s%s%s", r->mask & BBX_META_MODE ? "+mode" : "",
				r->mask & BBX_META_OWNER ? "+owner" : "", r->mask & BBX_META_TIMES ? "+times" : "",
				r->mask & BBX_META_XATTR ? "+xattr" : "");
		if (r->type == BBX_REC_SIZE)
			fprintf(o, " from %llu bytes", (unsigned long long)r->size);
		if (r->type == BBX_REC_PRESERVE)
			print_kept(o, r);
		if (r->text) {
			fprintf(o, " \"");
			bbx_log_put_str(o, r->text);
			putc('"', o);
		}
		if (r->type == BBX_REC_SEAL)
			fprintf(o, " %llu paths", (unsigned long long)r->count);
	}
	if (r->has_decision)
		fprintf(o, " %s%s%s", r->decision == BBX_DEC_DENY ? C("1;31") : "",
			bbx_log_decision_name(r->decision), C("0"));
	if (r->type == BBX_REC_DENY) {
		if (r->err)
			fprintf(o, " %s%s%s", C("31"), bbx_log_errname(r->err), C("0"));
		put_reason_rule(o, r);
	} else if (r->type == BBX_REC_RESULT && r->has_ret) { /* a RESULT without its record */
		fprintf(o, " ref %llu = %lld", (unsigned long long)r->ref, (long long)r->ret);
		if (r->err)
			fprintf(o, " %s", bbx_log_errname(r->err));
	}
	char buf[32];
	const char *res = bbx_log_outcome(e, buf, sizeof buf);
	if (res) {
		bool bad = strcmp(res, "ok") && res[0] != '=';
		fprintf(o, " %s%s%s", bad ? C("31") : C("32"), res, C("0"));
	}
	putc('\n', o);
}

/* ---- main ------------------------------------------------------------------------- */

static volatile sig_atomic_t stop;
static void on_sigint(int s) { (void)s; stop = 1; }

enum { O_SINCE = 256, O_UNTIL, O_FORMAT, O_NOPAGER, O_COLOR, O_VERSION };

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
		{"verify", no_argument, 0, 'V'},
		{"version", no_argument, 0, O_VERSION},
		{0, 0, 0, 0}};
	enum { FMT_TEXT, FMT_JSON, FMT_OCSF } fmt = FMT_TEXT;
	bool tree = false, stats = false, follow = false, nopager = false, verify = false;
	int colormode = 0; /* 0 auto, 1 always, -1 never */
	int ch;
	char *end;
	while ((ch = getopt_long(argc, argv, "p:o:P:dxtsjrfhV", lo, NULL)) != -1) {
		switch (ch) {
		case 'V':
			verify = true;
			break;
		case O_VERSION:
			bbx_tool_version("bbx-log");
			return 0;
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
	if (verify) /* 0 clean, 1 problems, 2 unreadable */
		return bbx_verify(dir, stdout, fmt == FMT_JSON);
	snprintf(jpath, sizeof jpath, "%s/journal", dir);
	if (bbx_run_meta_get(dir, "host", bbx_log.host, sizeof bbx_log.host))
		bbx_log.host[0] = 0;
	if (bbx_run_meta_get(dir, "exit", bbx_log.exit_meta, sizeof bbx_log.exit_meta))
		bbx_log.exit_meta[0] = 0;

	bool tty = isatty(STDOUT_FILENO);
	const char *nc = getenv("NO_COLOR");
	bbx_log_color = fmt == FMT_TEXT &&
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
		for (size_t i = bbx_log.shown; i < bbx_log.nev; i++)
			attribute(i);
		if (!tree && !stats)
			for (size_t i = bbx_log.shown; i < bbx_log.nev; i++) {
				const struct ev *e = &bbx_log.ev[i];
				if (!bbx_log_selected(e))
					continue;
				if (fmt == FMT_JSON)
					bbx_log_print_json(out, e);
				else if (fmt == FMT_OCSF)
					bbx_log_print_ocsf(out, e);
				else
					print_event(out, e);
			}
		bbx_log.shown = bbx_log.nev;
		if (!follow || bbx_log.sealed || stop)
			break;
		fflush(out);
		while (!stop) {
			struct timespec ts = {0, 200 * 1000000};
			nanosleep(&ts, NULL);
			if (load(jpath, &off, &torn))
				break;
		}
		if (stop && bbx_log.shown == bbx_log.nev)
			break;
	}
	if (tree)
		bbx_log_print_tree(out, fmt == FMT_JSON);
	if (stats)
		bbx_log_print_stats(out, fmt == FMT_JSON);
	int bad_out = fflush(out) || ferror(out);
	if (pager) {
		pclose(pager);
		bad_out = 0; /* quitting the pager early is not a failure */
	}
	if (bbx_log.bad_ranges)
		warnx("%zu damaged range(s) (%zu bytes) skipped in %s", bbx_log.bad_ranges, bbx_log.bad_bytes, jpath);
	if (torn)
		warnx("torn tail at offset %zu: an incomplete record (the end of the log)", off);
	return bad_out ? 1 : 0;
}
