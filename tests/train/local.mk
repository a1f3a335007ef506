# tests/train/local.mk: the training loop end to end: PyTorch twins (schedule, AdamW, SGD's
# weight decay, clipping, micro-batches), checkpoints, run-time settings and their errors.
TESTS += tests/train/twin.sh
EXTRA_DIST += tests/train/twin.sh tests/train/twin.py tests/train/twin.tdsl tests/train/drop.tdsl
clean-local: clean-local-train
clean-local-train:
	-rm -rf tests/out/train
.PHONY: clean-local-train
check_PROGRAMS += tests/train/api
tests_train_api_SOURCES = tests/train/api.c
tests_train_api_LDADD = runtime/libmtcrt.a $(BLAS_LIBS) $(LIBS)
TESTS += tests/train/state.sh
EXTRA_DIST += tests/train/state.sh
