/* host.c: the CUDA module's host code as LLVM IR: schedules, embedded images, typed API.
 *
 * needs: a prepared CuMod (plan, kernels with their launches, PTX and maybe a cubin, manifest).
 * fills: an LLVM module with the images and the manifest as constants (runtime/mtc/mtc-cuda.h),
 *        one schedule function per IR function (every op a runtime call, every return code
 *        checked), the typed API MODEL_create/step/forward/destroy/error and mtc_module();
 *        printed as text and/or compiled to a PIC object for the host. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "cuda.h"
#include "mtc/mtc-cuda.h"

typedef struct Fn {
	LLVMTypeRef ty;
	LLVMValueRef fn;
} Fn;

typedef struct G {
	const CuMod *c;
	LLVMContextRef cx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMTypeRef i8, i32, i64, f32, ptr, vd;
	Fn base, launch, gemm, swap, wait, record, born, dead, copyout, hupd;
	/* inside a schedule */
	LLVMValueRef rt, vbase, args, dy, failphi;
	int nargs, ndy;            /* the sizes of args and dy */
	LLVMBasicBlockRef fail;
} G;

/* Declare (or define later) a function with a given signature. */
static Fn
fn(G *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, int n, int hidden)
{
	Fn f;
	f.ty = LLVMFunctionType(ret, params, (unsigned)n, 0);
	if ((f.fn = LLVMGetNamedFunction(g->mod, name)))
		return f;
	f.fn = LLVMAddFunction(g->mod, name, f.ty);
	if (hidden)
		LLVMSetVisibility(f.fn, LLVMHiddenVisibility);
	return f;
}

static LLVMValueRef
call(G *g, Fn f, LLVMValueRef *a, int n)
{
	return LLVMBuildCall2(g->b, f.ty, f.fn, a, (unsigned)n, "");
}

static LLVMValueRef C32(G *g, int64_t v) { return LLVMConstInt(g->i32, (unsigned long long)v, 1); }
static LLVMValueRef C64(G *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

/* A constant global of bytes (hidden: each module keeps its own). */
static void
bytes(G *g, const char *name, const char *data, size_t n, int nul)
{
	LLVMValueRef s = LLVMConstStringInContext(g->cx, data, (unsigned)n, !nul);
	LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(s), name);

	LLVMSetInitializer(gv, s);
	LLVMSetGlobalConstant(gv, 1);
	LLVMSetVisibility(gv, LLVMHiddenVisibility);
	LLVMSetAlignment(gv, 16);
}

static void
scalar(G *g, const char *name, LLVMValueRef v)
{
	LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(v), name);
	LLVMSetInitializer(gv, v);
	LLVMSetGlobalConstant(gv, 1);
	LLVMSetVisibility(gv, LLVMHiddenVisibility);
}

static void
runtime_decls(G *g)
{
	LLVMTypeRef p = g->ptr, i32 = g->i32, i64 = g->i64;
	LLVMTypeRef tl[] = { p, i32, i32, i32, i32, i32, i32, i32, p, i32 };
	LLVMTypeRef tg[] = { p, i32, i32, i32, i32, i32, i32, i32, p, i32, i32, i64, i64, i64, i64,
	                     i64, i64, i64 };
	LLVMTypeRef ts[] = { p, i32, i64, i64, i64, i32, i32, i32 };
	LLVMTypeRef tw[] = { p, i32 };
	LLVMTypeRef tb[] = { p, i64, i64, p, i32 };
	LLVMTypeRef th[] = { p, i32, i32, i32, i64, p, i32, i32 };

	g->base = fn(g, "mtc_cu_base", i64, &p, 1, 1);
	g->launch = fn(g, "mtc_cu_launch", i32, tl, 10, 1);
	g->gemm = fn(g, "mtc_cu_gemm", i32, tg, 18, 1);
	g->swap = fn(g, "mtc_cu_swap", i32, ts, 8, 1);
	g->wait = fn(g, "mtc_cu_wait", i32, tw, 2, 1);
	g->record = fn(g, "mtc_cu_record", i32, tw, 2, 1);
	g->born = fn(g, "mtc_cu_born", i32, tb, 5, 1);
	g->dead = fn(g, "mtc_cu_dead", i32, tb, 5, 1);
	{
		LLVMTypeRef tc[] = { p, i32, i64, i64, i64 };
		g->copyout = fn(g, "mtc_cu_copy_out", i32, tc, 5, 1);
	}
	g->hupd = fn(g, "mtc_cu_host_update", i32, th, 8, 1);
}

