/* SPDX-License-Identifier: MIT
 *
 * capture.h - what each mutation records before it happens (DESIGN.md, capture rules).
 *
 * Shared by the shim's wrappers and by bbx-undo (whose own changes are journaled the
 * same way, invariant 3).  Every function is called BEFORE the mutating call with an
 * absolute path, writes the undo record (and the pre-image it needs) and returns 0, or
 * returns -errno when that was impossible: the caller must then refuse the mutation
 * with that errno (invariant 2).  A target that does not exist, or a call that will
 * fail anyway, is not an error: nothing is recorded and 0 is returned.
 *
 * Allocation-free and lock-free.  Record and path buffers live in a per-thread scratch
 * area (bbx_scratch) mapped on a thread's first mutation, so threads and processes that
 * never mutate pay nothing for it; the shim's re-entry guard keeps it from being used
 * twice at once on one thread.
 */
#ifndef BBX_CAPTURE_H
#define BBX_CAPTURE_H

#include "run.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define BBX_REC_BUF (2 * PATH_MAX + 8192)

/* Per-thread scratch.  a, b, c are for callers (the shim's resolved paths); the rest is
 * used inside the capture functions.  Ordered by use: what a process's first capture
 * writes (a create, a truncation of a file the run made, a policy decision: a, b, tmp,
 * lnk, pol, the memos, cwd, the held-back records, the directories' names, the record's
 * first page) comes first, BBX_SCRATCH_HOT bytes; c, obj (a kept copy's or hard link's
 * name) and the rest of rec, which a record of a few hundred bytes never reaches, last
 * (mincore of a new program's scratch after its first create: 9 of the 14 pages
 * written, none of those 5; issue 5). */
#define BBX_MEMO_SLOTS 6
#define BBX_MEMO_PATH 496
#define BBX_DNAME_SLOTS 4
/* The proofs the four slots above give up when another directory takes its slot, kept
 * for a process that works in many directories at once (git writes each object into
 * one of 256 shard directories at random: with four slots alone, nearly every object
 * cost a getcwd and an openat2, fstat and close of its directory; issue 5, edit).
 * Mapped on the first eviction, never populated; every page first touched is a page
 * fault (~20 us here), so it is dense: 32-byte entries by inode number (4 pages), the
 * words in an arena they are appended to (~100 a page), and an index by the words'
 * hash (one page) for bbx_dname_known.  A full arena starts over (round). */
#define BBX_DTAB_N 512
#define BBX_DTAB_WAYS 4 /* places probed from the home one, in either index */
#define BBX_DTAB_ARENA (64 * 1024)
/* Directories the write-decision cache keeps (rm -r goes back to the parent for each
 * subdirectory's rmdir, tar -x to the parent for the next entry). */
