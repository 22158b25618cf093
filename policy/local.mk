# libbbxpol: the compiled policy's matcher (policy.h), allocation-free: linked into the
# shim and the tools.
noinst_LTLIBRARIES += policy/libbbxpol.la
policy_libbbxpol_la_SOURCES = policy/policy.h policy/match.c policy/match_net.c
policy_libbbxpol_la_CFLAGS = $(AM_CFLAGS) -fPIC -ffunction-sections -fdata-sections

# libbbxpolc: the policy compiler (policy.ini -> blob), for the tools only: it links
# libinih, which no agent process may load.  The built-in default policy is the
# top-level policy.ini, embedded as a C string generated at build time.
noinst_LTLIBRARIES += policy/libbbxpolc.la
policy_libbbxpolc_la_SOURCES = policy/compile.c policy/compile.h policy/ini.c policy/ini.h
nodist_policy_libbbxpolc_la_SOURCES = policy/default-ini.c
policy_libbbxpolc_la_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
policy_libbbxpolc_la_LIBADD = policy/libbbxpol.la
CLEANFILES += policy/default-ini.c
policy/default-ini.c: $(top_srcdir)/policy.ini
	$(AM_V_GEN)$(MKDIR_P) policy && { \
	  echo '/* generated from policy.ini by policy/local.mk: do not edit */'; \
	  echo 'extern const char bbx_pol_default_ini[];'; \
	  echo 'const char bbx_pol_default_ini[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $(top_srcdir)/policy.ini; \
	  echo ';'; } > $@-t && mv $@-t $@