/* Branch to the failure exit when rc is nonzero. */
static void
check(G *g, LLVMValueRef rc)
{
	LLVMValueRef f = LLVMGetBasicBlockParent(LLVMGetInsertBlock(g->b));
	LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->cx, f, "ok");
	LLVMBasicBlockRef here = LLVMGetInsertBlock(g->b);
	LLVMValueRef bad = LLVMBuildICmp(g->b, LLVMIntNE, rc, C32(g, 0), "");

	LLVMBuildCondBr(g->b, bad, g->fail, ok);
	LLVMAddIncoming(g->failphi, &rc, &here, 1);
	LLVMPositionBuilderAtEnd(g->b, ok);
}

/* i8* for the runtime's pointer parameters (a no-op under opaque pointers) */
static LLVMValueRef
asptr(G *g, LLVMValueRef v)
{
	return LLVMBuildBitCast(g->b, v, g->ptr, "");
}

static LLVMValueRef
slot(G *g, LLVMValueRef arr, int n, int i)
{
	LLVMValueRef idx[2] = { C64(g, 0), C64(g, i) };
	return LLVMBuildInBoundsGEP2(g->b, LLVMArrayType(g->i64, (unsigned)n), arr, idx, 2, "");
}

/* args[i] = device address of value v */
static void
arg(G *g, const CuFn *p, int i, int v)
{
	LLVMValueRef a = LLVMBuildAdd(g->b, g->vbase, C64(g, p->off[v]), "");
	LLVMBuildStore(g->b, a, slot(g, g->args, g->nargs, i));
}

/* The (off, bytes) pairs of the device values op i reads for the last time; count returned. */
static int
dying(G *g, const CuFn *p, int i)
{
	const Func *f = p->f;
	int n = 0;

	for (int a = 0; a < f->nval; a++) {
		const Value *x = &f->val[a];
		if (p->last[a] != i || x->decl >= 0 || x->host || x->def < 0)
			continue;
		LLVMBuildStore(g->b, C64(g, p->off[a]), slot(g, g->dy, g->ndy, 2 * n));
		LLVMBuildStore(g->b, C64(g, type_bytes(&x->ty)), slot(g, g->dy, g->ndy, 2 * n + 1));
		n++;
	}
	return n;
}