#define BBX_WCACHE_N 4
struct bbx_dtab {
	uint16_t pidx[2 * BBX_DTAB_N]; /* hash of the words -> entry + 1 (0: none) */
	/* The shim's write-decision cache (shim/policy.c, wcache_hit): the last
	 * BBX_WCACHE_N directories write decisions were taken in, for the policy wpol,
	 * each with whether every entry of it is allowed (ok; policy/policy.h,
	 * bbx_pol_dir_uniform) or must be decided one by one.  wseq is odd while an entry
	 * is being rewritten (a signal handler's decision in between finds nothing).  In
	 * the first page, beside the index every lookup reads. */
	unsigned wseq, wnext;
	const void *wpol;
	struct bbx_wdir {
		unsigned len, ok;
		char dir[BBX_MEMO_PATH];
	} w[BBX_WCACHE_N];
	struct bbx_dtab_e {
		uint64_t dev, ino, gen;
		uint32_t off, round; /* the words at arena + off, valid in this round */
	} e[BBX_DTAB_N];
	uint32_t used, round;
	char arena[BBX_DTAB_ARENA];
};
struct bbx_stat_memo {
	uint64_t epoch; /* bbx_stat_epoch when taken; 0: empty */
	int follow, ret, err;
	struct stat sb;
	char path[BBX_MEMO_PATH];
};
struct bbx_scratch {
	char a[PATH_MAX], b[PATH_MAX];
	char tmp[PATH_MAX], lnk[PATH_MAX];
	char pol[PATH_MAX]; /* the shim's policy: what an open decided on is reopened as */
	struct bbx_stat_memo memo[BBX_MEMO_SLOTS];
	unsigned memo_next;
	/* 1 + the descriptor whose kernel name lnk holds, read by the shim's policy in the
	 * call under way; 0 when lnk holds anything else (capture.c,
	 * fd_name_after_policy).  Here, in padding: one more page of scratch would be one
	 * more page fault a process. */
	int lnk_fd1;
	uint64_t cwd_epoch; /* cwd holds getcwd()'s answer taken in this epoch */
	/* and, across calls (path.c, cwd_kept): the namespace generation read before that
	 * getcwd (0: none), and the directory's identity then (ino 0: not taken) */
	uint64_t cwd_gen, cwd_dev, cwd_ino;
	char cwd[PATH_MAX];
	struct bbx_defer defer; /* RESULTs waiting for the thread's next record (run.h) */
	struct bbx_dname { /* directories' names learnt (path.c) */
		uint64_t dev, ino, gen;
		char path[BBX_MEMO_PATH];
	} dname[BBX_DNAME_SLOTS];
	struct bbx_dtab *dtab; /* the proofs these slots gave up, or NULL (path.c) */
	struct bbx_at { /* the call's own relative forms of its targets (bbx_at_set) */
		uint64_t epoch;
		int fd;
		const char *name;
		char path[BBX_MEMO_PATH];
	} at[2];
	unsigned at_next;
	unsigned cwd_cgen; /* the cwd generation when cwd was read (path.c), in padding */
	uint8_t rec[BBX_REC_BUF] __attribute__((aligned(64))); /* its first page hot */
	char c[PATH_MAX], obj[PATH_MAX];
};
#define BBX_SCRATCH_HOT ((offsetof(struct bbx_scratch, rec) + 4096 + 4095) / 4096 * 4096)

/* The capture's stat calls, and getcwd, answered once per epoch: one capture asks about
 * the same parent directory and target several times (a rename: the directory three
 * times, the target twice), each a path walk in the kernel.  The shim starts a new
 * epoch on entering a wrapper, around its real call and after it (shim.h), and the
 * capture itself after each change it makes (a hard link, a shard directory).  0, the
 * tools' value, turns the memo off.  Per thread. */
extern __thread uint64_t bbx_stat_epoch __attribute__((tls_model("initial-exec")));
/* Puts what the shim's policy already learnt about p (by a descriptor-relative fstatat
 * of the name it decided on, or an fstat of its directory) into the memo, so the
 * capture does not walk the whole path again.  ret and err as from newfstatat.  Leaves
 * errno = err. */
void bbx_stat_memo_put(const char *p, int follow, int ret, int err, const struct stat *sb);
/* The memo's answer for p (0, or -1 with errno set), or -2 when it has none.  An entry
 * put with follow 2 (the kernel's own name of a directory: its last component is the
 * directory itself) answers follow 0 and 1 too; one put with follow 0 answers follow 1
 * unless it found a symlink (stat and lstat differ only there, errors included). */
int bbx_stat_memo_get(const char *p, int follow, struct stat *sb);
/* Whether the first l bytes of p name a directory put in this epoch with follow 2: the
 * shim's policy opened it by exactly these words, no symlink on the way, so the words
 * are the kernel's own name for it until the epoch ends. */
int bbx_stat_memo_kname(const char *p, size_t l);
/* The same for the whole of p, with the directory's stat of this epoch in sb (only
 * st_dev, st_ino and S_IFDIR for one taken on trust, below): 1 or 0. */
int bbx_stat_memo_kname_stat(const char *p, struct stat *sb);
/* A directory's words and identity, taken on trust from its proof (path.c, cwd_kept):
 * a kernel name (follow 3) whose stat holds only st_dev, st_ino and S_IFDIR, which no
 * stat through the memo is ever answered with. */
void bbx_stat_memo_ident(const char *p, uint64_t dev, uint64_t ino);
/* lstat(2) through the kernel and the memo (what the capture itself uses). */
int bbx_k_lstat(const char *p, struct stat *sb);
/* The call being captured names a target as name relative to the directory fd
 * (AT_FDCWD: the working directory), and abs is the absolute path bbx_path_abs made of
 * the two in this epoch.  Until the epoch ends, the capture's lstat of abs and its hard
 * link of abs into objects/ go through (fd, name): the lookup the call itself will make,
 * instead of a walk from the root (rm -r, git's objects: 9 components against 1-4).  Two
 * are kept, for the two names of a rename or a link. */
