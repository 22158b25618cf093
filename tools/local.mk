# The tools: bbx (dispatcher), bbx-run, bbx-undo, bbx-log.
bin_PROGRAMS += tools/bbx tools/bbx-run tools/bbx-undo tools/bbx-log tools/bbx-diff
noinst_LTLIBRARIES += tools/libbbxtool.la
tools_libbbxtool_la_SOURCES = tools/common.c tools/common.h tools/sandbox.c tools/sandbox.h \
	tools/straggle.c tools/straggle.h \
	tools/verify.c tools/verify.h
tools_libbbxtool_la_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS)
tools_libbbxtool_la_LIBADD = journal/libbbxundo.la policy/libbbxpol.la
# libtool drops an archive named by path from a convenience library's dependencies:
# the static libseccomp and libinih (configure.ac, BBX_STATIC_DEP) go after the
# libraries that call them, in each program's LDADD.
TOOL_LIBS = tools/libbbxtool.la $(SECCOMP_TOOL_LIBS)
POLC_LIBS = policy/libbbxpolc.la $(INIH_TOOL_LIBS)
tools_bbx_SOURCES = tools/bbx.c
tools_bbx_run_SOURCES = tools/bbx-run.c
tools_bbx_run_CPPFLAGS = $(AM_CPPFLAGS) -DBBX_PKGLIBDIR='"$(pkglibdir)"'
tools_bbx_run_LDADD = $(TOOL_LIBS)
tools_bbx_undo_SOURCES = tools/bbx-undo.c
tools_bbx_undo_LDADD = $(TOOL_LIBS)
tools_bbx_log_SOURCES = tools/bbx-log.c tools/log.h tools/log-json.c tools/log-tree.c
tools_bbx_log_LDADD = $(TOOL_LIBS)
# bbx-policy: check, explain and compile a policy (bbx-policy(1), bbx-policy(5)).
bin_PROGRAMS += tools/bbx-policy
tools_bbx_policy_SOURCES = tools/bbx-policy.c
tools_bbx_policy_LDADD = $(POLC_LIBS) $(TOOL_LIBS)
tools_bbx_run_LDADD += $(POLC_LIBS)
tools_bbx_diff_SOURCES = tools/bbx-diff.c
tools_bbx_diff_LDADD = $(TOOL_LIBS)
