/* SPDX-License-Identifier: MIT
 *
 * run.h - a run's journal directory: creation, opening, and emitting records.
 *
 *   DIR/journal   append-only records          DIR/objects/  pre-images, one per seq
 *   DIR/state     shared seq + captured set    DIR/meta      key=value facts of the run
 *
 * Runs made without an explicit directory live under the state directory
 * ($BBX_STATE_DIR, else $XDG_STATE_HOME/bbx/runs, else ~/.local/state/bbx/runs) with a
 * `latest` symlink naming the newest.
 */
#ifndef BBX_RUN_H
#define BBX_RUN_H

#include "record.h"
#include "state.h"
#include "writer.h"

#include <limits.h>
#include <stdint.h>

/* The journal directory's format, the first line of its meta file ("format=bbx-journal
 * 2"); bbx --version prints it.  2: PRESERVE how=packed (a pre-image inside the run's
 * shared object), which an undo of format 1 would not restore; bbx-undo reads 1 and 2. */
#define BBX_JOURNAL_FORMAT "2"

/* The small fields first, and the writer's (writer.h) right after them: a process that
 * opens the run then writes the head of two pages of this struct, the one holding them
 * and the journal path, and the one holding dir, not three (each a page fault; issue
 * 5).  bbx_run_open clears only the small fields. */
struct bbx_run {
	size_t dirlen;
	/* The journal directory and its objects/ by identity: whatever path reaches them
	 * (.., symlinks, bind mounts), the run may not change what is inside. */
	uint64_t jdev, jino, odev, oino;
	struct bbx_state *st;
	struct bbx_writer w;
	char dir[PATH_MAX];
};

/* The default state directory into out.  Returns 0 or -ENAMETOOLONG/-ENOENT. */
int bbx_run_state_dir(char *out, size_t cap);

/* Creates a new journal directory.  If dir is NULL a fresh one is made under the state
 * directory and `latest` is pointed at it (unless nolatest).  An existing dir must be
 * empty, or hold only a creation killed before its journal existed (then cleared).
 * cmdline (may be NULL) is stored in meta.  The path is written to out.
 * Returns 0 or -errno (-EEXIST: dir already holds a journal). */
int bbx_run_create(const char *dir, const char *cmdline, const char *extra_meta, int nolatest,
		   char *out, size_t cap);

/* Opens an existing journal directory for appending.  Returns 0 or -errno. */
int bbx_run_open(struct bbx_run *run, const char *dir);
/* The namespace generation word (state.h, bbx_state_nsgen) of the run last opened by
 * bbx_run_open in this process; NULL before, or for a state file without one. */
extern uint64_t *bbx_nsgen;
void bbx_run_close(struct bbx_run *run);

/* Resolves a journal argument: NULL/"latest" means the latest run of the state directory.
 * Returns 0 or -errno (-ENOENT: no such run). */
int bbx_run_resolve(const char *arg, char *out, size_t cap);

/* Seq of the last record this thread appended (0 after the caller resets it): lets a
 * wrapper point a RESULT at the record its capture wrote. */
extern __thread uint64_t bbx_run_last_seq __attribute__((tls_model("initial-exec")));

/* The hash chain's position right after this thread's last append (bbx_run_emit). */
extern __thread struct bbx_chain_pos bbx_run_last_pos __attribute__((tls_model("initial-exec")));

/* Header ids (run.c): asked once per process.  In a fork child, bbx_run_ids_forked
 * carries them over (the parent's pid becomes ppid, uid is inherited) and asks only the
 * new pid.  While bbx_run_fresh_ids is set (records a vfork child may write) the pid is
 * asked afresh, and the remembered ppid and uid are used only if it is this process's. */
void bbx_run_ids_forked(void);
/* Asks them now (before a fork: every child then asks only its pid). */
void bbx_run_ids_learn(void);
extern __thread int bbx_run_fresh_ids __attribute__((tls_model("initial-exec")));

