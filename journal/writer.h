/* SPDX-License-Identifier: MIT
 *
 * writer.h - appends records to a run's journal file.
 *
 * Each record goes out in one write(2) on an O_APPEND descriptor (invariant 1), so
 * concurrent processes never interleave bytes.  Before every write the descriptor's
 * identity (device, inode) is checked against the journal's: a program that closed
 * all descriptors or dup2()ed over ours gets the journal reopened instead of a record
 * written into its own file.  Allocation-free; safe in signal handlers and vfork
 * children (a vfork child that reopens leaves the parent a stale number, which the
 * parent's own identity check then catches).
 */
#ifndef BBX_WRITER_H
#define BBX_WRITER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* Where the journal's descriptor (and the pack's, capture.c) are moved: above the
 * numbers programs take first (the lowest free one) and the 10 and up shells save
 * theirs at, below 64, the size of the descriptor table the kernel keeps inside each
 * process.  A number at or above it makes the kernel allocate a larger table in every
 * process that opens the run, and copy it at every fork: at 900 (sessions 1-39) that
 * was a 1,024-slot table, +8 us a fork here (bench fdf: fork+wait 150 against 141 us
 * with the descriptor at 60), in every shell of a configure script.  A collision costs
 * nothing but a reopen: a program's dup2 over the descriptor, or its close, is seen
 * by the shim's wrappers, and the identity check before the next record finds it. */
#define BBX_WRITER_FD_MIN 48

struct bbx_writer {
	int fd; /* accessed atomically */
	unsigned gen_ok; /* bbx_writer_fd_gen when fd was last found to be ours */
	uint64_t dev, ino;
	/* The journal directory, the caller's string (bbx_run's dir), which must outlive
	 * the writer; the file is its "journal".  Not a copy of that name: a second
	 * PATH_MAX buffer beside the run's was a second page of .lbss written in every
	 * process that opens the run (perf, page faults by address; issue 5). */
	const char *dir;
};

/* Descriptor generation.  The identity check of the journal's descriptor (an fstat and
 * an fcntl, two of a record's three system calls) is needed only when something may
 * have closed or replaced it.  The shim sets bbx_writer_gen_mode and bumps
 * bbx_writer_fd_gen in its close, dup2, dup3, close_range, closefrom and fcntl(F_SETFL)
 * wrappers (before and after the real call) when the journal's descriptor is among
 * those touched; while the generation is the one last verified, the check is skipped.
 * A write that still fails with EBADF reopens the journal (a raw close(2) the shim did
 * not see).  The tools leave gen_mode off: every record is checked. */
extern unsigned bbx_writer_fd_gen;
extern int bbx_writer_gen_mode;
/* Called by the shim's wrappers: fd (or the range [lo, hi]) is about to change. */
void bbx_writer_fd_touched(const struct bbx_writer *w, int lo, int hi);

/* Opens (creating if needed) dir/journal.  Returns 0 or -errno. */
int bbx_writer_open(struct bbx_writer *w, const char *dir);
/* Appends one complete record.  Returns 0, or -errno: the write failed, was short
 * (-EIO; the torn bytes are skipped by readers), or the journal could not be reopened. */
int bbx_writer_append(struct bbx_writer *w, const void *rec, size_t len);
void bbx_writer_close(struct bbx_writer *w);
/* fdatasync(2) of the journal (reopened first if its descriptor was closed under us).
 * Returns 0 or -errno. */
int bbx_writer_sync(struct bbx_writer *w);

/* In the parent of a vfork, once the child has exec'd or died (shim/vfork.c, bbx-run):
 * a child killed holding the journal lock or the sync lock of st held it under this
 * thread's id and in this thread's robust list (it ran on this thread's memory), where
 * the kernel never marks it as its holder's death.  They are released here, the
 * journal's head first rebuilt from the file.  solo: this thread holds no robust mutex
 * of its own and the child used a mapping of the state other than st (bbx-run, whose
 * child loads the shim): the robust list is emptied and the locks marked as a dead
 * holder's, for the next locker to recover.  Nothing when neither lock is held. */
struct bbx_state;
void bbx_writer_vfork_reclaim(struct bbx_writer *w, struct bbx_state *st, int solo);

struct bbx_state;

/* Where the chain stood right after an append: the head (trailer of the last complete
 * record), the number of complete records, the journal bytes accounted for. */
struct bbx_chain_pos {
	uint64_t chain, count, end;
};

/* Seconds an append waits for the journal lock before it gives up with -ETIMEDOUT. */
#define BBX_WRITER_LOCK_TIMEOUT 10

/* Appends one record made by bbx_enc_begin/bbx_enc_finish and links it into the run's
 * hash chain: under the journal lock of st (state.h), its CHAIN field is set to the
 * trailer of the previous record in the file, its trailer recomputed, the record
 * written, and the head moved on.  A holder that died with the lock (EOWNERDEAD) is
 * recovered from: the head is re-read from the end of the file.  Without a lock (st
 * NULL, or a version 1 state file) it is bbx_writer_append.  pos (may be NULL) gets the
 * chain position after this record.  Returns 0 or -errno: those of bbx_writer_append,
 * -ETIMEDOUT (the lock was not free within BBX_WRITER_LOCK_TIMEOUT seconds),
 * -ENOTRECOVERABLE (the lock was abandoned earlier and left inconsistent).
 * Allocation-free; no stdio. */
int bbx_writer_append_chained(struct bbx_writer *w, struct bbx_state *st, void *rec,
			      size_t len, struct bbx_chain_pos *pos);
/* The same for len bytes holding several complete records back to back (one write(2),
 * one taking of the lock): each is linked to the one before it.  After a short write
 * the head moves past the records that reached the file whole. */
int bbx_writer_append_chained_n(struct bbx_writer *w, struct bbx_state *st, void *recs,
				size_t len, struct bbx_chain_pos *pos);

/* Tests only: called inside the lock right after the write, before the head moves. */
extern void (*bbx_writer_test_hook)(void);

#endif