void bbx_at_set(int fd, const char *name, const char *abs);
/* getcwd(3) through the memo (path.c).  Returns 0 or -errno. */
int bbx_path_cwd(char *out, size_t cap);
/* The working directory's changes in this process (shim/fd.c: chdir, fchdir): a
 * generation each raises, before and after the call.  A name getcwd gave is trusted
 * for later calls, without a stat, while the generation it was read in holds
 * (path.c, cwd_kept) - unless bbx_cwd_untrusted is set: by the libc calls that change
 * directory inside libc, where no wrapper sees the change (nftw with FTW_CHDIR, fts
 * without FTS_NOCHDIR, daemon), for the rest of the process's life. */
void bbx_cwd_bump(void);
/* The generation itself (the shim's read filter keeps its own verdict on the working
 * directory by it: shim.h, bbx_rf_cwd). */
extern unsigned bbx_cwd_gen;
/* A name relative to the working directory that names a directory this thread proved
 * (bbx_dname), in this namespace generation and with the working directory's name
 * trusted: 1 and its identity, taken without a system call; else 0. */
int bbx_dname_trusted_rel(const char *path, uint64_t *dev, uint64_t *ino);
extern int bbx_cwd_untrusted;

/* Descriptors through which this process created a file (bbx_cap_done): descriptor ->
 * the file's (dev, ino).  The metadata calls tar, sed and cp make on a file they have
 * just created (fchmod, fchown, futimens, fsetxattr) then find it CREATED without an
 * fstat each (issue 5: tar's 10 added system calls per file were 3 of them).  A mark
 * holds only while every close or replacement of its descriptor passes through the
 * shim, which forgets it first (shim/fd.c: close, dup2, dup3, close_range, closefrom,
 * fclose, freopen, dup, and syscall() of those numbers); a descriptor closed
 * behind libc's back (a raw system call, io_uring) and reused for another file would
 * keep a stale mark: that file's metadata change would go unrecorded.  Marks are used
 * for metadata calls only, never to skip a content pre-image.  Process-wide,
 * descriptors below BBX_FDID_N. */
#define BBX_FDID_N 1024
/* A second kind of mark, flagged in dev: the descriptor a writing open returned for a
 * regular file whose content and metadata were already kept whole (BBX_LVL_CONTENT:
 * PRESERVE or an empty file's SIZE, now or earlier in the run).  A futimens through it
 * needs no record (the PRESERVE's restore puts the times back after every later step,
 * journal/undo.c) and no second policy decision (the open's allowed writing to it): GNU
 * touch of a file older than the run.  (Mode and owner changes are recorded: capture.c,
 * bbx_cap_meta.)  Unlike a creation mark it is trusted only after an fstat of the
 * descriptor finds that very inode, still kept whole. */
#define BBX_FDID_KEPT (1ull << 63)
/* A third kind, flagged in dev too: a directory descriptor an open returned that passed
 * the deny_read check by its identity then (shim/policy.c, bbx_read_post).  fdopendir
 * of it needs no second check (rm -r, find, grep -r: openat then fdopendir of every
 * directory).  closedir, which closes the descriptor inside libc, forgets it first
 * (shim/read.c).  bbx_fdid_get does not report it; bbx_fdid_read_ok does. */
#define BBX_FDID_READ (1ull << 62)
/* A fourth, flagged in dev too, alone or with BBX_FDID_READ: a directory descriptor whose
 * every descendant by name is under no deny_read root (shim.h, bbx_rf_open: opened by
 * words that reach a prefix no root begins with, or by a name without symlinks beneath
 * such a directory).  A read-only open relative to it is then decided by its words
 * alone, as an absolute one is.  Alone, the mark carries no identity (ino
 * BBX_FDID_NOID): dir_name's first fstat of the descriptor adds it, with
 * BBX_FDID_READ (bbx_fdid_identify). */
#define BBX_FDID_CLEAN (1ull << 61)
#define BBX_FDID_NOID (~0ull)
/* With BBX_FDID_CLEAN, in dev's bits 40-55 (a device number fills 32): how many ".."
 * steps up from the directory stay clean ("/home/ann/proj/t": 1, up to proj), capped. */
