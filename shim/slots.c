/* SPDX-License-Identifier: MIT
 *
 * slots.c - the real functions' slots that shim.h names cold (BBX_COLD_): those of calls
 * few programs make, here in .bss.  Every other slot is BBX_HOT, in init.c.  Linked
 * after init.c, so that these come after its .bss head in the loader's page.
 */
#include "shim.h"

#define BBX_WRAP(name, ret, params) BBX_IF_COLD(name, ret(*bbx_real_##name) params;, )
#include "wrappers.def"
#undef BBX_WRAP
