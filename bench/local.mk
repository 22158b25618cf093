# Benchmarks (not part of make check: timings never gate tests).
EXTRA_DIST += bench/compile.sh
bench: all
	BBX_BUILDDIR='$(abs_top_builddir)' $(BASH) $(srcdir)/bench/compile.sh 3
.PHONY: bench