#define BBX_FDID_LVL_SHIFT 40
#define BBX_FDID_LVL_MAX 0xffffu
#define BBX_FDID_LVL_MASK ((uint64_t)BBX_FDID_LVL_MAX << BBX_FDID_LVL_SHIFT)
void bbx_fdid_set(int fd, uint64_t dev, uint64_t ino);
/* 1 and (dev, ino) when fd carries a creation or kept mark, else 0. */
int bbx_fdid_get(int fd, uint64_t *dev, uint64_t *ino);
/* 1 when fd carries a deny_read mark (BBX_FDID_READ or BBX_FDID_CLEAN). */
int bbx_fdid_read_ok(int fd);
/* When fd carries BBX_FDID_CLEAN: its levels + 1 (above); else 0. */
int bbx_fdid_clean(int fd);
/* fd's identity, stated by the caller, added to its BBX_FDID_CLEAN mark (if it has
 * one), which becomes BBX_FDID_READ | BBX_FDID_CLEAN with the same levels. */
void bbx_fdid_identify(int fd, uint64_t dev, uint64_t ino);
/* The mark of from, of whatever kind, given to to as well (dup2, dup3, fcntl's
 * F_DUPFD: the same open file). */
void bbx_fdid_copy(int from, int to);
/* 1 and the directory's (dev, ino) when fd carries a deny_read mark (BBX_FDID_READ: a
 * directory, its identity taken by the fstat of its open), else 0.  The capture names
 * a call relative to fd by it (path.c, dir_name). */
int bbx_fdid_dir(int fd, uint64_t *dev, uint64_t *ino);
/* Forgets the marks of descriptors lo..hi (inclusive).  A load and a compare when
 * there are none. */
void bbx_fdid_forget(int lo, int hi);

/* Directories whose names were proved (path.c): by the kernel (readlink of a
 * descriptor, or openat2 with RESOLVE_NO_SYMLINKS of canonical words), then, on later
 * calls, while the run's namespace generation (state.h, bbx_state_nsgen) has not moved
 * since the proof: the words still name the directory proved, whose (dev, ino) the
 * proof gives (session 39: no stat of a relative path's directory part while the
 * working directory's name is trusted, none of absolute words); a call through a
 * descriptor finds its directory by the descriptor's identity (its deny_read mark, else
 * an fstat).  bbx_nsgen (run.h): the generation word of the run this process opened.
 * bbx_dname_gen() is read before a proof, bbx_dname_put() keeps it; bbx_dname_known(p,
 * sb) answers 1 when p is proved, with its identity in sb (and in the memo, as the
 * kernel's own name, identity only: bbx_stat_memo_ident).  Per thread; the memo's epoch
 * must be running (the shim's wrappers). */
uint64_t bbx_dname_gen(void);
void bbx_dname_put(const char *p, const struct stat *sb, uint64_t gen);
int bbx_dname_known(const char *p, struct stat *sb);
/* Unmaps a thread's table of kept proofs (its scratch's end). */
void bbx_dtab_free(struct bbx_scratch *s);
/* The thread's table, mapped now if it was not (never populated): NULL when it cannot
 * be mapped. */
struct bbx_dtab *bbx_dtab_map(struct bbx_scratch *s);
/* Before a call that may change which directory a path reaches (rename, rmdir, symlink
 * creation): every proof of the run is void. */
void bbx_nsgen_bump(void);
/* Set by bbx_cap_rename when the rename it recorded moves no directory (a source that
 * is not one, without RENAME_EXCHANGE): the wrapper's bump after the call is then not
 * needed either.  Read and cleared by the wrapper after the call (shim/names.c); 0, the
 * default, means bump. */
extern __thread int bbx_cap_rename_keeps_dirs __attribute__((tls_model("initial-exec")));

/* This thread's scratch, mapped (mmap, async-signal-safe) on first use and unmapped at
 * thread exit.  NULL when it cannot be mapped: callers refuse with ENOMEM. */
struct bbx_scratch *bbx_scratch(void);
/* The same, but mapped without making any page writable (bbx_scratch makes its hot
 * part, BBX_SCRATCH_HOT, writable in one call): for the fork handler, which maps it
 * only for the children to inherit. */
