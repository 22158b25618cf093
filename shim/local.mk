# libbbxshim.so: the LD_PRELOAD library.  Only the names in shim/wrappers.def are
# exported (-fvisibility=hidden + BBX_EXPORT).
pkglib_LTLIBRARIES += shim/libbbxshim.la
shim_libbbxshim_la_SOURCES = \
	shim/shim.h shim/wrappers.def \
	shim/init.c shim/slots.c shim/env.c \
	shim/policy.c shim/read.c shim/syscall.c shim/open.c shim/tmp.c shim/names.c shim/size.c shim/meta.c \
	shim/exec.c shim/spawnfa.c shim/net.c shim/proc.c shim/fd.c shim/cwd.c shim/preserve.c shim/vfork.c \
	$(NULL)
shim_libbbxshim_la_CPPFLAGS = $(AM_CPPFLAGS) -DBBX_BINDIR='"$(bindir)"'
shim_libbbxshim_la_CFLAGS = $(AM_CFLAGS) -fPIC -ffunction-sections -fdata-sections $(XXHASH_CFLAGS)
# -T shim/hot.ld: what fork children and new processes run, packed together (see there).
# -z norelro -z noseparate-code: two mappings instead of four.  Each costs every process
# that loads the shim mmap, mprotect and page-fault work: 10-50 us per exec measured here
# (perf stat -r 200 /bin/true, 2 vs 4 segments, interleaved), out of ~130.  What RELRO
# would protect (the GOT) matters little in a library whose real-function pointers live
# in writable memory by design.
shim_libbbxshim_la_LDFLAGS = -module -avoid-version -shared -Wl,--no-undefined -Wl,--gc-sections -Wl,-Bsymbolic-functions \
	-Wl,-O1 -Wl,-z,norelro -Wl,-z,noseparate-code -Wl,-T,$(srcdir)/shim/hot.ld
shim_libbbxshim_la_LIBADD = journal/libbbxjournal.la policy/libbbxpol.la -ldl
EXTRA_shim_libbbxshim_la_DEPENDENCIES = shim/hot.ld
EXTRA_DIST += shim/wrappers.def shim/hot.ld

# libbbxshim-crash.so: the same shim with crash points (shim/crash.c), for
# tests/e2e/t-crash.sh only: built by `make check`, never installed.
check_LTLIBRARIES = shim/libbbxshim-crash.la
shim_libbbxshim_crash_la_SOURCES = $(shim_libbbxshim_la_SOURCES) shim/crash.c
shim_libbbxshim_crash_la_CPPFLAGS = $(shim_libbbxshim_la_CPPFLAGS) -DBBX_CRASHPOINTS
shim_libbbxshim_crash_la_CFLAGS = $(shim_libbbxshim_la_CFLAGS)
shim_libbbxshim_crash_la_LDFLAGS = $(shim_libbbxshim_la_LDFLAGS) -rpath $(abs_builddir)/shim
shim_libbbxshim_crash_la_LIBADD = $(shim_libbbxshim_la_LIBADD)
EXTRA_shim_libbbxshim_crash_la_DEPENDENCIES = shim/hot.ld
