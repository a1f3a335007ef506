/* mtc.h: the installed interface of every module mtc builds: its description and error codes. */
#ifndef MTC_MTC_H
#define MTC_MTC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever struct mtc_module changes; tools check it before using the rest. */
#define MTC_ABI 3

/* Every entry point returns 0 or one of these; the instance's error() says why. */
enum mtc_status {
	MTC_OK = 0,
	MTC_EINVAL = 1,     /* a NULL or otherwise bad argument */
	MTC_ENOMEM = 2,     /* host or device memory could not be allocated */
	MTC_ENODEV = 3,     /* the device is missing or smaller than the plan */
	MTC_ERANGE = 4,     /* data out of range: a label or an embedding id */
	MTC_ECHECK = 5,     /* check mode (MTC_CHECK=1) found two live tensors overlapping */
	MTC_ENOTRAIN = 6,   /* step() on a model without `train` */
	MTC_ECOMM = 8,      /* data-parallel: a collective failed or timed out, or another rank's
	                     * step failed */
};

enum mtc_dtype { MTC_F32 = 0, MTC_I32 = 1 };

/* One tensor of the module's interface: an input, an output, a param, optimizer state or a
 * buffer. */
struct mtc_tensor_info {
	const char *name;         /* "x", "w.3", "mom.w.3" */
	int dtype;                /* enum mtc_dtype */
	int rank;
	const int64_t *shape;     /* rank entries */
	int64_t numel;
	int64_t bytes;
	int64_t range;            /* i32 inputs: the values the model accepts are [0, range); 0: any */
};

/* Measured by the runtime while the instance ran. */
struct mtc_stats {
	int64_t peak_bytes;       /* high-water mark of live device bytes (tensors born, not dead) */
	int64_t device_bytes;     /* device memory the instance holds: persistent zone + arena */
	int64_t ddr_bytes;        /* the DDR zone for swapped tensors */
	int64_t steps;            /* step() calls that succeeded */
	int check;                /* check mode was on */
	/* ABI 3: a data-parallel module's rank in its job (0 of 1 for any other module) and its
	 * collectives over all steps: bytes reduced, seconds from each one's start to the host
	 * seeing it complete, and seconds the host waited for them (what was not hidden) */
	int rank, nranks;
	int64_t comm_bytes;
	double comm_s, comm_wait_s;
};

/* A module as tools see it through dlopen: mtc_module() returns it. Buffers are passed in
 * arrays ordered as the tensor lists: inputs[i] has inputs[i]'s dtype and shape. */
struct mtc_module {
	int abi;                  /* MTC_ABI */
	const char *name;         /* the model's name */
	const char *target;       /* "mt3000" */
	const char *solver;       /* how the plan was chosen: "none", "ilp", ... */
	int ninputs, noutputs, nparams, nstate;
	const struct mtc_tensor_info *inputs, *outputs, *params, *state;
	int trains;               /* step() exists */
	int64_t plan_bytes;       /* the plan's device bytes: persistent zone + arena */
	int64_t arena_bytes;      /* the planned arena of the step (of forward without training) */
	int64_t peak_bytes;       /* the planned peak of live bytes (<= plan_bytes) */
	int64_t param_bytes;      /* params alone */
	int64_t state_bytes;      /* optimizer state */
	int64_t budget_bytes;     /* the budget the plan was made for; 0: none */
	uint64_t seed;            /* of the params' initial values (mtc --seed) */

	void *(*create)(void);                                    /* NULL: mtc_last_error() */
	int (*step)(void *, const void *const *inputs, float *loss);
	int (*forward)(void *, const void *const *inputs, void *const *outputs);
	void (*destroy)(void *);
	const char *(*error)(const void *);                      /* NULL instance: create's error */
	/* Read or write param i (0 <= i < nparams), state i - nparams (i < nparams + nstate) or
	 * buffer i - nparams - nstate. */
	int (*get)(void *, int i, void *dst);
	int (*set)(void *, int i, const void *src);
	int (*stats)(const void *, struct mtc_stats *);
	/* Buffers (abi 2): module state that is not trained but updated by step() (batch norm's
	 * running statistics, dropout's step counter); forward() reads them. Saved and loaded
	 * with the params. */
	int nbuffers;
	const struct mtc_tensor_info *buffers;
	int64_t buffer_bytes;
	/* ABI 3: data parallelism (mtc --data-parallel). create() joins MPI_COMM_WORLD (MPI
	 * initialized if the program did not); create_comm joins the communicator *mpi_comm (an
	 * MPI_Comm the program made). NULL for other modules. */
	int data_parallel;
	void *(*create_comm)(const void *mpi_comm);
};

/* Every module exports these two. With two modules linked into one program (not through
 * dlopen), the first one's definitions win: use MODEL_error(NULL) there instead. */
const struct mtc_module *mtc_module(void);
const char *mtc_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
