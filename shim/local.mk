# libbbxshim.so: the LD_PRELOAD library.  Only the names in shim/wrappers.def are
# exported (-fvisibility=hidden + BBX_EXPORT).
pkglib_LTLIBRARIES += shim/libbbxshim.la
shim_libbbxshim_la_SOURCES = \
	shim/shim.h shim/wrappers.def \
	shim/init.c shim/env.c \
	shim/open.c shim/tmp.c shim/names.c shim/size.c shim/meta.c shim/exec.c \
	$(NULL)
shim_libbbxshim_la_CFLAGS = $(AM_CFLAGS) -fPIC -ffunction-sections -fdata-sections
shim_libbbxshim_la_LDFLAGS = -module -avoid-version -shared -Wl,--no-undefined -Wl,--gc-sections -Wl,-O1
shim_libbbxshim_la_LIBADD = journal/libbbxjournal.la -ldl
EXTRA_DIST += shim/wrappers.def
