# demo: `make demo` lets a scripted agent wreck a sample project under bbx-run, undoes
# it with bbx-undo and proves the tree is byte-identical again (demo/run-demo.sh).
demo: all
	BBX_SRCDIR='$(abs_top_srcdir)' BBX_BUILDDIR='$(abs_top_builddir)' \
	PYTHON3='$(PYTHON3)' $(BASH) $(srcdir)/demo/run-demo.sh
.PHONY: demo

# Every file of the demo, listed one by one (automake needs them spelled out).
EXTRA_DIST += \
	demo/run-demo.sh \
	demo/agent-bad-day.sh \
	demo/diffsnap.py \
	demo/workspace/README.md \
	demo/workspace/config/settings.ini \
	demo/workspace/data/readings.csv \
	demo/workspace/logs/events.txt \
	demo/workspace/scripts/fetch.sh \
	demo/workspace/scripts/plot.py \
	demo/workspace/src/main.c \
	demo/workspace/src/station.c \
	demo/workspace/src/station.h \
	demo/workspace/docs/index.md \
	demo/workspace/docs/api/readings.md \
	demo/workspace/docs/api/station.md \
	demo/workspace/docs/api/units.md \
	demo/workspace/docs/api/v1/endpoints.md \
	demo/workspace/docs/api/v1/errors.md \
	demo/workspace/docs/api/v2/endpoints.md \
	demo/workspace/docs/api/v2/errors.md \
	demo/workspace/docs/api/v2/migration.md \
	demo/workspace/docs/design/architecture.md \
	demo/workspace/docs/design/storage.md \
	demo/workspace/docs/design/decisions/0001-csv.md \
	demo/workspace/docs/design/decisions/0002-units.md \
	demo/workspace/docs/design/decisions/0003-sampling.md \
	demo/workspace/docs/guide/config.md \
	demo/workspace/docs/guide/faq.md \
	demo/workspace/docs/guide/install.md \
	demo/workspace/docs/guide/usage.md \
	demo/workspace/docs/guide/advanced/calibration.md \
	demo/workspace/docs/guide/advanced/tuning.md \
	demo/workspace/docs/images/diagram.txt \
	$(NULL)
