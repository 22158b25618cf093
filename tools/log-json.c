/* SPDX-License-Identifier: MIT
 *
 * log-json.c - bbx-log's machine-readable output: JSON Lines (one object per event,
 * every string lossless through the surrogateescape of PEP 383) and OCSF 1.1.
 */
#include "log.h"

#include <err.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

/* ---- JSON --------------------------------------------------------------------- */

/* A JSON string of n bytes.  Valid UTF-8 is copied; a byte that is not part of a valid
 * UTF-8 sequence (0x80-0xff) becomes the lone surrogate \udcNN, the "surrogateescape"
 * of PEP 383: no valid UTF-8 text contains U+DC80-U+DCFF, so the original bytes come
 * back exactly (Python: s.encode("utf-8", "surrogateescape")). */
void bbx_log_json_strn(FILE *o, const char *s, size_t n)
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
			size_t l = bbx_log_utf8_len(u + i, n - i);
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

void bbx_log_json_str(FILE *o, const char *s) { bbx_log_json_strn(o, s, strlen(s)); }

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
	bbx_log_json_str(o, v);
}

void bbx_log_json_list(FILE *o, const char *a, size_t n)
{
	putc('[', o);
	for (size_t i = 0; i < n;) {
		size_t l = strlen(a + i);
		if (i)
			putc(',', o);
		bbx_log_json_strn(o, a + i, l);
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

void bbx_log_print_json(FILE *o, const struct ev *e)
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
	json_kstr(o, &f, "verb", bbx_log_verb(r));
	json_kstr(o, &f, "path", r->path);
	json_kstr(o, &f, "path2", r->path2);
	if (r->target) {
		json_key(o, &f, "target");
		bbx_log_json_strn(o, r->target, r->target_len);
	}
	json_kstr(o, &f, "exe", r->exe);
	if (r->argv) {
		json_key(o, &f, "argv");
		bbx_log_json_list(o, r->argv, r->argv_len);
	}
	json_kstr(o, &f, "cwd", r->cwd);
	if (r->env) {
		json_key(o, &f, "env");
		bbx_log_json_list(o, r->env, r->env_len);
	}
	json_kstr(o, &f, "addr", r->addr);
	json_kstr(o, &f, "host", r->host);
	switch (r->type) {
	case BBX_REC_CREATE: case BBX_REC_PRESERVE: case BBX_REC_FINAL: case BBX_REC_RENAME:
		json_kstr(o, &f, "kind", bbx_kind_name((int)r->kind));
	}
	if (r->type == BBX_REC_PRESERVE || (r->type == BBX_REC_CREATE && r->how))
		json_kstr(o, &f, "how", bbx_how_name((int)r->how));
	json_kstr(o, &f, "object", r->object);
	if (r->has_offset)
		fprintf(o, ",\"offset\":%llu", (unsigned long long)r->offset);
	if (r->has_size)
		fprintf(o, ",\"size\":%llu", (unsigned long long)r->size);
	if (r->has_duration)
		fprintf(o, ",\"duration_ns\":%llu", (unsigned long long)r->duration);
	if (r->type == BBX_REC_PRESERVE && r->how == BBX_HOW_LOST)
		fprintf(o, ",\"restorable\":false");
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
	if (r->xattrs_len) { /* a removed directory's attributes: their names */
		size_t off = 0, vlen;
		const char *name, *sep = "";
		const void *val;
		fprintf(o, ",\"xattrs\":[");
		while (bbx_xattrs_next(r->xattrs, r->xattrs_len, &off, &name, &val, &vlen) > 0) {
			fputs(sep, o);
			bbx_log_json_str(o, name);
			sep = ",";
		}
		putc(']', o);
	}
	if (r->has_stat)
		json_stat(o, &f, "stat", &r->st);
	if (r->has_ino)
		fprintf(o, ",\"dev\":%llu,\"ino\":%llu", (unsigned long long)r->dev, (unsigned long long)r->ino);
	if (r->has_decision)
		json_kstr(o, &f, "decision", bbx_log_decision_name(r->decision));
	if (r->type == BBX_REC_DENY || (r->type == BBX_REC_EXEC && r->has_decision))
		json_kstr(o, &f, "class", bbx_log_class_name(r->klass));
	if (r->type == BBX_REC_DENY)
		json_kstr(o, &f, "access", bbx_log_access_name(r->access));
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
	const struct bbx_rec *res = r->type == BBX_REC_RESULT ? r : bbx_log_result(e);
	if (r->type == BBX_REC_RESULT && r->has_ref)
		fprintf(o, ",\"ref\":%llu", (unsigned long long)r->ref);
	if (res && res != r)
		fprintf(o, ",\"result_seq\":%llu", (unsigned long long)res->h.seq);
	if (res && res->has_ret)
		fprintf(o, ",\"ret\":%lld", (long long)res->ret);
	if (res && (res->err || (res->has_ret && res->ret < 0)))
		fprintf(o, ",\"errno\":\"%s\"", bbx_log_errname(res->err));
	else if (r->type == BBX_REC_DENY && r->err)
		fprintf(o, ",\"errno\":\"%s\"", bbx_log_errname(r->err));
	char buf[32];
	const char *oc = bbx_log_outcome(e, buf, sizeof buf);
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
		bbx_log_json_str(o, ip);
		if (port >= 0)
			fprintf(o, ",\"port\":%ld", port);
	} else {
		fputs("\"name\":", o);
		bbx_log_json_str(o, addr);
	}
	putc('}', o);
}

