# tests/autodiff/local.mk: gradient checks, optimizer updates, autodiff on the examples.
# They run IR through the interpreter: enabled once branch interp is merged.
EXTRA_DIST += tests/autodiff/gradcheck.c tests/autodiff/step.c tests/autodiff/tb.c tests/autodiff/tb.h