struct bbx_scratch *bbx_scratch_lazy(void);
/* The thread scratch's hot part (BBX_SCRATCH_HOT) made writable in one call (madvise
 * MADV_POPULATE_WRITE): for a fork child's first capture, which writes nearly all of it,
 * each page a fault of its own otherwise (the parent's copy-on-write pages, or none
 * where the fork handler mapped it without populating it; shim/init.c,
 * bbx_capture_ready_slow).  The cold pages are left to be copied when written, which
 * most children never do: populating the whole scratch copied 14 pages where 9 were
 * needed. */
void bbx_scratch_populate(void);
/* In a fork child: unblocks what a thread of the parent left half-done. */
void bbx_scratch_atfork_child(void);

/* The policy's say on a mutation, asked first by every bbx_cap_* function that
 * mutates.  Set by the shim; NULL in the tools.  path is the absolute target as the call
 * names it (NULL when the call acts on fd); follow: 1 the call follows a final symlink, 0
 * it does not, BBX_POL_NEWNAME it does not and the capture will not look at the name
 * either (O_CREAT|O_EXCL, mkstemp: the call fails on any existing name), so nothing
 * needs a lookup of it.  Returns 0, or -errno to refuse (having written the DENY
 * record). */
#define BBX_POL_NEWNAME 2
extern int (*bbx_cap_policy)(const char *op, const char *path, int fd, int follow);

/* [journal] max_preserve.  Before a pre-image copy (content form, or a removal whose
 * hard link is impossible) of a regular file larger than bbx_preserve_max bytes that
 * no reflink could make, capture asks bbx_cap_oversize(op, path, sb, out): 0 copy
 * anyway (audit mode, or the limit turned out higher), 1 go on without a copy (the
 * PRESERVE says how=lost, with out's RULE and REASON), or -errno: refuse the call (the
 * hook wrote the DENY record).  The size is the one of the stat the capture made
 * anyway: no system call more.  The shim sets both (bbx_preserve_max = 0 until its
 * policy is loaded, so the hook is asked once and stores the real limit); the tools
 * leave the hook NULL: bbx-undo always keeps everything it overwrites. */
struct bbx_oversize {
	const char *rule; /* the rule that allowed the loss ("policy.ini:13 [journal] ...") */
	char reason[160]; /* "1.5 GiB file over the 256 MiB preserve limit" */
};
extern uint64_t bbx_preserve_max;
/* The largest pre-image packed into the run's shared object (capture.c, pack_copy);
 * larger ones get an object of their own.  Weak, 1 MiB: tests set it. */
extern uint64_t bbx_pack_max;
extern int (*bbx_cap_oversize)(const char *op, const char *path, const struct stat *sb,
			       struct bbx_oversize *out);

/* A creation in flight: filled by a bbx_cap_* call, completed by bbx_cap_done(). */
struct bbx_pending {
	uint64_t seq;     /* 0 = nothing pending */
	int kind;
	int excl;	  /* the CREATE said how=excl: a failure's RESULT is written at once */
	const char *path; /* points into the caller's buffer; NULL once it is not valid */
	uint64_t dev, ino; /* a hard link's: its source's identity (bbx_cap_link), ino 0: none */
	uint64_t pgen;	   /* a directory's: the namespace generation its parent's words were
			    * proved in before the call (bbx_dname), 0: not proved */
	uint64_t kdev, kino; /* an open's: the regular file kept whole (content and metadata:
			      * BBX_LVL_CONTENT) before the call, by this capture or an earlier
			      * one, kino 0: none; the descriptor the call returns is marked
			      * with it (bbx_cap_done, BBX_FDID_KEPT) */
};

/* Before creating path (mkdir, mknod, mkfifo, symlink, link, mkstemp).  kind is a
 * BBX_KIND_*; target is the symlink content or the link source (may be NULL). */
int bbx_cap_create(struct bbx_run *run, const char *op, const char *path, int kind,
		   uint32_t mode, const char *target, struct bbx_pending *pend);
/* The same for a call that itself fails on any existing name (mkstemp's O_CREAT|O_EXCL,
 * mkdtemp's mkdir): the CREATE says HOW = excl, and whether the name existed is left to
 * the call (journal-format.md 5.3). */
int bbx_cap_create_excl(struct bbx_run *run, const char *op, const char *path, int kind,
			uint32_t mode, struct bbx_pending *pend);