/* A prologue for a process's first record (the shim's PROC, procrec.c): when
 * bbx_run_proc_pending is set, the first record's emit clears it and calls
 * bbx_run_prologue(run, e, buf, cap).  The prologue either encodes its record into buf
 * (cap bytes, BBX_RUN_PROLOGUE_BUF, on the emitting frame's stack) and returns 1,
 * leaving e for the emit to finish, or returns 0 having written it by itself
 * (bbx_run_emit: the flag is clear by then), when it did not fit.  From bbx_run_emit,
 * the two records then go out in one write(2), the prologue's first.  The prologue must
 * not use the thread scratch's record buffer (the record being emitted is in it).
 * Unset in the tools. */
/* 8 KiB: a PROC holds the environment, 2-5 KiB in a shell or make check here (4 KiB
 * let make check's go alone); bigger ones are written alone, as before. */
#define BBX_RUN_PROLOGUE_BUF 8192
extern int bbx_run_proc_pending;
extern int (*bbx_run_prologue)(struct bbx_run *run, struct bbx_enc *e, uint8_t *buf,
			       size_t cap);

/* Fills the header (times, pid, uid) and appends, linked into the hash chain
 * (bbx_writer_append_chained).  Returns 0 or -errno. */
int bbx_run_emit(struct bbx_run *run, struct bbx_enc *e, uint64_t seq);

/* Deferred records: the shim's RESULTs (the outcome of a call, written after it), and
 * the PRESERVEs that keep nothing (how=none: a removed name of a file the run created,
 * which undo skips; capture.c, bbx_cap_remove), wait in the thread's buffer and go out
 * with the thread's next record, in the same write(2) - one write per journaled call
 * instead of two.  Pending records are written at the
 * latest when the process forks (atfork), execs (its EXEC record), exits (exit()'s
 * destructors, the shim's _exit and _Exit, syscall(SYS_exit_group)), or when the buffer
 * fills.  A full buffer moves to an overflow of BBX_DEFER_SPILL bytes (run.c) when it
 * has room, so that a run of removals of what the run made (rm -r of a tree it
 * untarred) goes out ~25 records to a write(2), or with the next record written at
 * once (an RMDIR; a record too big for the buffer, after what is held).  Each is finished
 * (time, ids, seq) when the call returns, so what it says does not change with the
 * delay; only its place in the file does.  A process killed by a signal loses its
 * pending RESULTs, which undo tolerates (it then checks the file system itself) and
 * bbx-log shows as an outcome not recorded, and its pending removals (at most
 * BBX_DEFER_SPILL + BBX_DEFER_CAP bytes of records, ~25 removals), which undo never
 * needed: the evidence of who removed those names is what is lost, while the seal's
 * FINAL still shows each of them gone.  Only while the process is
 * single-threaded (glibc's __libc_single_threaded) and [journal] sync is off: otherwise
 * bbx_run_emit_later is bbx_run_emit.  bbx_run_defer_on is set by the shim (never in
 * the tools); bbx_run_defer_tls by the thread's scratch (capture.c). */
#define BBX_DEFER_CAP 1024
#define BBX_DEFER_SPILL 8192
struct bbx_defer {
	uint32_t len;
	uint8_t buf[BBX_DEFER_CAP];
};
extern int bbx_run_defer_on;
extern __thread struct bbx_defer *bbx_run_defer_tls __attribute__((tls_model("initial-exec")));
int bbx_run_emit_later(struct bbx_run *run, struct bbx_enc *e, uint64_t seq);
/* Whether anything is held back, and writing it now (from any thread: another one may
 * be the one calling exit).  bbx_run_flush returns 0 or -errno. */
int bbx_run_deferred(void);
int bbx_run_flush(struct bbx_run *run);
/* A thread's buffer going away with its scratch (thread exit, pthread_exit of the main
 * thread included): what it holds is written first, and nothing points at it any more. */
void bbx_run_defer_release(struct bbx_defer *d);

