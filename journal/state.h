/* SPDX-License-Identifier: MIT
 *
 * state.h - the run's small shared state, mmap'd MAP_SHARED by every process of a run:
 * the global record sequence counter and the captured set.
 *
 * The captured set maps (device, inode) to the strongest capture already made in this
 * run.  It is a lock-free open-addressing table updated with compare-and-swap, so it is
 * safe across processes, threads and signal handlers.  A lookup can only err towards
 * "not captured" (a slot being filled is skipped), which costs a redundant capture but
 * never a missing one.  Insertions happen only after the capture's record is written
 * (invariant 1).
 */
#ifndef BBX_STATE_H
#define BBX_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

/* Capture levels, ordered: a higher level covers every lower one. */
enum bbx_level {
	BBX_LVL_NONE = 0,
	BBX_LVL_SIZE = 1,     /* original length recorded: appends are undoable */
	BBX_LVL_CONTENT = 2,  /* full pre-image of content and metadata preserved */
	BBX_LVL_CREATED = 3,  /* created by this run: undo removes it, nothing to keep */
};

#define BBX_STATE_MAGIC 0x54535842u /* "BXST" */
/* flags: bbx-run sealed the run (its command exited); processes still writing are
 * the run's own stragglers. */
#define BBX_STATE_SEALED 1u
/* Slots of the first segment of a new state file: 1 MiB of them.  Versions 5 to 7 made
 * 2^18 (4 MiB), kept whole by every finished run, a no-op one included, and zeroed page
 * by page at creation on a tmpfs; since version 8 a run grows past 2^16 once three
 * quarters of them are taken (about 49,000 inodes), by segments twice as large, to the
 * same largest set as before (issue 5). */
#define BBX_STATE_SLOTS (1u << 16)
#define BBX_STATE_SLOTS_V7 (1u << 18)

struct bbx_state_slot {
	uint64_t ino;    /* 0 = empty */
	uint64_t devlvl; /* dev in bits 0..55, level in bits 56..63 */
};

/* Version 2 adds the journal lock after the slot table (at bbx_state_lock_off()) and
 * uses three of version 1's reserved words for the hash chain; the header and the slot
 * table are laid out as in version 1, so a version 1 file still maps (without a lock:
 * its journal is written unchained). */
/* 3: the sync lock after the journal lock; 4: the program table after the sync lock;
 * 5: the locks and tables in the head page (BBX_STATE_HEAD bytes), the slots after it;
 * 6: the same layout, the slots probed in groups of BBX_STATE_GROUP (one page) so that
 * neighbouring inode numbers share a page (state.c, probe_first);
 * 7: the captured set grows: when three quarters of its newest segment's slots are
 * taken, a segment twice as large is allocated after it, up to BBX_STATE_SEGS
 * (journal-format.md 9.2);
 * 8: a first segment of BBX_STATE_SLOTS (2^16, was 2^18) and up to 7 segments (was 5):
 * the same largest set, a quarter of the space for every run below it.  A version 7
 * file (a run an older bbx-run made) still grows to 5 segments only, as its older
 * processes expect (state.c, max_segs). */
#define BBX_STATE_VERSION 8
#define BBX_STATE_SEGS 7
#define BBX_STATE_SEGS_V7 5
#define BBX_STATE_GROUP 256
#define BBX_STATE_HEAD 4096

/* [journal] sync (policy.ini), kept in the state file so that every process of the run,
 * the shim and bbx-run alike, knows it before its first record (run.c). */
enum bbx_sync {
	BBX_SYNC_OFF = 0,    /* no fsync: a machine crash may lose the journal's tail */
	BBX_SYNC_GROUP = 1,  /* durable before the mutation; one fdatasync covers every record
				written before it began, across processes (group commit) */
	BBX_SYNC_ALWAYS = 2, /* durable before the mutation; every such record synced itself */
};

struct bbx_state {
	uint32_t magic, version;
	uint64_t seq;    /* next sequence number (atomic) */
	uint32_t nslots, epoch;
	uint32_t flags;
	uint32_t sync;   /* enum bbx_sync, set by bbx-run before the command starts (was pad) */
	/* The journal's hash chain, read and written only under the journal lock
	 * (writer.c): the trailer of the last complete record, the number of complete
	 * records written, and the journal bytes accounted for (records and torn bytes).
	 * end is also read without the lock (atomically) by group commit. */
	uint64_t chain, nrec, end;
	/* Group commit: journal bytes known durable (an fdatasync that began after they
	 * were accounted in end returned).  Only ever raised, atomically (was reserved). */
	uint64_t synced;
	struct bbx_state_slot slot[]; /* versions 1-4; version 5: at BBX_STATE_HEAD */
};

/* Where the journal lock lives in a version 2 state file: after the slot table,
 * 64-byte aligned. */
size_t bbx_state_lock_off(uint32_t nslots);
/* The run's journal lock (a process-shared robust mutex), or NULL for a version 1
 * state file. */
pthread_mutex_t *bbx_state_lock(struct bbx_state *st);
/* The group-commit lock (version 3: 64 bytes after the journal lock; NULL before):
 * held around one fdatasync of the journal, so that writers arriving while it runs
 * queue behind it and the first of them syncs for all (run.c). */
pthread_mutex_t *bbx_state_sync_lock(struct bbx_state *st);

