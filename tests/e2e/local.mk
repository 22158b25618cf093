# tests/e2e
# every wrappers.def entry point, called by tests/progs/callwrap (t-entrypoints.sh)
TESTS += tests/e2e/t-entrypoints.sh
EXTRA_DIST += tests/e2e/t-entrypoints.sh
# round trips with real programs: workload under bbx-run, bbx-undo, byte-exact tree
TESTS += tests/e2e/t-rt-coreutils.sh tests/e2e/t-rt-programs.sh tests/e2e/t-rt-procs.sh \
	tests/e2e/t-undo-modes.sh tests/e2e/t-failclosed.sh
EXTRA_DIST += tests/e2e/roundtrip.sh tests/e2e/t-rt-coreutils.sh tests/e2e/t-rt-programs.sh \
	tests/e2e/t-rt-procs.sh tests/e2e/t-undo-modes.sh tests/e2e/t-failclosed.sh
# shared by every t-*.sh (t-entrypoints.sh needs them in a tarball too)
EXTRA_DIST += tests/e2e/lib.sh tests/e2e/snapshot.py
# a mutation made by a signal handler during a blocking wrapped call
TESTS += tests/e2e/t-signal.sh
EXTRA_DIST += tests/e2e/t-signal.sh
# adversarial round trips: minimal reproductions of known failures, and hard cases
TESTS += tests/e2e/t-rt-adversarial.sh
EXTRA_DIST += tests/e2e/t-rt-adversarial.sh
# LD_PRELOAD alone, the state directory and its latest link
TESTS += tests/e2e/t-preload.sh
EXTRA_DIST += tests/e2e/t-preload.sh
# policy: path, read and exec enforcement by real programs under fixture policies
TESTS += tests/e2e/t-policy.sh
TESTS += tests/e2e/t-cost.sh
# the captured set past its first segment: 280,000 temporary files (journal-format 9.2)
TESTS += tests/e2e/t-captured.sh
# the shim's memory errors in real programs, by valgrind's memcheck under bbx-run
TESTS += tests/e2e/t-memcheck.sh
EXTRA_DIST += tests/e2e/t-memcheck.sh
# a writing open of a name ending in '/' fails under bbx as it does bare
TESTS += tests/e2e/t-slash.sh
EXTRA_DIST += tests/e2e/t-slash.sh
# "> /dev/null" opened the short way, and a /dev/null that is not the null device
TESTS += tests/e2e/t-devnull.sh
EXTRA_DIST += tests/e2e/t-devnull.sh
EXTRA_DIST += tests/e2e/t-captured.sh
EXTRA_DIST += tests/e2e/t-cost.sh tests/e2e/costops.py tests/e2e/stcalls.py tests/e2e/cgcalls.py
# the shim's layout: fork-child and start-up code packed (shim/hot.ld), one data page, the
# policy's page tables inherited by fork children
TESTS += tests/e2e/t-layout.sh
EXTRA_DIST += tests/e2e/t-layout.sh tests/e2e/hotcheck.py
EXTRA_DIST += tests/e2e/t-policy.sh
# the policy compiler: malformed fixtures (one per case, exact FILE:LINE message), the
# effective policy of a fixture using every key, the blob, bbx-run's refusal, explain
TESTS += tests/e2e/t-policy-parse.sh
EXTRA_DIST += tests/e2e/t-policy-parse.sh tests/policy
# every tool's command line: --help, --version, unknown options, the dispatcher
TESTS += tests/e2e/t-cli.sh
EXTRA_DIST += tests/e2e/t-cli.sh
# the forensic tools: bbx-log (views, filters, JSON, OCSF, follow) and bbx-diff
TESTS += tests/e2e/t-log.sh tests/e2e/t-diff.sh
EXTRA_DIST += tests/e2e/t-log.sh tests/e2e/t-diff.sh
# journal integrity: checksums, hash chain, seal, objects (bbx_verify, tools/verify.c)
TESTS += tests/e2e/t-verify.sh
EXTRA_DIST += tests/e2e/t-verify.sh tests/e2e/jtool.py
# process records (PROC, EXEC env, EXIT, RESULT) and redaction of secrets
TESTS += tests/e2e/t-proc.sh
EXTRA_DIST += tests/e2e/t-proc.sh tests/e2e/jdecode.py
# policy: egress ([network]) by curl and python3 against loopback servers it starts
TESTS += tests/e2e/t-egress.sh
EXTRA_DIST += tests/e2e/t-egress.sh tests/e2e/netserve.py tests/e2e/netrec.py \
	tests/policy/net-port.ini tests/policy/net-cidr.ini tests/policy/net-host.ini \
	tests/policy/net-audit.ini
# [journal] max_preserve / over_max_preserve: refuse (EFBIG, DENY), allow (how=lost,
# bbx-undo exit 4), audit, large copies with size and duration, undo never limited
TESTS += tests/e2e/t-preserve.sh
EXTRA_DIST += tests/e2e/t-preserve.sh
# the seal of a run past one block of paths (a helper thread states half of each):
# one FINAL per path, in order, each agreeing with lstat; undo with no conflict
TESTS += tests/e2e/t-seal.sh
EXTRA_DIST += tests/e2e/t-seal.sh
# [journal] sync = off | group | always: journals verify and undo restores under each;
# strace -f -c counts the fdatasync/fsync calls
TESTS += tests/e2e/t-sync.sh
EXTRA_DIST += tests/e2e/t-sync.sh
# a run killed at points spread over every place the shim changes something, then undone
# (invariant 7; shim/libbbxshim-crash.la)
TESTS += tests/e2e/t-crash.sh
EXTRA_DIST += tests/e2e/t-crash.sh