static void ocsf_process(FILE *o, const char *key, int32_t pid, const char *exe, const char *argv,
			 size_t argv_len, const char *cwd)
{
	fprintf(o, "\"%s\":{\"pid\":%d", key, pid);
	if (exe) {
		fputs(",\"name\":", o);
		bbx_log_json_str(o, bbx_log_basename(exe));
		fputs(",\"file\":{\"path\":", o);
		bbx_log_json_str(o, exe);
		fputs(",\"name\":", o);
		bbx_log_json_str(o, bbx_log_basename(exe));
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
		bbx_log_json_strn(o, j, argv_len - 1);
		free(j);
	}
	if (cwd) {
		fputs(",\"cwd\":", o);
		bbx_log_json_str(o, cwd);
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

void bbx_log_print_ocsf(FILE *o, const struct ev *e)
{
	const struct bbx_rec *r = &e->r;
	int cls = 0, act = 0;
	bool remove_op = r->op && (!strcmp(r->op, "unlink") || !strcmp(r->op, "unlinkat") ||
				   !strcmp(r->op, "remove") || !strcmp(r->op, "rmdir"));
	switch (r->type) {
	case BBX_REC_CREATE: cls = 1001; act = 1; break;
	case BBX_REC_PRESERVE: cls = 1001; act = bbx_log_is_content(r) ? 3 : 4; break;
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
	const struct bbx_rec *res = bbx_log_result(e);
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
		bbx_log_json_str(o, r->op);
	}
	fputs("},\"device\":{\"type_id\":0", o);
	if (bbx_log.host[0]) {
		fputs(",\"hostname\":", o);
		bbx_log_json_str(o, bbx_log.host);
	}
	fputs("},\"actor\":{", o);
	const struct proc *p = &bbx_log.procs[e->proc];
	ocsf_process(o, "process", r->h.pid, p->exe, p->argv, p->argv_len, NULL);
	fputs(",\"user\":{\"uid\":", o);
	fprintf(o, "\"%u\"}}", r->h.uid);
	fprintf(o, ",\"status_id\":%d,\"status\":\"%s\"", failed ? 2 : 1, failed ? "Failure" : "Success");
	if (failed && res)
		fprintf(o, ",\"status_code\":\"%s\"", bbx_log_errname(res->err));
	else if (r->type == BBX_REC_DENY && r->err)
		fprintf(o, ",\"status_code\":\"%s\"", bbx_log_errname(r->err));
	if (r->has_decision) {
		static const int dispo[] = {1, 17, 2, 15, 14};
		static const char *const dname[] = {"Allowed", "Logged", "Blocked", "Detected", "Delayed"};
		uint32_t d = r->decision < 5 ? r->decision : 0;
		fprintf(o, ",\"disposition_id\":%d,\"disposition\":\"%s\"", dispo[d], dname[d]);
	}
	if (r->reason) {
		fputs(",\"status_detail\":", o);
		bbx_log_json_str(o, r->reason);
	}
	if (cls == 1001) {
		const char *path = r->path ? r->path : "";
		fputs(",\"file\":{\"path\":", o);
		bbx_log_json_str(o, path);
		fputs(",\"name\":", o);
		bbx_log_json_str(o, bbx_log_basename(path));
		fprintf(o, ",\"type_id\":%d}", ocsf_file_type(r->type == BBX_REC_RMDIR ? BBX_KIND_DIR : r->kind));
		if (r->path2) {
			fputs(",\"file_result\":{\"path\":", o);
			bbx_log_json_str(o, r->path2);
			fputs(",\"name\":", o);
			bbx_log_json_str(o, bbx_log_basename(r->path2));
			fprintf(o, ",\"type_id\":%d}", ocsf_file_type(r->kind));
		}
	} else if (cls == 1007) {
		putc(',', o);
		if (r->type == BBX_REC_EXIT) {
			uint64_t ci = bbx_log_map_get(&bbx_log.pids, r->pid);
			const struct proc *c = ci ? &bbx_log.procs[ci - 1] : NULL;
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
			bbx_log_json_str(o, r->host);
		}
	}
	fprintf(o, ",\"unmapped\":{\"bbx_type\":\"%s\"", bbx_rec_type_name(r->type));
	if (r->rule) {
		fputs(",\"rule\":", o);
		bbx_log_json_str(o, r->rule);
	}
	fputs("}}\n", o);
}