/* A hard link's (link(2) fails on any existing name too): CREATE how=excl, target its
 * source.  pend->ino (dev) preset to the source's identity, when the caller knows it,
 * stands for the new name's lstat after the call (a link is the same inode; a source
 * replaced in between makes undo find another inode there, and move it aside as a
 * conflict). */
int bbx_cap_link(struct bbx_run *run, const char *op, const char *path, const char *source,
		 struct bbx_pending *pend);
/* After the call of a pending creation: RESULT with the outcome and the new inode (from
 * fd if >= 0, else lstat of the path).  The inode joins the captured set as created. */
void bbx_cap_done(struct bbx_run *run, const char *op, struct bbx_pending *pend, long ret,
		  int err, int fd);

/* Before open()/fopen()/creat() of path with oflags.  May set up a pending creation
 * (O_CREAT of a missing name); pend->path then points into resolved (PATH_MAX). */
int bbx_cap_open(struct bbx_run *run, const char *op, const char *path, int oflags,
		 uint32_t mode, char *resolved, struct bbx_pending *pend);

/* Before unlink/remove/rmdir of path, or before path is replaced by a rename. */
int bbx_cap_remove(struct bbx_run *run, const char *op, const char *path);

/* Before removing path, a name whose inode also lives on as other: nothing is lost, so
 * nothing is kept but that other name (PRESERVE how=alias).  Falls back to
 * bbx_cap_remove() when other is not the same inode. */
int bbx_cap_remove_alias(struct bbx_run *run, const char *op, const char *path,
			 const char *other);

/* Before rename(from, to) with renameat2 flags. */
int bbx_cap_rename(struct bbx_run *run, const char *op, const char *from, const char *to,
		   unsigned flags);

/* Before a size change of path (fd < 0) or of fd to newlen.  punch: data is lost
 * whatever the length (hole punch, zero/collapse/insert range).  A shrink preserves
 * the content; growth only records the original length. */
int bbx_cap_resize(struct bbx_run *run, const char *op, const char *path, int fd,
		   int64_t newlen, int punch);

/* Before data is written into fd by a call that bypasses open-time capture
 * (copy_file_range, sendfile into a descriptor the run did not open).  inplace: the
 * write may land inside the existing data even though fd is O_APPEND (fcntl clearing
 * O_APPEND, pwritev2 with RWF_NOAPPEND): the length alone is then no pre-image. */
int bbx_cap_fdwrite(struct bbx_run *run, const char *op, int fd, int inplace);

/* Before chmod/chown/utimes/xattr changes of path (fd < 0) or fd.  mask is
 * BBX_META_*; xname the attribute for BBX_META_XATTR. */
int bbx_cap_meta(struct bbx_run *run, const char *op, const char *path, int fd, uint32_t mask,
		 const char *xname);

/* Before an exec: the program, its argv and cwd.  Returns the record's seq via *seq. */
int bbx_cap_exec(struct bbx_run *run, const char *op, const char *exe, char *const argv[],
		 uint64_t *seq);
/* (procrec.c) The same with the environment passed to the new program (envp; NULL:
 * none recorded).  argv and envp are redacted (redact.h) before they are encoded. */
int bbx_cap_exec_env(struct bbx_run *run, const char *op, const char *exe, char *const argv[],
		     char *const envp[], uint64_t *seq);
/* (procrec.c) The same for a program that starts in cwd, not in this process's working
 * directory (posix_spawn after posix_spawn_file_actions_addchdir_np); NULL: getcwd. */
int bbx_cap_exec_in(struct bbx_run *run, const char *op, const char *exe, const char *cwd,
		    char *const argv[], char *const envp[], uint64_t *seq);
/* (procrec.c) PROC, a process's first record: EXE (/proc/self/exe), ARGV, CWD and ENV
 * (envp, normally environ), redacted.  ARGV is cmd (len bytes of NUL-terminated
 * arguments: the process's argv as it started, saved by the caller) or, when cmd is
 * NULL, /proc/self/cmdline - which shows what the process has written over its argv
 * since (node's process.title, setproctitle).  Never in the thread scratch: callable
 * from bbx_run_prologue, whose contract it follows (run.h): encoded into buf (cap
 * bytes) as e, unfinished, it returns 1; when it does not fit there (or buf is NULL) it
 * is built in a mapping of its own and written here, and 0 is returned. */