static void
op_code(G *g, const CuFn *p, const Launch *l, int i)
{
	const Func *f = p->f;
	const Op *o = &f->op[i];
	int r = o->res, ndy, dev_res = r >= 0 && !f->val[r].host;
	int64_t rb = dev_res ? type_bytes(&f->val[r].ty) : 0, roff = dev_res ? p->off[r] : 0;
	LLVMValueRef dyp = asptr(g, slot(g, g->dy, g->ndy, 0));
	LLVMValueRef argp = asptr(g, slot(g, g->args, g->nargs, 0));
	LLVMValueRef bd[5];

	ndy = dying(g, p, i);
	bd[0] = g->rt, bd[1] = C64(g, roff), bd[2] = C64(g, rb), bd[3] = dyp, bd[4] = C32(g, ndy);
	check(g, call(g, g->born, bd, 5));
	for (int s = 0; s < 2; s++)
		if (p->xwait[2 * i + s] >= 0) {
			/* a copy the DAG orders before this op's kernel that no IR wait covered */
			LLVMValueRef a[2] = { g->rt, C32(g, p->ev[f->op[p->xwait[2 * i + s]].res]) };
			check(g, call(g, g->wait, a, 2));
		}
	if (opinfo[o->kind].flags & F_COPY) {
		/* on the copy stream, after the compute event p->after[i] (-1: none needed);
		 * swap_home copies its second operand into its decl's home */
		int out = o->kind != OP_SWAPIN, src = o->args[o->kind == OP_SWAPHOME];
		LLVMValueRef a[8] = { g->rt, C32(g, out), C64(g, out ? p->off[src] : p->off[r]),
		                      C64(g, out ? p->off[r] : p->off[src]), C64(g, rb ? rb : type_bytes(&f->val[r].ty)),
		                      C32(g, p->ev[r]), C32(g, p->after[i]),
		                      C32(g, p->cwait[i] >= 0 ? p->ev[f->op[p->cwait[i]].res] : -1) };
		check(g, call(g, g->swap, a, 8));
	} else if (p->hu[i] >= 0) {
		/* an update on the host: a host function on its own stream, after the copies
		 * sync.c names (the gradient's to the host, a fetch of what it writes); its
		 * operands' offsets in pinned host memory, the hyperparameters' index among the
		 * manifest's (the runtime keeps their settings) */
		LLVMValueRef a[8];
		for (int k = 0; k < o->nargs; k++) {
			int d = f->val[o->args[k]].decl;
			uint64_t off = (uint64_t)p->off[o->args[k]];
			if (d >= 0 && f->mod->decl[d].role == R_HYPER) {
				off = MTC_CU_HYPER;
				for (int e = 0; e < d; e++)
					off += f->mod->decl[e].role == R_HYPER;
			}
			LLVMBuildStore(g->b, LLVMConstInt(g->i64, off, 0), slot(g, g->args, g->nargs, k));
		}
		a[0] = g->rt;
		a[1] = C32(g, o->kind == OP_SGD ? MTC_CU_SGD : o->kind == OP_SGDM ? MTC_CU_SGDM :
		              o->kind == OP_ADAMW ? MTC_CU_ADAMW : MTC_CU_ADAM);
		a[2] = C32(g, p->hout[i] >= 0 ? p->ev[f->op[p->hout[i]].res] : -1);
		a[3] = C32(g, p->cwait[i] >= 0 ? p->ev[f->op[p->cwait[i]].res] : -1);
		a[4] = C64(g, shape_numel(&f->val[o->args[0]].ty.sh)), a[5] = argp, a[6] = C32(g, o->nargs);
		a[7] = C32(g, p->hu[i]);
		check(g, call(g, g->hupd, a, 8));
	} else if (o->kind == OP_WAIT) {
		LLVMValueRef a[2] = { g->rt, C32(g, p->ev[o->args[0]]) };
		check(g, call(g, g->wait, a, 2));
	} else if (o->kind == OP_COPYOUT) {
		LLVMValueRef a[5] = { g->rt, C32(g, o->ia[0]), C64(g, 4 * o->ia[1]), C64(g, p->off[o->args[0]]),
		                      C64(g, type_bytes(&f->val[o->args[0]].ty)) };
		check(g, call(g, g->copyout, a, 5));
	} else if (l->fn >= 0 && !(o->kind == OP_RESHAPE && p->off[r] == p->off[o->args[0]])) {
		int na = 0;
		if (l->argv) {
			for (int a = 0; a < l->nargv; a++)
				arg(g, p, na++, l->argv[a]);
		} else {
			if (r >= 0)
				arg(g, p, na++, r);
			for (int a = 0; a < o->nargs; a++)
				arg(g, p, na++, o->args[a]);
		}
		if (o->kind == OP_MATMUL && l->gemm) {
			LLVMValueRef a[18] = { g->rt, C32(g, l->fn), C32(g, l->grid[0]), C32(g, l->grid[1]),
			                       C32(g, l->grid[2]), C32(g, l->block[0]), C32(g, l->block[1]),
			                       C32(g, l->block[2]), argp, C32(g, l->ta), C32(g, l->tb),
			                       C64(g, l->m), C64(g, l->n), C64(g, l->k), C64(g, l->batch),
			                       C64(g, l->sa), C64(g, l->sb), C64(g, l->sc) };
			check(g, call(g, g->gemm, a, 18));
		} else {
			LLVMValueRef a[10] = { g->rt, C32(g, l->fn), C32(g, l->grid[0]), C32(g, l->grid[1]),
			                       C32(g, l->grid[2]), C32(g, l->block[0]), C32(g, l->block[1]),
			                       C32(g, l->block[2]), argp, C32(g, na) };
			check(g, call(g, g->launch, a, 10));
		}
	}
	/* Inside a fused group, before its last op, the group's kernel (launched at its first
	 * op) has already written the later members' results, which may lie in the bytes of
	 * values dying here: bytes -1 tells dead() to count them dead but not poison them. */
	if (p->grp && p->grp[i] >= 0 && i + 1 < p->gend[p->grp[i]])
		bd[2] = C64(g, -1);
	check(g, call(g, g->dead, bd, 5));
	if (p->rec[i] >= 0) {
		/* after dead(): a copy into these bytes must also follow check mode's poisoning */
		LLVMValueRef a[2] = { g->rt, C32(g, p->rec[i]) };
		check(g, call(g, g->record, a, 2));
	}
}

