/* SPDX-License-Identifier: MIT
 *
 * undo.h - backward replay of a journal (invariant 4) and the run seal.
 *
 * The undo is itself a run: every change it makes is captured into DIR/undo (a journal
 * directory of its own) before it is made, so `bbx-undo DIR/undo` undoes the undo
 * (invariant 3).  It is idempotent (a finished undo leaves DIR/undone and a second call
 * does nothing) and resumable (DIR/undo/progress names the next record; every step is
 * written so that doing it twice is the same as doing it once).
 *
 * Conflicts: a sealed run (bbx-run wrote FINAL records at exit) lets undo see that a
 * path was changed by someone else after the run.  The later version is kept beside
 * the restored one as PATH.bbx-conflict[.N]; nothing is lost.
 */
#ifndef BBX_UNDO_H
#define BBX_UNDO_H

#include "reader.h"
#include "record.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What backward replay does with one record. */
enum bbx_undo_action {
	BBX_UNDO_SKIP = 0,       /* nothing to undo (EXEC, RESULT, failed calls, ...) */
	BBX_UNDO_REMOVE,         /* CREATE: remove the name this run made */
	BBX_UNDO_RESTORE_LINK,   /* PRESERVE how=link: bring the kept inode back */
	BBX_UNDO_RESTORE_COPY,   /* PRESERVE how=copy/reflink: write the content back */
	BBX_UNDO_RESTORE_INLINE, /* PRESERVE symlink/special: recreate from the record */
	BBX_UNDO_TRUNCATE,       /* SIZE: cut back to the original length */
	BBX_UNDO_MKDIR,          /* RMDIR: recreate the directory */
	BBX_UNDO_RENAME_BACK,    /* RENAME: move it back */
	BBX_UNDO_META,           /* META: old mode, owner, times, xattr */
	BBX_UNDO_DIRMETA,        /* DIRMETA: applied in the final pass */
	BBX_UNDO_LOST,           /* PRESERVE how=lost: cannot be restored, reported */
	BBX_UNDO_RESTORE_ALIAS,  /* PRESERVE how=alias: link the surviving name back */
};

struct bbx_undo_step {
	size_t off;      /* record offset in the journal */
	int action;
	int64_t ret;     /* CREATE: outcome from its RESULT (has_result) */
	uint64_t ino;    /* CREATE: inode made (has_ino) */
	int has_result, has_ino;
};

/* Plans the replay of the records in r (file order) into *steps, in the order they are
 * to be applied (reverse file order).  Returns 0 or -ENOMEM; *steps is malloc'd. */
int bbx_undo_plan(struct bbx_reader *r, struct bbx_undo_step **steps, size_t *n);
const char *bbx_undo_action_name(int action);

struct bbx_undo_opts {
	int dry_run;
	int verbose;     /* print every action */
	FILE *out;       /* actions, conflicts and errors (NULL: silent) */
	FILE *progress;  /* a progress line on long replays (NULL: none) */
};

struct bbx_undo_stats {
	size_t records, steps;
	size_t restored, removed, conflicts, errors, lost, owner_skipped;
	size_t unrestorable; /* conflicting paths left at their later version */
	size_t orphans;      /* links in objects/ no record names, removed (undo.c) */
	int torn, already_done, sealed;
	char undo_dir[4096];
};

/* Undoes the run in dir.  Returns 0 (stats say whether there were conflicts/errors)
 * or -errno when the journal cannot be read or the undo journal cannot be created. */
int bbx_undo_run(const char *dir, const struct bbx_undo_opts *o, struct bbx_undo_stats *s);

/* Seals a run: a FINAL record (current type, inode, ctime) for every path the journal
 * touched, then a SEAL with the count.  Returns 0 or -errno; *npaths gets the count. */
int bbx_seal(const char *dir, size_t *npaths);
struct bbx_run;
struct bbx_seal_pre;
/* A regular file a process of the run still held open for writing, or mapped shared
 * and writable, when the command ended (bbx-run, tools/straggle.c). */
struct bbx_held {
	uint64_t dev, ino;
	int32_t pid;
	char comm[16];
};
/* The same through a run the caller has open on dir (bbx-run, after the command's EXIT
 * record): one opening of the run less.  With pre (else NULL), after that prescan,
 * reading the journal from where it got to; pre is freed whatever the outcome.  Each
 * FINAL path that is one of held[0..nheld) (same device and inode) is followed, after
 * the FINAL records, by a NOTE naming it: what its holder writes there after the seal
 * is the run's own change, not a stranger's (journal-format.md 5.11, 8.1). */
int bbx_seal_run(struct bbx_run *run, const char *dir, size_t *npaths,
		 struct bbx_seal_pre *pre, const struct bbx_held *held, size_t nheld);
/* Sets the run's SEALED flag (bbx_seal_run does it first too): from then on a process
 * of the run notes each change to a file already captured.  A caller that looks for
 * files held open (bbx-run) marks the run first, so that a file is either held at
 * its look or noted when opened after it. */
void bbx_seal_mark(struct bbx_run *run);

/* The seal's first pass, done while the command still runs (bbx-run, between its
 * waits for the command): the journal read as far as the writers have accounted for
 * whole records (the state's end), and the paths those records name collected; the
 * FINAL records bbx_seal_run writes after it are the ones it would write without.
 * Worth it only with a CPU the command leaves free. */
/* A prescan of run (open on dir), or NULL: one CPU, no memory, the journal unreadable. */
struct bbx_seal_pre *bbx_seal_pre_new(struct bbx_run *run, const char *dir);
/* Reads what has been written since the last step.  It stops for good at a record
 * that does not decode (the seal's reader resynchronises past it). */
void bbx_seal_pre_step(struct bbx_seal_pre *pre);
/* The journal bytes taken so far: whole records from the start. */
size_t bbx_seal_pre_taken(const struct bbx_seal_pre *pre);

#endif