int bbx_cap_proc(struct bbx_run *run, struct bbx_enc *e, uint8_t *buf, size_t cap,
		 const char *cmd, size_t len, char *const envp[]);
/* (procrec.c) EXIT: a child ended.  pid (0: unknown) and/or ref (seq of the EXEC that
 * started it, 0: none), status the raw wait status. */
int bbx_cap_exit(struct bbx_run *run, const char *op, long pid, uint64_t ref, int status);
/* (procrec.c) The RESULT of a successful posix_spawn: RET 0 and the child's PID (when
 * bbx_results_all). */
int bbx_cap_spawned(struct bbx_run *run, const char *op, uint64_t seq, long pid);
/* (procrec.c) A NOTE whose text may hold argv or environment: redacted first. */
int bbx_cap_note_redacted(struct bbx_run *run, const char *op, const char *path,
			  const char *text);
/* Whether successful calls get a RESULT too (the policy's [journal] results = all |
 * failures; default all).  Wrappers test it in one place: bbx_cap_outcome(). */
extern bool bbx_results_all;
/* The RESULT after a call whose capture wrote record seq (0: none, nothing written):
 * ret < 0 means failure with errno err.  Always for failures; successes only when
 * bbx_results_all. */
void bbx_cap_outcome(struct bbx_run *run, const char *op, uint64_t seq, long ret, int err);

/* A RESULT for any earlier record (exec failure, forensic outcome). */
int bbx_cap_result(struct bbx_run *run, const char *op, uint64_t ref, long ret, int err);
/* The same, deferred to the thread's next record (bbx_run_emit_later): the outcome of a
 * call that already happened, which no mutation waits on. */
int bbx_cap_result_later(struct bbx_run *run, const char *op, uint64_t ref, long ret,
			 int err);
/* A NOTE record with free text. */
int bbx_cap_note(struct bbx_run *run, const char *op, const char *path, const char *text);

/* Copies the extended attributes of one open file to another, as far as permitted
 * (user.* always; trusted.* and security.* need privilege).  Best effort, bounded to
 * 4 KiB of names and 4 KiB per value; allocation-free. */
void bbx_copy_xattrs(int from, int to);
/* Up to len bytes of in from *in_off into out at *out_off (copy_file_range, else pread
 * and pwrite; through bbx_sys), both offsets advanced.  0 with *copied = the bytes
 * copied (fewer than len only when in ended first), or -errno. */
int bbx_copy_range(int in, off_t *in_off, int out, off_t *out_off, uint64_t len,
		   uint64_t *copied);
/* The same, copy_file_range tried only while *cfr is 1; set to 0 when the kernel
 * refused it (*cfr_err: the errno, EXDEV between two filesystems). */
int bbx_copy_range_cfr(int in, off_t *in_off, int out, off_t *out_off, uint64_t len,
		       uint64_t *copied, int *cfr, int *cfr_err);

/* (path.c) Builds an absolute path: path itself if absolute, else relative to dirfd
 * (AT_FDCWD: the cwd).  "." components and repeated slashes are dropped.  When the
 * directory part holds ".." or a magic link (/proc/..., /dev/fd/...), it is replaced by
 * the kernel's name for that directory (opened O_PATH): the directory ".." names may be
 * renamed or removed later in the run, and a magic link would mean something else to
 * bbx-undo.  The last component is kept as given.  Returns 0 or -errno. */
int bbx_path_abs(int dirfd, const char *path, char *out, size_t cap);
/* Set by bbx_path_abs to its output buffer when the directory part of the result is the
 * kernel's own name for that directory (a single name relative to the cwd or a dirfd:
 * no symlink or ".." left in it), so deciding on it needs no second resolution (the
 * shim's policy); NULL otherwise.  Thread-local; valid until the next call. */
extern __thread const char *bbx_path_parent_real __attribute__((tls_model("initial-exec")));
/* Path of an open descriptor via /proc/self/fd.  Returns 0 or -errno. */
int bbx_path_fd(int fd, char *out, size_t cap);
/* (path.c) No "//" and no "." or ".." component in path, absolute or relative (a hidden
 * name like ".config" is fine): the words are the names the kernel walks, one by one. */
int bbx_path_clean(const char *path);

#endif