/* int mtc_cu_sched_NAME(mtc_cu *rt): every op in order; the first failure's code returned. */
static void
sched_fn(G *g, const char *name, const CuFn *p, const Launch *ls)
{
	Fn s = fn(g, name, g->i32, &g->ptr, 1, 1);
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->cx, s.fn, "entry");
	LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(g->cx, s.fn, "fail");

	LLVMPositionBuilderAtEnd(g->b, fail);
	g->failphi = LLVMBuildPhi(g->b, g->i32, "rc");
	LLVMBuildRet(g->b, g->failphi);
	g->fail = fail;
	LLVMPositionBuilderAtEnd(g->b, entry);
	g->rt = LLVMGetParam(s.fn, 0);
	/* one argument array and one list of dying values, as large as the largest op needs */
	g->nargs = g->ndy = 2;
	if (p && p->f) {
		int *ndie = xcalloc(p->f->nop + 1, sizeof *ndie);
		for (int v = 0; v < p->f->nval; v++)
			if (p->last[v] >= 0 && p->last[v] < p->f->nop)
				ndie[p->last[v]]++;
		for (int i = 0; i < p->f->nop; i++) {
			if (p->f->op[i].nargs + 1 > g->nargs)
				g->nargs = p->f->op[i].nargs + 1;
			if (ls[i].nargv > g->nargs)
				g->nargs = ls[i].nargv;
			if (2 * ndie[i] > g->ndy)
				g->ndy = 2 * ndie[i];
		}
		free(ndie);
	}
	g->args = LLVMBuildAlloca(g->b, LLVMArrayType(g->i64, (unsigned)g->nargs), "args");
	g->dy = LLVMBuildAlloca(g->b, LLVMArrayType(g->i64, (unsigned)g->ndy), "dying");
	g->vbase = call(g, g->base, &g->rt, 1);
	if (p && p->f)
		for (int i = 0; i < p->f->nop; i++)
			op_code(g, p, &ls[i], i);
	LLVMBuildRet(g->b, C32(g, p && p->f ? 0 : MTC_ENOTRAIN));
}

/* A thunk: NAME(params...) { return TARGET(params...); } */
static void
thunk(G *g, const char *name, const char *target, LLVMTypeRef ret, LLVMTypeRef *ps, int n)
{
	Fn t = fn(g, target, ret, ps, n, 1), f = fn(g, name, ret, ps, n, 0);
	LLVMValueRef a[8];
	LLVMValueRef r;

	LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->cx, f.fn, "entry"));
	for (int i = 0; i < n; i++)
		a[i] = LLVMGetParam(f.fn, (unsigned)i);
	r = call(g, t, a, n);
	if (ret == g->vd)
		LLVMBuildRetVoid(g->b);
	else
		LLVMBuildRet(g->b, r);
}

/* int MODEL_forward(m, in..., out...) (kind 0) / MODEL_step(m, in..., loss) (1) /
 * MODEL_step_out(m, in..., loss, out...) (2): pack the pointers into arrays in manifest order
 * (inputs the function does not read stay NULL) and call the generic entry. */
