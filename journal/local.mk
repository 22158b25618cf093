# libbbxjournal: record format, writer, reader, shared state, capture, undo.
# noinst: linked into the shim and into the tools, never installed on its own.
noinst_LTLIBRARIES += journal/libbbxjournal.la
journal_libbbxjournal_la_SOURCES = \
	journal/record.c journal/record.h \
	journal/sys.c journal/sys.h \
	journal/state.c journal/state.h \
	journal/writer.c journal/writer.h \
	journal/reader.c journal/reader.h \
	journal/run.c journal/run.h \
	journal/capture.c journal/capture.h \
	journal/undo.c journal/undo.h \
	$(NULL)
journal_libbbxjournal_la_CFLAGS = $(AM_CFLAGS) -fPIC $(XXHASH_CFLAGS)
