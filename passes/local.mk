# passes/local.mk: autodiff, simplification, analyses, the memory planner.
libmtc_a_SOURCES += passes/passes.h passes/grad.c passes/cost.c passes/target.c \
	passes/liveness.c passes/deps.c passes/sched.c passes/layout.c passes/dump.c passes/svg.c
libmtc_a_SOURCES += passes/copy.c passes/fork.c passes/autodiff.c passes/micro.c passes/slices.c passes/simplify.c passes/dp.c
# After layout: the Lowered every target reads.
libmtc_a_SOURCES += passes/lower.h passes/lower.c passes/fault.c
libmtc_a_SOURCES += passes/plan.h passes/plan.c passes/remat.c passes/home.c passes/place.c passes/chen.c passes/tso.c passes/chain.c passes/segments.c \
	passes/ilp.c passes/ilpblk.c passes/relax.c passes/planner.c
