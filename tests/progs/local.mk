# tests/progs: small programs the end-to-end tests run under the shim.
# callwrap calls exactly one wrapped libc entry point by name (shim/wrappers.def);
# built without _FILE_OFFSET_BITS=64 and _FORTIFY_SOURCE so every name is its own symbol.
check_PROGRAMS += tests/progs/callwrap
tests_progs_callwrap_SOURCES = tests/progs/callwrap.c
tests_progs_callwrap_CPPFLAGS = $(AM_CPPFLAGS) -U_FILE_OFFSET_BITS -U_FORTIFY_SOURCE
tests_progs_callwrap_CFLAGS = $(AM_CFLAGS) -fvisibility=default
# sighandler: a mutation from a signal handler during a blocking wrapped call.
check_PROGRAMS += tests/progs/sighandler
tests_progs_sighandler_SOURCES = tests/progs/sighandler.c
# staticprog: statically linked (no PT_INTERP), for [exec] static and Landlock.
check_PROGRAMS += tests/progs/staticprog
tests_progs_staticprog_SOURCES = tests/progs/staticprog.c
tests_progs_staticprog_LDFLAGS = -all-static
# mkjournal: a journal of known records of every type, for t-log.sh.
check_PROGRAMS += tests/progs/mkjournal
tests_progs_mkjournal_SOURCES = tests/progs/mkjournal.c
tests_progs_mkjournal_LDADD = journal/libbbxjournal.la
# verify-run JDIR [json]: bbx_verify() on JDIR (t-verify.sh); exits with its result.
check_PROGRAMS += tests/progs/verify-run
tests_progs_verify_run_SOURCES = tests/progs/verify-run.c
tests_progs_verify_run_LDADD = $(TOOL_LIBS)
# connect-bench: ns per connect(2), with and without the shim (README figure)
check_PROGRAMS += tests/progs/connect-bench
tests_progs_connect_bench_SOURCES = tests/progs/connect-bench.c
# readloop stat|open N PATH: N read-only calls, for callgrind's per-call counts (t-cost.sh).
check_PROGRAMS += tests/progs/readloop
tests_progs_readloop_SOURCES = tests/progs/readloop.c
# tmpchurn DIR N: N temporary files made and removed (t-captured.sh).
check_PROGRAMS += tests/progs/tmpchurn
tests_progs_tmpchurn_SOURCES = tests/progs/tmpchurn.c
# pathcases DIR: 163 mutating calls on awkward names and the tree they leave (t-slash.sh)
check_PROGRAMS += tests/progs/pathcases
tests_progs_pathcases_SOURCES = tests/progs/pathcases.c
