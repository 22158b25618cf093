# Test suite.  Every test speaks TAP (automake's tap-driver counts each case), so the
# summary and .ci/run's "N passed, N failed" count individual checks, not files.
TEST_EXTENSIONS = .sh
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
SH_LOG_DRIVER = $(LOG_DRIVER)
SH_LOG_COMPILER = $(BASH)
AM_TESTS_ENVIRONMENT = \
	BBX_SRCDIR='$(abs_top_srcdir)'; export BBX_SRCDIR; \
	BBX_BUILDDIR='$(abs_top_builddir)'; export BBX_BUILDDIR; \
	BBX_SHIM='$(abs_top_builddir)/shim/.libs/libbbxshim.so'; export BBX_SHIM; \
	BBX_CALLWRAP='$(abs_top_builddir)/tests/progs/callwrap'; export BBX_CALLWRAP; \
	BBX_TOOL_LIBS='$(SECCOMP_TOOL_LIBS) $(INIH_TOOL_LIBS)'; export BBX_TOOL_LIBS; \
	PATH='$(abs_top_builddir)/tools':"$$PATH"; export PATH; \
	unset BBX_JOURNAL BBX_STATE_DIR LD_PRELOAD; \
	$(NULL)

include tests/unit/local.mk
include tests/progs/local.mk
include tests/e2e/local.mk