/* What the shim learnt about a program file it was asked to execute (exec.c): whether
 * it can enter it (static, setuid, file capabilities), keyed by identity and times.
 * Shared by the run so that a fork child, which starts with nothing of its own, finds
 * the answer its siblings found (a shell loop starts the same programs again and
 * again; the ELF header and the capability xattr cost 5 system calls and ~35 us per
 * exec here).  An entry is valid when tag is a hash of the other fields, written last:
 * a torn or racing entry is only a miss.  Its contents are the shim's business. */
struct bbx_state_prog {
	uint64_t dev, ino, mtime, ctime, why, tag;
};
#define BBX_STATE_PROGS 32
#define BBX_STATE_PROGS_V4 64
/* The program table (version 4: after the sync lock; 5: in the head page), or NULL for
 * older state files; bbx_state_progs_n: its entries. */
struct bbx_state_prog *bbx_state_progs(struct bbx_state *st);
size_t bbx_state_progs_n(const struct bbx_state *st);
/* Hashes of environment entries redaction left as they were (redact.h,
 * bbx_redact_set_cache), after the program table: the same environment is passed to
 * every exec of a run, and an EXEC record then copies it instead of scanning it again
 * (~30 us of a fork child's exec here).  NULL for older state files. */
#define BBX_STATE_CLEAN 256
#define BBX_STATE_CLEAN_V4 1024
uint64_t *bbx_state_clean(struct bbx_state *st);
size_t bbx_state_clean_n(const struct bbx_state *st);

/* The run's namespace generation (version 5: in the head page, after the clean table;
 * NULL for older state files).  Raised before every rename, rmdir and symlink creation
 * in the run: the calls that can change which directory a path of directories reaches.
 * A process that proved a directory's name (journal/path.c, bbx_dname) trusts the
 * proof only while the generation is the one it read before proving. */
uint64_t *bbx_state_nsgen(struct bbx_state *st);

/* The run's shared object, objects/pack (journal/capture.c, preserve_copy): two words
 * in the head page (version 5 and later; NULL before).  [BBX_PACK_END] is the end of
 * the bytes reserved in it so far, raised atomically by each packed copy for its own
 * range; [BBX_PACK_FLAGS] holds BBX_PACK_NOCLONE once a capture found that the objects
 * directory's filesystem cannot reflink (every later copy of the run then packs
 * small files instead of trying). */
enum { BBX_PACK_END = 0, BBX_PACK_FLAGS = 1 };
#define BBX_PACK_NOCLONE 1u
uint64_t *bbx_state_pack(struct bbx_state *st);

/* The run directory whose "state" st maps (dir must outlive the mapping): where the
 * captured set's later segments are allocated and mapped from (version 7).  One
 * mapping per process; a mapping not attached sees only the first segment (its lookups
 * err towards "not captured"; it does not grow).  bbx_run_open attaches its run. */
void bbx_state_attach(struct bbx_state *st, const char *dir);
/* Segments of the captured set in use (1 before version 7). */
unsigned bbx_state_nsegs(const struct bbx_state *st);
/* The growth words in the head page (version 7; NULL before): [BBX_GROW_NSEG] segments
 * in use (0 read as 1), [BBX_GROW_OWNER] the pid allocating the next one (0 none,
 * UINT64_MAX an allocation failed: no more growth), then [BBX_GROW_COUNT + k] the slots
 * claimed in segment k. */
enum { BBX_GROW_NSEG = 0, BBX_GROW_OWNER = 1, BBX_GROW_COUNT = 2 };
uint64_t *bbx_state_grow(struct bbx_state *st);

/* Creates (O_EXCL) the state file at path.  Returns 0 or -errno. */
int bbx_state_create(const char *path);
/* 1 if the file at fd can be one bbx_state_create was making when it was killed (or
 * made): a regular file no longer than a state file, whose first word is the magic or
 * still zero (the header is written last). */
int bbx_state_unfinished(int fd);
/* Maps an existing state file.  Returns 0 or -errno (-EINVAL: not a state file). */
int bbx_state_map(const char *path, struct bbx_state **out);
void bbx_state_unmap(struct bbx_state *st);

/* Maps the head page writable in one call (madvise MADV_POPULATE_WRITE, Linux 5.14),
 * then touches the header page and the journal lock's page with a write that changes
 * nothing.  A read fault on a MAP_SHARED file page maps it read-only, and the first
 * write then faults again (the filesystem's dirty tracking); a process about to write a
 * record (an exec's, in a fork child that has no page table entries for this mapping)
 * calls this first and pays one system call for the head page instead of two faults,
 * or one fault per page where the kernel refuses the advice (issue 5, spawn cost).
 * bbx_state_map does the same for the head page, and bbx_state_level for the page of
 * the slots it looks at, once per page and process. */
void bbx_state_prefault(struct bbx_state *st);
uint64_t bbx_state_next_seq(struct bbx_state *st);
/* Forgets which slot pages this process mapped (bbx_state_level): for a fork child,
 * which inherits none of a MAP_SHARED mapping's page table entries. */
void bbx_state_forget_ready(void);
/* Level recorded for (dev, ino); BBX_LVL_NONE if absent. */
int bbx_state_level(struct bbx_state *st, uint64_t dev, uint64_t ino);
/* Raises (dev, ino) to at least lvl.  Returns 0, or -ENOSPC if the table is full (the
 * caller just captures again next time: correct, only slower). */
int bbx_state_raise(struct bbx_state *st, uint64_t dev, uint64_t ino, int lvl);
/* Forgets (dev, ino): used when a created inode is unlinked, so a later reuse of the
 * inode number by a file made outside the run is not mistaken for ours. */
void bbx_state_forget(struct bbx_state *st, uint64_t dev, uint64_t ino);

#endif
