# tests/autodiff/local.mk: gradient checks, optimizer updates, autodiff on the examples.
AD_TB = tests/autodiff/tb.c tests/autodiff/tb.h tests/build.c tests/build.h
check_PROGRAMS += tests/autodiff/gradcheck tests/autodiff/step tests/autodiff/examples
tests_autodiff_gradcheck_SOURCES = tests/autodiff/gradcheck.c $(AD_TB)
tests_autodiff_gradcheck_LDADD = $(MTC_LIBS) -lm
tests_autodiff_step_SOURCES = tests/autodiff/step.c $(AD_TB)
tests_autodiff_step_LDADD = $(MTC_LIBS) -lm
tests_autodiff_examples_SOURCES = tests/autodiff/examples.c $(AD_TB)
tests_autodiff_examples_LDADD = $(MTC_LIBS) -lm
TESTS += tests/autodiff/gradcheck tests/autodiff/step tests/autodiff/examples
# PyTorch cross-check of the examples' gradients: run by hand (docs/autodiff.md).
EXTRA_DIST += tests/autodiff/torch_grads.py
