/* SPDX-License-Identifier: MIT
 *
 * policy.h - the compiled policy: its binary form, the compiler (tools only) and the
 * matcher (shim and tools).
 *
 * policy.ini is parsed once per run, by bbx-run (or bbx-policy), with inih; the result
 * is one position-independent blob written to the run directory (J/policy) and mapped
 * read-only by every process of the run.  No process of the agent parses INI text or
 * loads libinih (issue 3: "parse once per run and give every process the compiled form").
 *
 * Blob layout (little-endian, as the host: the blob never leaves the machine):
 *   struct bbx_pol_hdr
 *   struct bbx_pol_rule   rules[n_rules]     (in file order within each section; the
 *                                              built-in exec rules after the file's)
 *   struct bbx_pol_inode  inodes[n_inodes]   (sorted by dev, then ino)
 *   char                  strings[strings_len] (NUL-terminated strings; offset 0 = "")
 * All offsets are from the start of the blob.  bbx_pol_check() validates every offset,
 * so a matcher never reads outside the mapping.
 *
 * Precedence (the man page bbx-policy(5) states the same, one sentence per section):
 *   [general] mode: safe refuses every mutation; audit decides and records everything
 *             but refuses nothing; enforce refuses what the rules below refuse.
 *   [paths]   a mutation is allowed only if its resolved target is under a write root
 *             and under no protect entry (that existed when the run started); deny_read refuses reading (and listing,
 *             stat, readlink, exec) and beats everything; the journal directory is
 *             always protected.
 *   [network] deny rules beat allow rules; an address no allow rule matches is refused.
 *   [exec]    the first rule whose glob matches the command line decides (the file's
 *             rules in file order, then the built-in ones); no match allows (class safe).
 */
#ifndef BBX_POLICY_H
#define BBX_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#define BBX_POL_MAGIC 0x4c4f5042u /* "BPOL" */
#define BBX_POL_VERSION 1
#define BBX_POL_FILE "policy" /* name of the compiled blob in a run directory */

enum bbx_pol_mode { BBX_MODE_ENFORCE = 0, BBX_MODE_AUDIT = 1, BBX_MODE_SAFE = 2 };
/* Actions: exec rules use all; network rules allow/deny; [exec] static allow/warn/deny. */
enum bbx_pol_action {
	BBX_ACT_ALLOW = 0,
	BBX_ACT_LOG = 1,
	BBX_ACT_DENY = 2,
	BBX_ACT_ASK = 3,  /* reserved (approval issue); treated as deny until then */
	BBX_ACT_WARN = 4, /* [exec] static only */
};

/* What a rule is (bbx_pol_rule.section). */
enum bbx_pol_sect {
	BBX_PS_WRITE = 1,       /* [paths] write */
	BBX_PS_PROTECT = 2,     /* [paths] protect */
	BBX_PS_DENY_READ = 3,   /* [paths] deny_read */
	BBX_PS_NET_ALLOW = 4,   /* [network] allow */
	BBX_PS_NET_DENY = 5,    /* [network] deny */
	BBX_PS_EXEC = 6,        /* [exec] deny/log/allow/ask (action says which) */
	BBX_PS_REDACT_ENV = 7,  /* [redact] env: glob over variable names */
	BBX_PS_REDACT_ARGV = 8, /* [redact] argv: glob over one argv element */
};

/* Network rule kinds (bbx_pol_rule.kind). */
enum bbx_pol_net_kind {
	BBX_NK_V4 = 1,   /* addr[0..3], prefix 0..32, port (0 = any) */
	BBX_NK_V6 = 2,   /* addr[0..15], prefix 0..128, port */
	BBX_NK_UNIX = 3, /* value: socket path (glob); abstract sockets as "@name" */
	BBX_NK_HOST = 4, /* value: host name (glob, lower case, e.g. "*.npmjs.org"), port */
	BBX_NK_ANY = 5,  /* "*": every inet address (port may still be set) */
};

