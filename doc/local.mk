# doc: the man pages (installed) and the normative journal format (distributed).
dist_man_MANS += \
	doc/bbx.1 \
	doc/bbx-run.1 \
	doc/bbx-undo.1 \
	doc/bbx-log.1 \
	doc/bbx-policy.1 \
	doc/bbx-policy.5 \
	doc/bbx-diff.1 \
	doc/libbbxshim.7 \
	$(NULL)
EXTRA_DIST += doc/journal-format.md doc/performance.md
