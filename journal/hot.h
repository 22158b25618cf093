/* SPDX-License-Identifier: MIT
 *
 * hot.h - BBX_HOT: where the small variables go that most processes of a run touch.
 *
 * Zero-initialised, they would be .bss, spread over its 32 pages by the objects they
 * come from and the big tables between them (the descriptor marks, the host names, the
 * policy index): the resolved real functions, the mapped policy and its index state,
 * the descriptor marks' bound, the process ids, the held-back RESULTs' owner,
 * redaction's counts, the writer's test hook.  Each page of them a process touches is
 * a page fault (two when it is read before it is written: the zero page, then the
 * copy), 10-13 us each on this kind of machine (bench/micro -f; issue 5).
 * In ".data.bbx_hot", which the default linker script gathers into .data, they share
 * the data segment's one file-backed page, which the dynamic loader has written
 * already (the GOT, the relocations; tests/e2e/t-layout.sh holds it to one page).  In
 * the tools, which link the same objects, it is just .data.
 */
#ifndef BBX_HOT_H
#define BBX_HOT_H

#define BBX_HOT __attribute__((section(".data.bbx_hot")))

#endif