/* Records gathered and appended with one write(2) per 64 KiB: bbx-run's FINAL records
 * at the seal (one per path the run touched: 13,000 for an untar of a node_modules).
 * Only for records no mutation waits on: nothing here is made durable ([journal] sync
 * applies to write-ahead records, bbx_run_emit).  bbx_run_batch_add fills the header
 * like bbx_run_emit and keeps the record (flushing first when it would not fit);
 * bbx_run_batch_flush appends what is kept, linked into the hash chain record by
 * record.  Both return 0 or -errno (those of bbx_writer_append_chained_n). */
struct bbx_run_batch {
	size_t len;
	uint8_t buf[64 * 1024];
};
int bbx_run_batch_add(struct bbx_run *run, struct bbx_run_batch *b, struct bbx_enc *e,
		      uint64_t seq);
int bbx_run_batch_flush(struct bbx_run *run, struct bbx_run_batch *b);

/* [journal] sync (state.h, enum bbx_sync): the run's mode, as bbx-run set it in the
 * state file (off for a run without bbx-run, and for an undo's own journal). */
int bbx_run_sync_mode(const struct bbx_run *run);
/* Makes the journal durable up to byte end (this thread's last record:
 * bbx_run_last_pos.end): nothing when the mode is off; with group, nothing when
 * another process's fdatasync already covered end; else fdatasync(2).  bbx_run_emit
 * calls it after every record written before a mutation (CREATE, PRESERVE, SIZE,
 * RMDIR, RENAME, META).  Returns 0 or -errno (the mutation is then refused). */
int bbx_run_sync(struct bbx_run *run, uint64_t end);
/* fdatasync(2) calls this process made for bbx_run_sync (tests). */
extern unsigned long bbx_run_syncs;
/* bbx-run, before the command starts: sets the run's sync mode in DIR/state and, unless
 * off, makes the directory itself durable (journal, meta, the directory and its entry
 * in its parent).  Returns 0 or -errno. */
int bbx_run_set_sync(const char *dir, int mode);
/* fsync(2) of a file or directory by path.  Returns 0 or -errno. */
int bbx_run_fsync_path(const char *path);

/* Objects live in up to 256 shard directories, objects/<(seq >> 10) & 0xff, 2 hex
 * digits>/<seq>, made on first use: a link into a small directory is several times
 * cheaper on ext4 than into one holding every pre-image of a big run.  Consecutive
 * sequence numbers share a shard (1024 per shard, then the next), so a run that keeps a
 * few hundred objects makes a handful of directories, not 256: each mkdir is an inode
 * allocation, which ext4 makes slow after many deletions (the recently-deleted inode
 * scan: 226 shard directories cost the edit bench about a tenth of its time).  The
 * record names the object by its path under objects/ ("3/12351"), so readers never
 * compute it. */
static inline unsigned bbx_run_object_shard(uint64_t seq) { return (unsigned)((seq >> 10) & 0xff); }
int bbx_run_object_name(uint64_t seq, char *out, size_t cap);
int bbx_run_object_path(const struct bbx_run *run, uint64_t seq, char *out, size_t cap);
/* The run's shared object, where small pre-images are packed (PRESERVE how=packed):
 * its name under objects/, and its path. */
#define BBX_PACK_OBJECT "pack"
int bbx_run_pack_path(const struct bbx_run *run, char *out, size_t cap);

/* The run's system-call mark: a value the shim puts in an argument register that
 * truncate(2), open(2) and openat(2) do not use, on the calls bbx-run's seccomp filter
 * refuses from code that is not the shim (a truncation by path, a read-only open with
 * O_TRUNC: the kernel's Landlock layer leaves truncation to this filter, see
 * tools/sandbox.c).  Derived from the journal directory's identity, so bbx-run and
 * every process of the run agree on it without passing anything.  Not a secret: it
 * makes the filter complete for cooperative code, it is no security boundary. */
uint64_t bbx_run_mark(uint64_t jdev, uint64_t jino);

/* Appends "key=value\n" to DIR/meta.  Returns 0 or -errno. */
int bbx_run_meta_append(const char *dir, const char *key, const char *value);
/* Reads a meta value into out.  Returns 0, -ENOENT if absent, or -errno. */
int bbx_run_meta_get(const char *dir, const char *key, char *out, size_t cap);

#endif
