# libbbxjournal: record format, writer, reader, shared state, capture: linked into the
# shim and the tools.  libbbxundo: replay, seal and their helpers, for the tools only
# (the shim must stay small and allocation-free).  Neither is installed on its own.
noinst_LTLIBRARIES += journal/libbbxjournal.la journal/libbbxundo.la
journal_libbbxjournal_la_SOURCES = \
	journal/record.c journal/record.h \
	journal/sys.c journal/sys.h \
	journal/state.c journal/state.h \
	journal/writer.c journal/writer.h \
	journal/reader.c journal/reader.h \
	journal/run.c journal/run.h \
	journal/capture.c journal/capture.h \
	journal/redact.c journal/redact.h \
	journal/procrec.c \
	journal/path.c journal/str.h \
	$(NULL)
journal_libbbxjournal_la_CFLAGS = $(AM_CFLAGS) -fPIC -ffunction-sections -fdata-sections $(XXHASH_CFLAGS)
journal_libbbxundo_la_SOURCES = \
	journal/undo.c journal/undo.h \
	journal/undo_ops.c journal/undo_ops.h \
	journal/seal.c \
	journal/pathmap.c journal/pathmap.h \
	$(NULL)
journal_libbbxundo_la_CFLAGS = $(AM_CFLAGS) $(XXHASH_CFLAGS)
journal_libbbxundo_la_LIBADD = journal/libbbxjournal.la
