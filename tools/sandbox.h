/* SPDX-License-Identifier: MIT
 *
 * sandbox.h - seccomp and Landlock under a run (sandbox.c).
 */
#ifndef BBX_SANDBOX_H
#define BBX_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

/* Applies the kernel layers to the calling process (bbx-run's child, before exec): the
 * seccomp filter always, Landlock when p restricts writes.  p may be NULL (no policy).
 * Returns 0, or -1 with what could not be applied in msg (the run goes on: each layer
 * degrades gracefully, and the caller says so once). */
int bbx_sandbox_apply(const struct bbx_pol_hdr *p, const char *jdir, char *msg, size_t cap);
/* The seccomp filter bbx_sandbox_apply loads for a run whose mark is mark (0: a run with
 * no write roots, no truncation rules), written to fd as raw BPF (seccomp_export_bpf),
 * for the unit tests.  0 or -errno. */
int bbx_sandbox_export_bpf(uint64_t mark, int fd);

#endif
