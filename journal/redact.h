/* SPDX-License-Identifier: MIT
 *
 * redact.h - secrets never reach the journal: argv, environment and free text are
 * rewritten before anything is written (records, stderr messages).
 *
 * What is redacted:
 *  - environment variables whose NAME matches an env glob (case-insensitive; defaults
 *    *TOKEN* *SECRET* *PASSWORD* *PASSWD* *KEY* *CREDENTIAL* *AUTH*): the whole value;
 *  - argv elements matching an argv glob (case-insensitive; defaults --password=* and
 *    friends): what follows the '=' (or the glob's literal prefix when there is no '=');
 *    a glob without wildcard ("--password") names a flag whose NEXT element is secret;
 *    "-pSECRET" for mysql-family tools and sshpass; NAME=VALUE elements (env(1),
 *    make(1) assignments) follow the env rule;
 *  - anywhere in any value: URL passwords (scheme://user:PASS@host keeps user and
 *    host), AWS key ids (AKIA/ASIA...) and a 40-character secret after one, GitHub
 *    tokens (ghp_ gho_ ghu_ ghs_ ghr_ github_pat_), sk-... / sk-ant-... API keys, Slack
 *    xox?- tokens, JWTs (eyJ...x.y.z), PEM private key blocks, Google AIza... keys,
 *    "Bearer <token>".
 * Each secret becomes BBX_REDACT_MARK, or "***REDACTED:xxxxxxxx***" (first 8 hex digits
 * of the XXH64 of the secret) when fingerprints are on, so equal secrets can be told
 * apart without being shown.
 *
 * Every bbx_redact_* function except bbx_redact_configure() is allocation-free,
 * lock-free and async-signal-safe: the shim calls them in wrappers and vfork children.
 * Output that does not fit is truncated: a prefix of the redacted text, never of the
 * original, so truncation cannot reveal a secret.
 */
#ifndef BBX_REDACT_H
#define BBX_REDACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BBX_REDACT_MARK "***REDACTED***"

/* Adds patterns to the defaults (the policy's [redact] section) and turns fingerprints
 * on or off.  Patterns are copied.  Call before any thread journals (start-up).
 * Returns 0, or -ENOSPC when the patterns do not fit (64 of each kind, 4 KiB in all):
 * those that fitted are in use. */
int bbx_redact_configure(const char *const *env_globs, size_t nenv,
			 const char *const *argv_globs, size_t nargv, bool fingerprint);
/* The same without copying (the shim: a copy wrote a page of .bss in every process
 * that maps the policy, issue 5): the patterns are got(0, i) for i < nenv (env) and
 * got(1, i) for i < nargv (argv), asked each time they are needed; got must be
 * async-signal-safe and its strings must stay valid and unchanged.  Replaces whatever
 * was configured before. */
void bbx_redact_use(const char *(*got)(int kind, size_t i), size_t nenv, size_t nargv,
		    bool fingerprint);
/* Learns, once per configuration, which of the added patterns can match anything the
 * built-in ones do not (the others are never run); done on first use otherwise.  For
 * a process about to fork, so that its children inherit the answer. */
void bbx_redact_prepare(void);
/* Back to the defaults only, fingerprints off (tests). */
void bbx_redact_reset(void);

/* Case-insensitive glob match, '*' and '?' only. */
bool bbx_redact_glob(const char *glob, const char *s);

/* Each of these writes the redacted string into out (always NUL-terminated when
 * cap > 0) and returns its length without the NUL, like snprintf: a result >= cap
 * means out was truncated. */
/* Free text (a value, a NOTE): token shapes and URL passwords. */
size_t bbx_redact_text(const char *s, char *out, size_t cap);
/* One NAME=VALUE environment entry. */
size_t bbx_redact_env(const char *name_eq_value, char *out, size_t cap);
/* One argv element.  tool: argv[0] (may be NULL); prev: the element before (NULL for
 * the first). */
size_t bbx_redact_arg(const char *tool, const char *prev, const char *arg, char *out,
		      size_t cap);

/* A whole NULL-terminated argv or envp, as the journal stores it: redacted strings,
 * each with its NUL, back to back.  Returns the bytes needed; a result > cap means out
 * holds only the elements that fitted whole. */
size_t bbx_redact_argv(char *const argv[], char *out, size_t cap);
size_t bbx_redact_envp(char *const envp[], char *out, size_t cap);
/* A table of n hashes of environment entries and argv elements found clean (redaction
 * left them as they were; an element, in a context where that does not depend on its
 * neighbours or tool: redact.c, arg_elem), shared by every process of a run (state.h,
 * bbx_state_clean), so that bbx_redact_envp, bbx_redact_argv and bbx_redact_block copy
 * a string they have seen instead of scanning it: a link line's ~50 elements, redacted
 * in the EXEC record and again in the PROC record of each of collect2 and ld, cost
 * ~150 k instructions a time.  seed: the run's (a string with a secret is never
 * entered; one colliding with a clean string's 64-bit hash would be copied).  Only for
 * a run whose redaction rules are fixed: the table answers for the rules it was filled
 * under.  NULL: no table.  n: the slots; groups of four of them are used, the largest
 * power of two of groups that fits. */
void bbx_redact_set_cache(uint64_t *slots, size_t n, uint64_t seed);
/* The same over strings already stored back to back (/proc/self/cmdline): len bytes
 * at blk, each string NUL-terminated (a missing last NUL is supplied).  env: NAME=VALUE
 * entries, else an argv. */
size_t bbx_redact_block(const char *blk, size_t len, bool env, char *out, size_t cap);

#endif
