# Benchmarks (not part of make check: timings never gate tests).
EXTRA_DIST += bench/lib.sh bench/compile.sh bench/spawn.sh bench/churn.sh
# The quick set; the full one: bench/compile.sh 7, bench/spawn.sh 5, bench/churn.sh 5.
bench: all
	BBX_BUILDDIR='$(abs_top_builddir)' $(BASH) $(srcdir)/bench/spawn.sh 3
	BBX_BUILDDIR='$(abs_top_builddir)' $(BASH) $(srcdir)/bench/churn.sh 3
	BBX_BUILDDIR='$(abs_top_builddir)' $(BASH) $(srcdir)/bench/compile.sh 3
.PHONY: bench
