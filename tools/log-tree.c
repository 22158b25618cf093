/* SPDX-License-Identifier: MIT
 *
 * log-tree.c - bbx-log's summaries: the process tree (argv, exit status, counts)
 * and the totals (by type, operation, decision; pre-images kept; top programs, paths).
 */
#include "log.h"

#include <err.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "journal/pathmap.h"

/* ---- tree and stats ----------------------------------------------------------------- */

static size_t *kid, *sib;

static void tree_node(FILE *o, size_t i, const char *prefix, bool last, bool root, bool json,
		      int depth)
{
	struct proc *p = &bbx_log.procs[i];
	p->shown = true;
	char st[64] = "?";
	if (p->has_status)
		bbx_log_status_text(p->status, st, sizeof st);
	else if (p->is_cmd && bbx_log.exit_meta[0])
		snprintf(st, sizeof st, "exit %s", bbx_log.exit_meta);
	if (json) {
		fprintf(o, "{\"pid\":%d,\"ppid\":%d,\"depth\":%d", p->pid, p->ppid, depth);
		if (p->exe) {
			fputs(",\"program\":", o);
			bbx_log_json_str(o, bbx_log_basename(p->exe));
			fputs(",\"exe\":", o);
			bbx_log_json_str(o, p->exe);
		}
		if (p->argv) {
			fputs(",\"argv\":", o);
			bbx_log_json_list(o, p->argv, p->argv_len);
		}
		fputs(",\"status\":", o);
		bbx_log_json_str(o, st);
		if (p->has_status && WIFEXITED((int)p->status))
			fprintf(o, ",\"exit_code\":%d", WEXITSTATUS((int)p->status));
		else if (!p->has_status && p->is_cmd && bbx_log.exit_meta[0])
			fprintf(o, ",\"exit_code\":%d", atoi(bbx_log.exit_meta)); /* bbx-run's meta */
		fputs(",\"counts\":{", o);
		for (int c = 0; c < C_NCOUNT; c++)
			fprintf(o, "%s\"%s\":%lu", c ? "," : "", bbx_log_count_name[c], p->counts[c]);
		fputs("}}\n", o);
	} else {
		fprintf(o, "%s%s%s%d%s ", prefix, root ? "" : last ? "`- " : "|- ", C("1"), p->pid, C("0"));
		if (p->argv_len)
			bbx_log_put_argv(o, p->argv, p->argv_len);
		else
			bbx_log_put_str(o, p->exe ? bbx_log_basename(p->exe) : "?");
		fprintf(o, "  [%s]", st);
		for (int c = 0; c < C_NCOUNT; c++)
			if (p->counts[c])
				fprintf(o, " %s=%lu", bbx_log_count_name[c], p->counts[c]);
		putc('\n', o);
	}
	/* children, in order of first appearance (kid/sib lists built by print_tree) */
	char sub[4096];
	snprintf(sub, sizeof sub, "%s%s", prefix, root ? "" : last ? "   " : "|  ");
	for (size_t k = kid[i]; k; k = sib[k - 1]) {
		size_t n = sib[k - 1];
		while (n && bbx_log.procs[n - 1].shown)
			n = sib[n - 1];
		if (!bbx_log.procs[k - 1].shown)
			tree_node(o, k - 1, sub, n == 0, false, json, depth + 1);
	}
}

