# bench/peers.mk: `make bench-peers` (part of `make bench`, not of `make check`): mtc's budget
# sweep per solver against PyTorch eager and its checkpointing, into bench/results/.
EXTRA_DIST += bench/peers.mk bench/peers.py bench/torchmodels.py bench/sweep.py bench/svg.py bench/results
.PHONY: bench-peers
bench-peers: all
	MTC=$(abs_top_builddir)/mtc MTC_RUN=$(abs_top_builddir)/mtc-run top_srcdir=$(top_srcdir) \
		OUT=$(top_builddir)/bench/results /usr/bin/python3 $(top_srcdir)/bench/sweep.py