static void
typed(G *g, int kind)
{
	static const char *const api_name[] = { "forward", "step", "step_out" };
	static const char *const rt_name[] = { "mtc_cu_forward", "mtc_cu_step", "mtc_cu_step_out" };
	const CuMod *c = g->c;
	const Module *m = c->m;
	const Func *f = kind ? c->fn[1].f : m->fwd;
	int nin = 0, np = 1, nout = kind == 1 ? 0 : m->fwd->nout, nloss = kind != 0, pi = 1, ii = 0;
	LLVMTypeRef ps[256], tp[4] = { g->ptr, g->ptr, g->ptr, g->ptr }, arrt, oarrt;
	LLVMValueRef arr, oarr, a[4];
	char name[256];
	Fn t, api;
	int na = 0;

	ps[0] = g->ptr;
	for (int d = 0; d < m->ndecl; d++)
		if (m->decl[d].role == R_INPUT) {
			nin++;
			if (cuda_reads(f, d) && np < 128)
				ps[np++] = g->ptr;
		}
	for (int k = 0; k < nloss + nout && np < 256; k++)
		ps[np++] = g->ptr;
	snprintf(name, sizeof name, "%s_%s", c->id, api_name[kind]);
	api = fn(g, name, g->i32, ps, np, 0);
	t = fn(g, rt_name[kind], g->i32, tp, 3 + (kind == 2), 1);
	LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->cx, api.fn, "entry"));
	arrt = LLVMArrayType(g->ptr, (unsigned)(nin ? nin : 1));
	oarrt = LLVMArrayType(g->ptr, (unsigned)(nout ? nout : 1));
	arr = LLVMBuildAlloca(g->b, arrt, "in");
	LLVMBuildStore(g->b, LLVMConstNull(arrt), arr);
	for (int d = 0; d < m->ndecl; d++) {
		if (m->decl[d].role != R_INPUT)
			continue;
		if (cuda_reads(f, d) && pi < np - nout - nloss) {
			LLVMValueRef idx[2] = { C64(g, 0), C64(g, ii) };
			LLVMBuildStore(g->b, LLVMGetParam(api.fn, (unsigned)pi++),
			               LLVMBuildInBoundsGEP2(g->b, arrt, arr, idx, 2, ""));
		}
		ii++;
	}
	a[na++] = LLVMGetParam(api.fn, 0);
	a[na++] = asptr(g, arr);
	if (nloss)
		a[na++] = LLVMGetParam(api.fn, (unsigned)(np - nout - 1));
	if (kind != 1) {
		oarr = LLVMBuildAlloca(g->b, oarrt, "out");
		for (int k = 0; k < nout; k++) {
			LLVMValueRef idx[2] = { C64(g, 0), C64(g, k) };
			LLVMBuildStore(g->b, LLVMGetParam(api.fn, (unsigned)(np - nout + k)),
			               LLVMBuildInBoundsGEP2(g->b, oarrt, oarr, idx, 2, ""));
		}
		a[na++] = asptr(g, oarr);
	}
	LLVMBuildRet(g->b, call(g, t, a, na));
}

/* int MODEL_set_NAME(m, float v) { return mtc_cu_set_hyper(m, k, v); } for hyperparameter k. */
static void
setters(G *g)
{
	const Module *m = g->c->m;
	LLVMTypeRef ps[2] = { g->ptr, g->f32 }, ts[3] = { g->ptr, g->i32, g->f32 };
	Fn t = fn(g, "mtc_cu_set_hyper", g->i32, ts, 3, 1);

	for (int d = 0, k = 0; d < m->ndecl; d++) {
		char nm[300], name[400];
		Fn api;
		LLVMValueRef a[3];
		if (m->decl[d].role != R_HYPER)
			continue;
		c_name(hyper_name(m->decl[d].name), nm, sizeof nm);
		snprintf(name, sizeof name, "%s_set_%s", g->c->id, nm);
		api = fn(g, name, g->i32, ps, 2, 0);
		LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->cx, api.fn, "entry"));
		a[0] = LLVMGetParam(api.fn, 0);
		a[1] = C32(g, k++);
		a[2] = LLVMGetParam(api.fn, 1);
		LLVMBuildRet(g->b, call(g, t, a, 3));
	}
}

