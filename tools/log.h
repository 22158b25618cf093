/* SPDX-License-Identifier: MIT
 *
 * log.h - what the parts of bbx-log share: the events (records with their RESULT
 * folded in), the process table, and the helpers the output formats use.
 * bbx-log.c loads, attributes, filters and prints text; log-json.c writes JSON and
 * OCSF; log-tree.c the process tree and the totals.
 */
#ifndef BBX_TOOLS_LOG_H
#define BBX_TOOLS_LOG_H

#include "journal/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* u64 -> u64 open-addressing map (pid -> proc index, seq -> event index).  Value 0
 * means absent, so callers store index + 1. */
struct u64map {
	uint64_t *k, *v;
	size_t cap, len;
};

enum { C_CREATE, C_WRITE, C_DELETE, C_RENAME, C_META, C_EXEC, C_DENY, C_NET, C_NCOUNT };

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

struct bbx_log_state {
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
};

extern struct bbx_log_state bbx_log;
extern const char *const bbx_log_count_name[C_NCOUNT];
extern bool bbx_log_color;
#define C(code) (bbx_log_color ? "\033[" code "m" : "")

uint64_t bbx_log_map_get(const struct u64map *m, uint64_t key);
const char *bbx_log_basename(const char *p);
const char *bbx_log_errname(int e);
const char *bbx_log_decision_name(uint32_t d);
const char *bbx_log_class_name(uint32_t c);
const char *bbx_log_access_name(uint32_t a);
bool bbx_log_is_content(const struct bbx_rec *r);
const char *bbx_log_verb(const struct bbx_rec *r);
const struct bbx_rec *bbx_log_result(const struct ev *e);
bool bbx_log_selected(const struct ev *e);
size_t bbx_log_utf8_len(const unsigned char *s, size_t n);
void bbx_log_put_esc(FILE *o, const char *s, size_t n);
void bbx_log_put_str(FILE *o, const char *s);
void bbx_log_put_argv(FILE *o, const char *a, size_t n);
void bbx_log_status_text(uint32_t st, char *out, size_t cap);
const char *bbx_log_outcome(const struct ev *e, char *buf, size_t cap);
void bbx_log_json_strn(FILE *o, const char *s, size_t n);
void bbx_log_json_str(FILE *o, const char *s);
void bbx_log_json_list(FILE *o, const char *a, size_t n);
void bbx_log_print_json(FILE *o, const struct ev *e);
void bbx_log_print_ocsf(FILE *o, const struct ev *e);
void bbx_log_print_tree(FILE *o, bool json);
void bbx_log_print_stats(FILE *o, bool json);

#endif
