# tests/unit: libcheck unit tests of the journal library.  Each program prints TAP on
# stdout (srunner_set_tap "-"), which automake's tap-driver (tests/local.mk) counts case
# by case.  CK_FORK=no runs the cases in one process (for valgrind/gdb).
check_PROGRAMS += \
	tests/unit/check_record \
	tests/unit/check_reader \
	tests/unit/check_writer \
	tests/unit/check_state \
	tests/unit/check_undo \
	tests/unit/check_match \
	tests/unit/check_chain \
	tests/unit/check_redact \
	tests/unit/check_match_net \
	$(NULL)
TESTS += \
	tests/unit/check_record \
	tests/unit/check_reader \
	tests/unit/check_writer \
	tests/unit/check_state \
	tests/unit/check_undo \
	tests/unit/check_match \
	tests/unit/check_chain \
	tests/unit/check_redact \
	tests/unit/check_match_net \
	$(NULL)

tests_unit_check_record_SOURCES = tests/unit/check_record.c tests/unit/unit.h
tests_unit_check_record_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_check_record_LDADD = journal/libbbxjournal.la $(CHECK_LIBS)

tests_unit_check_reader_SOURCES = tests/unit/check_reader.c tests/unit/unit.h
tests_unit_check_reader_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_check_reader_LDADD = journal/libbbxjournal.la $(CHECK_LIBS)

tests_unit_check_writer_SOURCES = tests/unit/check_writer.c tests/unit/unit.h
tests_unit_check_writer_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_check_writer_LDADD = journal/libbbxjournal.la $(CHECK_LIBS)

tests_unit_check_state_SOURCES = tests/unit/check_state.c tests/unit/unit.h
tests_unit_check_state_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_check_state_LDADD = journal/libbbxjournal.la $(CHECK_LIBS)

tests_unit_check_undo_SOURCES = tests/unit/check_undo.c
tests_unit_check_undo_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_check_undo_LDADD = journal/libbbxundo.la $(CHECK_LIBS)

tests_unit_check_match_SOURCES = tests/unit/check_match.c tests/unit/unit.h
tests_unit_check_match_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_check_match_LDADD = policy/libbbxpol.la $(CHECK_LIBS)
# the seccomp filter of bbx-run, interpreted (tools/libbbxtool.la)
check_PROGRAMS += tests/unit/check_sandbox
TESTS += tests/unit/check_sandbox
tests_unit_check_sandbox_SOURCES = tests/unit/check_sandbox.c tests/unit/unit.h
tests_unit_check_sandbox_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_check_sandbox_LDADD = $(TOOL_LIBS) $(CHECK_LIBS)

tests_unit_check_chain_SOURCES = tests/unit/check_chain.c tests/unit/unit.h
tests_unit_check_chain_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_check_chain_LDADD = $(TOOL_LIBS) $(CHECK_LIBS)

# the policy compiler (policy/libbbxpolc.la: INI text to blob)
check_PROGRAMS += tests/unit/check_policy
TESTS += tests/unit/check_policy
tests_unit_check_policy_SOURCES = tests/unit/check_policy.c tests/unit/unit.h
tests_unit_check_policy_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_check_policy_LDADD = $(POLC_LIBS) $(CHECK_LIBS)
tests_unit_check_redact_SOURCES = tests/unit/check_redact.c tests/unit/unit.h
tests_unit_check_redact_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(XXHASH_CFLAGS)
tests_unit_check_redact_LDADD = journal/libbbxjournal.la $(CHECK_LIBS)

tests_unit_check_match_net_SOURCES = tests/unit/check_match_net.c tests/unit/unit.h
tests_unit_check_match_net_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_check_match_net_LDADD = policy/libbbxpol.la $(CHECK_LIBS)