static void
build(G *g)
{
	const CuMod *c = g->c;
	char name[256];
	LLVMTypeRef p = g->ptr;

	bytes(g, "mtc_cu_manifest", c->manifest, strlen(c->manifest), 1);
	bytes(g, "mtc_cu_ptx", c->ptx, c->ptxlen, 1);
	bytes(g, "mtc_cu_cubin", c->cubin ? c->cubin : "", c->cubin ? c->cubinlen : 0, 1);
	bytes(g, "mtc_cu_data", c->data ? c->data : "", c->ndata, 0);
	scalar(g, "mtc_cu_cubin_len", C64(g, c->cubin ? (int64_t)c->cubinlen : 0));
	scalar(g, "mtc_cu_cubin_arch", C32(g, c->cubin ? c->cubin_arch : 0));
	runtime_decls(g);
	sched_fn(g, "mtc_cu_sched_forward", &c->fn[0], c->prog->launch[0]);
	sched_fn(g, "mtc_cu_sched_step", c->fn[1].f ? &c->fn[1] : NULL, c->prog->launch[1]);

	thunk(g, "mtc_module", "mtc_cu_module", p, NULL, 0);
	thunk(g, "mtc_last_error", "mtc_rt_last_error", p, NULL, 0);
	snprintf(name, sizeof name, "%s_create", c->id);
	thunk(g, name, "mtc_cu_create", p, NULL, 0);
	snprintf(name, sizeof name, "%s_destroy", c->id);
	thunk(g, name, "mtc_cu_destroy", g->vd, &p, 1);
	snprintf(name, sizeof name, "%s_error", c->id);
	thunk(g, name, "mtc_cu_error", p, &p, 1);
	if (c->fn[1].f) {
		typed(g, 1);
		typed(g, 2);
	}
	typed(g, 0);
	snprintf(name, sizeof name, "%s_save", c->id);
	thunk(g, name, "mtc_cu_save", g->i32, (LLVMTypeRef[]){ p, p }, 2);
	snprintf(name, sizeof name, "%s_load", c->id);
	thunk(g, name, "mtc_cu_load", g->i32, (LLVMTypeRef[]){ p, p }, 2);
	setters(g);
}

/* Compile to a position-independent object for the host. */
static int
emit_obj(LLVMModuleRef mod, const char *obj, int opt)
{
	char *triple = LLVMGetDefaultTargetTriple(), *msg = NULL;
	LLVMTargetRef t;
	LLVMTargetMachineRef tm;
	LLVMTargetDataRef td;
	int rc = 0;
	static const LLVMCodeGenOptLevel lv[] = { LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
	                                          LLVMCodeGenLevelDefault, LLVMCodeGenLevelAggressive };

	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
	if (LLVMGetTargetFromTriple(triple, &t, &msg)) {
		fprintf(stderr, "mtc: error: LLVM has no target for %s: %s\n", triple, msg);
		LLVMDisposeMessage(msg);
		LLVMDisposeMessage(triple);
		return 1;
	}
	tm = LLVMCreateTargetMachine(t, triple, "generic", "", lv[opt < 0 ? 0 : opt > 3 ? 3 : opt],
	                             LLVMRelocPIC, LLVMCodeModelDefault);
	td = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(mod, td);
	LLVMSetTarget(mod, triple);
	if (LLVMTargetMachineEmitToFile(tm, mod, (char *)obj, LLVMObjectFile, &msg)) {
		fprintf(stderr, "mtc: error: LLVM could not write '%s': %s\n", obj, msg);
		LLVMDisposeMessage(msg);
		rc = 1;
	}
	LLVMDisposeTargetData(td);
	LLVMDisposeTargetMachine(tm);
	LLVMDisposeMessage(triple);
	return rc;
}

int
cuda_host(const CuMod *c, FILE *ir, const char *obj)
{
	G g = { .c = c };
	char *msg = NULL;
	int rc = 0;

	g.cx = LLVMContextCreate();
	g.mod = LLVMModuleCreateWithNameInContext(c->m->name, g.cx);
	g.b = LLVMCreateBuilderInContext(g.cx);
	g.i8 = LLVMInt8TypeInContext(g.cx);
	g.i32 = LLVMInt32TypeInContext(g.cx);
	g.i64 = LLVMInt64TypeInContext(g.cx);
	g.f32 = LLVMFloatTypeInContext(g.cx);
	g.ptr = LLVMPointerType(g.i8, 0);
	g.vd = LLVMVoidTypeInContext(g.cx);
	build(&g);
	if (LLVMVerifyModule(g.mod, LLVMReturnStatusAction, &msg))
		die("the generated host code does not verify: %s", msg);
	LLVMDisposeMessage(msg);
	if (ir) {
		char *s;
		{
			char *triple = LLVMGetDefaultTargetTriple();
			LLVMSetTarget(g.mod, triple);
			LLVMDisposeMessage(triple);
		}
		s = LLVMPrintModuleToString(g.mod);
		fputs(s, ir);
		LLVMDisposeMessage(s);
	}
	if (obj)
		rc = emit_obj(g.mod, obj, c->o->opt_level);
	LLVMDisposeBuilder(g.b);
	LLVMDisposeModule(g.mod);
	LLVMContextDispose(g.cx);
	return rc;
}
