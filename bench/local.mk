# Benchmarks (not part of make check: timings never gate tests).  bench/micro is built
# only by `make bench` (EXTRA_PROGRAMS).
EXTRA_PROGRAMS = bench/micro
bench_micro_SOURCES = bench/micro.c
CLEANFILES += bench/micro$(EXEEXT)
EXTRA_DIST += bench/lib.sh bench/compile.sh bench/spawn.sh bench/churn.sh bench/edit.sh \
	bench/npm.sh bench/micro.sh bench/scale.sh bench/transaction.sh bench/more.sh \
	bench/seal.sh bench/sealtime.c bench/sealtail.sh bench/count.sh
# The quick set (1 round each, small sizes); the full set: see README "Performance".
BENCH_ENV = BBX_BUILDDIR='$(abs_top_builddir)' BENCH_ROUNDS=$${BENCH_ROUNDS:-1}
bench: all bench/micro$(EXEEXT)
	$(BENCH_ENV) $(BASH) $(srcdir)/bench/micro.sh
	$(BENCH_ENV) $(BASH) $(srcdir)/bench/spawn.sh
	$(BENCH_ENV) $(BASH) $(srcdir)/bench/churn.sh
	$(BENCH_ENV) $(BASH) $(srcdir)/bench/edit.sh
	$(BENCH_ENV) $(BASH) $(srcdir)/bench/npm.sh
	$(BENCH_ENV) BENCH_SCALE_SIZES='1000 10000' BENCH_TRUNC_MB=100 $(BASH) $(srcdir)/bench/scale.sh
	$(BENCH_ENV) BENCH_TX_MB=100 $(BASH) $(srcdir)/bench/transaction.sh 3
	$(BENCH_ENV) BENCH_BUILD_PROJECTS=bbx $(BASH) $(srcdir)/bench/compile.sh
.PHONY: bench
