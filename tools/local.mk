# The tools: bbx (dispatcher), bbx-run, bbx-undo, bbx-log.
bin_PROGRAMS += tools/bbx tools/bbx-run tools/bbx-undo tools/bbx-log
noinst_LTLIBRARIES += tools/libbbxtool.la
tools_libbbxtool_la_SOURCES = tools/common.c tools/common.h tools/sandbox.c tools/sandbox.h
tools_libbbxtool_la_LIBADD = journal/libbbxundo.la policy/libbbxpol.la $(SECCOMP_LIBS)
TOOL_LIBS = tools/libbbxtool.la
tools_bbx_SOURCES = tools/bbx.c
tools_bbx_run_SOURCES = tools/bbx-run.c
tools_bbx_run_CPPFLAGS = $(AM_CPPFLAGS) -DBBX_PKGLIBDIR='"$(pkglibdir)"'
tools_bbx_run_LDADD = $(TOOL_LIBS)
tools_bbx_undo_SOURCES = tools/bbx-undo.c
tools_bbx_undo_LDADD = $(TOOL_LIBS)
tools_bbx_log_SOURCES = tools/bbx-log.c
tools_bbx_log_LDADD = $(TOOL_LIBS)
# bbx-policy: check, explain and compile a policy (bbx-policy(1), bbx-policy(5)).
bin_PROGRAMS += tools/bbx-policy
tools_bbx_policy_SOURCES = tools/bbx-policy.c
tools_bbx_policy_LDADD = policy/libbbxpolc.la $(TOOL_LIBS)
tools_bbx_run_LDADD += policy/libbbxpolc.la