void bbx_log_print_tree(FILE *o, bool json)
{
	/* each process's children as a list in order of appearance: kid[p] is the first
	 * (index + 1), sib[c] the next; O(processes) whatever the shape of the tree */
	kid = calloc(bbx_log.nproc + 1, sizeof *kid);
	sib = calloc(bbx_log.nproc + 1, sizeof *sib);
	size_t *tail = calloc(bbx_log.nproc + 1, sizeof *tail);
	if (!kid || !sib || !tail)
		err(1, "calloc");
	for (size_t i = 0; i < bbx_log.nproc; i++) {
		uint64_t pi = bbx_log_map_get(&bbx_log.pids, (uint64_t)(uint32_t)bbx_log.procs[i].ppid);
		if (!pi || pi - 1 == i)
			continue;
		if (tail[pi - 1])
			sib[tail[pi - 1] - 1] = i + 1;
		else
			kid[pi - 1] = i + 1;
		tail[pi - 1] = i + 1;
	}
	free(tail);
	for (size_t i = 0; i < bbx_log.nproc; i++) {
		if (bbx_log.procs[i].shown)
			continue;
		uint64_t pi = bbx_log_map_get(&bbx_log.pids, (uint64_t)(uint32_t)bbx_log.procs[i].ppid);
		if (pi && !bbx_log.procs[pi - 1].shown && pi - 1 != i)
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
			c->keys = realloc(c->keys, c->cap * sizeof *c->keys);
			if (!c->keys)
				err(1, "realloc");
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
	if (c->n) /* qsort(NULL, 0, ...) is undefined */
		qsort(c->keys, c->n, sizeof *c->keys, by_count);
	size_t n = top && top < c->n ? top : c->n;
	if (json) {
		fprintf(o, ",\"%s\":%s", title, top ? "[" : "{");
		for (size_t i = 0; i < n; i++) {
			if (i)
				putc(',', o);
			if (top)
				putc('[', o);
			bbx_log_json_str(o, c->keys[i]);
			fprintf(o, "%s%zu%s", top ? "," : ":", *bbx_pathmap_get(&c->m, c->keys[i]), top ? "]" : "");
		}
		fputs(top ? "]" : "}", o);
		return;
	}
	fprintf(o, "%s%s:%s\n", C("1"), title, C("0"));
	for (size_t i = 0; i < n; i++) {
		fprintf(o, "  %8zu  ", *bbx_pathmap_get(&c->m, c->keys[i]));
		bbx_log_put_str(o, c->keys[i]);
		putc('\n', o);
	}
}

void bbx_log_print_stats(FILE *o, bool json)
{
	struct counter types = {0}, ops = {0}, decs = {0}, progs = {0}, paths = {0};
	unsigned long long pres_n[9] = {0}, pres_b[9] = {0};
	static const int kept_hows[] = {BBX_HOW_LINK, BBX_HOW_COPY, BBX_HOW_REFLINK, BBX_HOW_PACKED};
	size_t nsel = 0, nfail = 0;
	for (size_t i = 0; i < bbx_log.nev; i++) {
		const struct ev *e = &bbx_log.ev[i];
		if (!bbx_log_selected(e))
			continue;
		const struct bbx_rec *r = &e->r;
		nsel++;
		counter_add(&types, bbx_rec_type_name(r->type), 1);
		counter_add(&ops, r->op ? r->op : bbx_rec_type_name(r->type), 1);
		if (r->has_decision)
			counter_add(&decs, bbx_log_decision_name(r->decision), 1);
		else if (r->type == BBX_REC_DENY)
			counter_add(&decs, "deny", 1);
		const struct bbx_rec *res = bbx_log_result(e);
		if (res && (res->err || (res->has_ret && res->ret < 0)))
			nfail++;
		if (r->type == BBX_REC_FINAL || r->type == BBX_REC_SEAL || r->type == BBX_REC_RESULT)
			continue; /* bookkeeping, not activity */
		counter_add(&progs, e->prog ? e->prog : "?", 1);
		if (r->path && r->type != BBX_REC_DIRMETA)
			counter_add(&paths, r->path, 1);
		if (r->type == BBX_REC_PRESERVE && r->object && r->how < 9) {
			pres_n[r->how]++;
			pres_b[r->how] += r->has_stat ? r->st.size : 0;
		}
	}
	if (json) {
		fprintf(o, "{\"events\":%zu,\"records\":%zu,\"processes\":%zu,\"failed\":%zu,\"sealed\":%s",
			nsel, bbx_log.nev, bbx_log.nproc, nfail, bbx_log.sealed ? "true" : "false");
		counter_print(o, "by_type", &types, 0, true);
		counter_print(o, "by_op", &ops, 0, true);
		counter_print(o, "by_decision", &decs, 0, true);
		fputs(",\"preserved\":{", o);
		for (size_t i = 0; i < sizeof kept_hows / sizeof kept_hows[0]; i++) {
			int h = kept_hows[i];
			fprintf(o, "%s\"%s\":{\"count\":%llu,\"bytes\":%llu}", i ? "," : "",
				bbx_how_name(h), pres_n[h], pres_b[h]);
		}
		putc('}', o);
		counter_print(o, "top_programs", &progs, 10, true);
		counter_print(o, "top_paths", &paths, 10, true);
		fputs("}\n", o);
	} else {
		fprintf(o, "%zu events (%zu records), %zu processes, %zu failed calls, %s\n", nsel,
			bbx_log.nev, bbx_log.nproc, nfail, bbx_log.sealed ? "sealed" : "not sealed");
		counter_print(o, "by type", &types, 0, false);
		counter_print(o, "by operation", &ops, 0, false);
		if (decs.n)
			counter_print(o, "by decision", &decs, 0, false);
		fprintf(o, "%spreserved:%s\n", C("1"), C("0"));
		for (size_t i = 0; i < sizeof kept_hows / sizeof kept_hows[0]; i++) {
			int h = kept_hows[i];
			fprintf(o, "  %8llu  %s (%llu bytes)\n", pres_n[h], bbx_how_name(h), pres_b[h]);
		}
		counter_print(o, "top programs", &progs, 10, false);
		counter_print(o, "top paths", &paths, 10, false);
	}
	struct counter *all[] = {&types, &ops, &decs, &progs, &paths};
	for (size_t i = 0; i < 5; i++) {
		bbx_pathmap_free(&all[i]->m);
		free(all[i]->keys);
	}
}