/* rule flags */
#define BBX_RF_BUILTIN 1u /* from the built-in rules, not from a file */
#define BBX_RF_PARTIAL 2u /* deny_read root whose inode set is incomplete (too many files) */
#define BBX_RF_PREFIX 4u  /* exec: glob ends in '*' only (fast prefix compare) */
#define BBX_RF_ABSENT 8u  /* protect path that did not exist when the run started: it
			     guards what is there (a repository's hooks), so it is not
			     enforced in this run (a new repository's git init works) */

struct bbx_pol_rule {
	uint16_t section; /* enum bbx_pol_sect */
	uint16_t action;  /* enum bbx_pol_action */
	uint16_t klass;   /* enum bbx_class (record.h), exec rules */
	uint16_t kind;    /* enum bbx_pol_net_kind, network rules */
	uint32_t value;   /* string: path (absolute, resolved, no trailing '/'), glob, host */
	uint32_t value_len;
	uint32_t loc;     /* string: "policy.ini:12 [paths] write" (built-ins:
			     "built-in [exec] deny"); the value is in value */
	uint16_t port;    /* network: host byte order, 0 = any */
	uint8_t prefix;   /* network: CIDR bits */
	uint8_t flags;    /* BBX_RF_* */
	uint8_t addr[16]; /* network: address, network byte order */
};

/* A deny_read inode: every file, directory and symlink under a deny_read root, listed
 * at compile time (lstat walk, bounded), so an open/stat that reaches one through any
 * indirection (symlink, "..", hard link, bind mount, /proc/self/root) is caught by its
 * identity. */
struct bbx_pol_inode {
	uint64_t dev, ino;
	uint32_t rule; /* index into rules[] */
	uint32_t pad;
};

struct bbx_pol_hdr {
	uint32_t magic, version;
	uint32_t size;          /* of the whole blob */
	uint32_t mode;          /* enum bbx_pol_mode */
	uint32_t explain;       /* 1: one stderr line per refusal (rate-limited) */
	uint32_t static_action; /* enum bbx_pol_action: allow, warn or deny */
	uint32_t static_loc;    /* string: where static was set ("built-in" if default) */
	uint32_t results_all;   /* [journal] results = all (1) | failures (0) */
	uint32_t redact_fingerprint;
	uint32_t n_rules, rules_off;
	uint32_t n_inodes, inodes_off;
	uint32_t strings_off, strings_len;
	uint32_t src;           /* string: the policy file ("built-in" for the default) */
	uint32_t workspace;     /* string: ${WORKSPACE} as expanded */
	uint32_t n_write, n_protect, n_deny_read, n_net, n_exec; /* counts, for fast paths */
	/* [journal] (taken from the words reserved in the first layout, so an older blob
	 * reads as the defaults: no limit, refuse, off).  max_preserve in bytes, as two
	 * halves (the header keeps its 4-byte alignment); it applies only when
	 * max_preserve_loc is not the empty string (bbx_pol_max_preserve()). */
	uint32_t max_preserve_lo, max_preserve_hi;
	uint32_t max_preserve_loc; /* string: "policy.ini:12 [journal] max_preserve" ("": unlimited) */
	uint32_t over_max;         /* enum bbx_pol_over: [journal] over_max_preserve */
	uint32_t over_max_loc;     /* string: where over_max_preserve was set ("": default) */
	uint32_t sync;             /* enum bbx_sync (journal/state.h): [journal] sync */
	/* 1: a deny_read object can be reached by no path but its own: none of the listed
	 * inodes has a second hard link, and no deny_read root's filesystem is mounted
	 * twice (bind mounts).  The shim then decides a read-only open of an absolute
	 * path without symlinks by its words alone (shim/policy.c, openat2 with
	 * RESOLVE_NO_SYMLINKS), without the identity check after it. */
	uint32_t reads_exact; /* (a reserved word before: 0, the safe answer, in an older blob) */
	/* The matcher's index of the rules (match.c, struct bbx_pol_ix), built by the
	 * compiler after the strings: ix_len bytes at ix_off (8-aligned).  0, 0 (reserved
	 * words before, in an older blob): none, each process builds its own. */
	uint32_t ix_off, ix_len;
};

/* [journal] over_max_preserve: what a mutation that would need a copy of a regular file
 * larger than max_preserve gets. */
enum bbx_pol_over {
	BBX_OVER_REFUSE = 0, /* refused with EFBIG, DENY record (the default) */
	BBX_OVER_ALLOW = 1,  /* goes ahead without a copy: PRESERVE how=lost, unrecoverable */
};

/* The preserve limit in bytes; UINT64_MAX when there is none. */
static inline uint64_t bbx_pol_max_preserve(const struct bbx_pol_hdr *p)
{
	if (!p->max_preserve_loc)
		return UINT64_MAX;
	return (uint64_t)p->max_preserve_hi << 32 | p->max_preserve_lo;
}

/* ---- matcher (policy/match.c): allocation-free, async-signal-safe, no syscalls ---- */

/* Validates a blob of len bytes (magic, version, sizes, every offset and string).
 * Returns 0 or -EINVAL. */
int bbx_pol_check(const void *blob, size_t len);
/* Indexes p's path rules by section, for a blob that stays mapped as long as the
 * process lives (the shim's run policy; at most one per process, the first). */
void bbx_pol_index(const struct bbx_pol_hdr *p);
/* The index bbx_pol_index uses, for the compiler to carry in the blob: its size, and
 * the index of p (whose rules and strings are final) written to out (ix_size bytes). */
size_t bbx_pol_ix_size(void);
void bbx_pol_ix_build(const struct bbx_pol_hdr *p, void *out);
/* The part of the shim's read filter (shim/shim.h, struct bbx_rfilt) that follows
 * from the policy alone, made with the index and so carried in the blob with it: a
 * process that reads maps it instead of walking every rule (~7 k instructions in
 * each process that loads the policy, callgrind of touch).
 *   words: the bytes after the leading '/' of the deny_read roots, as a 256-bit set
 *     (an absolute path whose second byte is not in it is under no deny_read root:
 *     bbx_pol_read allows it), with '.' and '/' added ("/./root", "//root" name what
 *     their words hide);
 *   pfx: every deny_read root's component prefixes and the root itself, as 32-bit
 *     FNV-1a hashes with their two low bits replaced (bit 0: an entry; bit 1: a whole
 *     root), open addressing from bbx_rf_pfx_home; npfx entries, at most
 *     BBX_RF_PFX_MAX so that a probe meets an empty slot; npfx 0: none (a root not
 *     absolute, or more prefixes than fit);
 *   ino: a 1024-bit Bloom filter of the listed inodes' numbers (bbx_rf_ino_bit).
 * bbx_pol_read_filter returns it when p is the indexed blob, no deny_read root is
 * partial (BBX_RF_PARTIAL) and deny_read is matched through the root hash with no "/"
 * root; NULL else. */
#define BBX_RF_PFX_SLOTS 64
#define BBX_RF_PFX_MAX 44
struct bbx_pol_rf {
	uint64_t words[4];
	uint64_t ino[16];
	uint32_t ok, npfx;
	uint32_t pfx[BBX_RF_PFX_SLOTS];
};
const struct bbx_pol_rf *bbx_pol_read_filter(const struct bbx_pol_hdr *p);

#define BBX_RF_FNV0 2166136261u
static inline uint32_t bbx_rf_fnv(uint32_t h, unsigned char c)
{
	return (h ^ c) * 16777619u;
}

static inline unsigned bbx_rf_pfx_home(uint32_t h)
{
	return (h * 0x9e3779b1u) >> 26; /* 0..63 */
}

static inline unsigned bbx_rf_ino_bit(uint64_t ino)
{
	return (unsigned)((ino * 0x9e3779b97f4a7c15ull) >> 54); /* 0..1023 */
}

/* [redact]'s rules of each kind (0: env, 1: argv) as one run of consecutive rules
 * each: where each starts and how many (first is 0 for a kind with none), from the
 * index.  1: each kind is one run (the patterns can be used where they lie); 0: not;
 * -1: p is not the indexed blob (the caller walks the rules). */
int bbx_pol_redact_runs(const struct bbx_pol_hdr *p, uint32_t first[2], uint32_t n[2]);

/* Where bbx_pol_index found its index: 1 carried in the blob, 2 built by this process
 * (none carried, or one that failed its checks), 0 not indexed (yet). */
int bbx_pol_index_source(void);
/* Maps the compiled policy file read-only (and checks it).  Returns 0 or -errno. */
int bbx_pol_map(const char *path, const struct bbx_pol_hdr **out);

static inline const char *bbx_pol_str(const struct bbx_pol_hdr *p, uint32_t off)
{
	return (const char *)p + p->strings_off + off;
}
static inline const struct bbx_pol_rule *bbx_pol_rules(const struct bbx_pol_hdr *p)
{
	return (const struct bbx_pol_rule *)((const char *)p + p->rules_off);
}
static inline const struct bbx_pol_inode *bbx_pol_inodes(const struct bbx_pol_hdr *p)
{
	return (const struct bbx_pol_inode *)((const char *)p + p->inodes_off);
}

/* 1 when some deny_read root was too large to list (BBX_RF_PARTIAL): an opened
 * object's kernel name is then checked too, and the shim has no read filter. */
static inline int bbx_pol_partial_roots(const struct bbx_pol_hdr *p)
{
	for (uint32_t i = 0; i < p->n_rules; i++)
		if (bbx_pol_rules(p)[i].flags & BBX_RF_PARTIAL)
			return 1;
	return 0;
}

/* [redact]'s patterns, in the policy's order: the env globs into env (at most cap), the
 * argv globs into argv; their numbers into *ne and *na.  The strings are the blob's. */
static inline void bbx_pol_redact_globs(const struct bbx_pol_hdr *p, const char **env,
					const char **argv, size_t cap, size_t *ne, size_t *na)
{
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	*ne = *na = 0;
	for (uint32_t i = 0; i < p->n_rules; i++) {
		if (r[i].section == BBX_PS_REDACT_ENV && *ne < cap)
			env[(*ne)++] = bbx_pol_str(p, r[i].value);
		else if (r[i].section == BBX_PS_REDACT_ARGV && *na < cap)
			argv[(*na)++] = bbx_pol_str(p, r[i].value);
	}
}

/* The outcome of a decision. */
struct bbx_pol_verdict {
	int decision;                   /* enum bbx_decision (record.h) */
	int err;                        /* errno to refuse with (0 when allowed) */
	int klass;                      /* enum bbx_class */
	const struct bbx_pol_rule *rule; /* NULL: decided by the mode or a default */
	const char *reason;             /* static text: "outside write roots" */
};

/* A mutation of path (absolute, resolved by the caller: real parent directory, final
 * symlink followed when the call follows it). */
void bbx_pol_write(const struct bbx_pol_hdr *p, const char *path, struct bbx_pol_verdict *v);
/* Whether bbx_pol_write decides every name directly in the directory dir (absolute, its
 * first dl bytes; "/" is dl 1) the same way: true when no [paths] root of any section
 * (write, protect, deny_read; protect entries absent at the run's start not counted,
 * as bbx_pol_write does not count them) is itself an entry of dir.  Every other root
 * is dir, above it or elsewhere, and so holds for all of dir's entries or for none: one
 * allowed entry then stands for all of them (the shim's decision cache, shim/policy.c). */
bool bbx_pol_dir_uniform(const struct bbx_pol_hdr *p, const char *dir, size_t dl);
/* Reading path (absolute; lexical form or resolved). */
void bbx_pol_read(const struct bbx_pol_hdr *p, const char *path, struct bbx_pol_verdict *v);
/* Reading an object by identity (after open/stat).  True when the inode is denied. */
bool bbx_pol_read_inode(const struct bbx_pol_hdr *p, uint64_t dev, uint64_t ino,
			struct bbx_pol_verdict *v);
/* An exec of the command line (argv joined by single spaces). */
void bbx_pol_exec(const struct bbx_pol_hdr *p, const char *cmdline, struct bbx_pol_verdict *v);
/* The byte pairs of a command line, hashed into a set (match.c): a rule whose literal
 * runs hold a pair the line lacks cannot match it. */
#define BBX_POL_PAIR_BITS 2048
struct bbx_pol_pairs {
	uint64_t set[BBX_POL_PAIR_BITS / 64];
	int ready; /* 0: not computed yet (the caller sets it to 0 once) */
};
/* bbx_pol_exec with the pair set in pp, computed at the first call that needs it and
 * kept for the next: valid for every later line that is a substring of the line it
 * was computed for (a superset of pairs only lets more rules reach their glob, so no
 * verdict changes).  The shim checks the forms of one exec's command line (as given,
 * argv[0]'s directory dropped, sh -c's script), each a suffix of the one before when
 * the whole line fits. */
void bbx_pol_exec_pairs(const struct bbx_pol_hdr *p, const char *cmdline,
			struct bbx_pol_pairs *pp, struct bbx_pol_verdict *v);
/* Egress to an address; host is the name it was resolved from (NULL if unknown). */
void bbx_pol_net(const struct bbx_pol_hdr *p, const struct sockaddr *sa, socklen_t len,
		 const char *host, struct bbx_pol_verdict *v);
/* Egress to a unix socket named by text: "/abs/path" (resolved by the caller: symlinks
 * followed) or "@abstract" (match_net.c). */
void bbx_pol_net_unix(const struct bbx_pol_hdr *p, const char *name, struct bbx_pol_verdict *v);
/* sun_path of a unix address of len bytes as text: the path as given, or "@name" for an
 * abstract one (control bytes, 0x7f and backslash as \xHH); out: BBX_POL_UNIX_TEXT bytes. */
struct sockaddr_un;
#define BBX_POL_UNIX_TEXT (4 * 108 + 2)
void bbx_pol_unix_text(const struct sockaddr_un *un, socklen_t len, char *out);
/* What the HOST rules say about looking a name up (match_net.c): -1 a deny rule without
 * a port names it (the lookup is refused); 1 an allow rule names it (the lookup may go
 * to DNS); 0 neither (the shim then allows the lookup only if /etc/hosts answers it or
 * the configured nameserver is an allowed address: DNS queries carry the name out). */
int bbx_pol_host(const struct bbx_pol_hdr *p, const char *host);
/* bbx_pol_host(p, host) > 0. */
bool bbx_pol_host_allowed(const struct bbx_pol_hdr *p, const char *host);
/* fnmatch-like glob ('*', '?', '[...]'), no allocation; flags: BBX_GLOB_CASEFOLD. */
#define BBX_GLOB_CASEFOLD 1
bool bbx_glob(const char *pat, const char *s, int flags);
/* Is path equal to root or below it ("/a/b" is under "/a", "/ab" is not)? */
bool bbx_path_under(const char *path, const char *root, size_t root_len);

/* ---- compiler (policy/compile.c, policy/ini.c; tools only: mallocs, reads files) ---- */

struct bbx_pol_vars {
	const char *workspace, *home, *tmpdir, *uid; /* NULL: taken from the environment */
};

/* Finds the policy to use: explicit (--policy) if set, else $BBX_POLICY, else
 * $XDG_CONFIG_HOME/bbx/policy.ini (or ~/.config/...), else /etc/bbx/policy.ini.
 * Returns a malloc'd path, or NULL: use the built-in default. */
char *bbx_pol_lookup(const char *explicit_path);
/* Compiles an INI file (file == NULL: the built-in default).  On success returns 0 and
 * a malloc'd blob in *blob, its size in *len.  On error returns -1 with "FILE:LINE: what was
 * expected" in err; nothing is half-applied. */
int bbx_pol_compile(const char *file, const struct bbx_pol_vars *vars, void **blob,
		    size_t *len, char *err, size_t errcap);
/* Writes the blob to dir/policy (mode 0444, atomically; flushed to disk before the
 * rename only when the blob's [journal] sync is not off). Returns 0 or -errno. */
int bbx_pol_install(const char *dir, const void *blob, size_t len);
/* The effective policy in INI form, variables expanded, with each rule's origin. */
void bbx_pol_print(const struct bbx_pol_hdr *p, FILE *out);

#endif
