# libbbxpol: the compiled policy's matcher (policy.h), allocation-free: linked into the
# shim and the tools.
noinst_LTLIBRARIES += policy/libbbxpol.la
policy_libbbxpol_la_SOURCES = policy/policy.h policy/match.c policy/match_net.c
policy_libbbxpol_la_CFLAGS = $(AM_CFLAGS) -fPIC -ffunction-sections -fdata-sections
