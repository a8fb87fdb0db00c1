/* gx_events.h — host-side events of the shim, for host policies and tools.
 *
 * The shim (libcuda.so.1) raises an event at each interesting driver call of
 * the application; a policy subscribes a callback for the kinds it wants.
 * Nothing is done for a kind nobody subscribed to: the launch path then adds
 * one relaxed load and a predictable branch (no lock, no allocation).
 *
 * Callbacks run synchronously on the application's thread, inside the driver
 * call, with no shim lock held. They may call the driver (through the normal
 * API, e.g. cuMemPrefetchAsync or cuLaunchKernel on ev->launch.stream to
 * enqueue work before a launch); such nested calls do not raise events again
 * on that thread. "pre" events (GX_EV_LAUNCH, GX_EV_GRAPH_KERNEL_NODE,
 * GX_EV_MEM_FREE, GX_EV_MEM_PREFETCH, GX_EV_MEM_ADVISE, GX_EV_STREAM_DESTROY,
 * GX_EV_CTX_DESTROY, GX_EV_MODULE_UNLOAD, GX_EV_SYNC) fire before the real
 * call; the others after it succeeded. A pre-event callback returning a
 * CUresult other than CUDA_SUCCESS vetoes the call: the driver is not
 * called and the application gets that result (the first veto wins). Return
 * values of post events are ignored.
 *
 * Launch events may be modified: a callback may change func, grid, block,
 * shared_mem and kernel_params (e.g. to launch a persistent-worker variant);
 * the shim launches what the event holds when every callback returned, then
 * raises GX_EV_LAUNCH_DONE with the same event if the driver accepted it.
 *
 * Reached with dlsym(RTLD_DEFAULT, "gx_events_subscribe") or by linking to
 * the shim. Thread-safe. */
#ifndef GX_EVENTS_H
#define GX_EVENTS_H

#include <cuda.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gx_event_kind {
	GX_EV_CTX_CREATE = 0,   /* a context appeared (cuCtxCreate, primary ctx retain) */
	GX_EV_CTX_DESTROY,      /* pre: context about to be destroyed/released for good */
	GX_EV_MODULE_LOAD,      /* a module or library was loaded */
	GX_EV_MODULE_UNLOAD,    /* pre: module/library about to be unloaded */
	GX_EV_LAUNCH,           /* pre: kernel launch (any launch API) */
	GX_EV_GRAPH_KERNEL_NODE,/* pre: kernel node added/updated in a graph */
	GX_EV_MEM_ALLOC_MANAGED,/* cuMemAllocManaged succeeded */
	GX_EV_MEM_FREE,         /* pre: cuMemFree */
	GX_EV_MEM_PREFETCH,     /* pre: cuMemPrefetchAsync */
	GX_EV_MEM_ADVISE,       /* pre: cuMemAdvise */
	GX_EV_STREAM_CREATE,    /* a stream was created */
	GX_EV_STREAM_DESTROY,   /* pre: a stream is about to be destroyed */
	GX_EV_SYNC,             /* pre: cuCtxSynchronize[_v2] / cuStreamSynchronize / cuEventSynchronize */
	GX_EV_STREAM_CREATING,  /* pre: a stream is about to be created (stream.flags and
				 * .priority as asked; a callback may change .priority:
				 * the stream is then made with cuStreamCreateWithPriority
				 * and those flags; a veto fails the creation) */
	GX_EV_LAUNCH_DONE,      /* a launch the driver accepted (the same launch
				 * event, as launched, right after the call; not
				 * raised for graph launches or nested calls) */
	GX_EV_GRAPH_LAUNCH,     /* a cuGraphLaunch[_ptsz] the driver accepted: the
				 * exec's kernel nodes (ev->glaunch) */
	GX_EV_GRAPH_EXEC_DESTROY,/* pre: an exec's kernel list ev->glaunch.gen goes
				 * away (cuGraphExecDestroy, or the exec changed:
				 * cuGraphExecUpdate, ...SetParams; a new gen follows) */
	GX_EV_GRAPH_LAUNCH_PRE, /* pre: a cuGraphLaunch[_ptsz] about to be made (the
				 * same ev->glaunch; GX_EV_GRAPH_LAUNCH follows if the
				 * driver accepts it): a timing event goes before it */
	GX_EV__COUNT
};

#define GX_EV_MASK(kind) (1u << (kind))
#define GX_EV_ALL ((1u << GX_EV__COUNT) - 1)
/* Subscription flag, with GX_EV_MASK(GX_EV_LAUNCH) | GX_EV_MASK(GX_EV_LAUNCH_DONE):
 * deliver GX_EV_LAUNCH_DONE only for the launches whose GX_EV_LAUNCH event
 * this subscriber marked (ev->launch.done_for), not after every launch. A
 * tool that times one launch in hundreds then costs the others nothing after
 * the driver's call. Shims older than the flag refuse it (-EINVAL):
 * subscribe again without it. */
#define GX_EV_F_DONE_ASKED (1u << 31)
/* Does the shim's event carry `field` (the shim may be older than this header)? */
#define GX_EV_HAS(ev, field) \
	((ev)->sz >= offsetof(struct gx_event, field) + sizeof(((struct gx_event *)0)->field))

/* Where the launch came from. */
enum gx_launch_api {
	GX_LAUNCH_KERNEL = 1,        /* cuLaunchKernel[_ptsz] */
	GX_LAUNCH_KERNEL_EX,         /* cuLaunchKernelEx[_ptsz] */
	GX_LAUNCH_COOPERATIVE,       /* cuLaunchCooperativeKernel[_ptsz] */
};

struct gx_launch_event {
	enum gx_launch_api api;
	CUfunction func;             /* as passed: a CUfunction or a CUkernel handle */
	int is_kernel;               /* func is a CUkernel (from cuLibraryGetKernel) */
	const char *name;            /* mangled kernel name, NULL if unknown */
	unsigned grid[3], block[3];
	unsigned shared_mem;
	CUstream stream;
	void **kernel_params;
	void **extra;
	const CUlaunchConfig *config;/* GX_LAUNCH_KERNEL_EX only (its attributes) */
	/* Added with GX_EV_F_DONE_ASKED (present when GX_EV_HAS(ev,
	 * launch.done_for)): a GX_EV_LAUNCH callback sets bit (1u << its
	 * subscription id) to get GX_EV_LAUNCH_DONE for this launch when it
	 * subscribed with GX_EV_F_DONE_ASKED. 0 from the shim. */
	unsigned done_for;
};

struct gx_graph_node_event {
	CUgraphNode node;            /* NULL when the node is being added */
	CUgraphExec exec;            /* set for cuGraphExecKernelNodeSetParams* */
	CUDA_KERNEL_NODE_PARAMS params; /* a copy; edits are used for the real call */
	const char *name;
};

/* A kernel of an instantiated graph (CUgraphExec), child graphs included. */
struct gx_graph_kernel {
	CUfunction func;             /* as in the node: a CUfunction or a CUkernel handle */
	int is_kernel;               /* func is a CUkernel */
	const char *name;            /* mangled kernel name, NULL if unknown */
	unsigned nodes;              /* its kernel nodes in the exec */
};

/* The kernels of an exec, walked once when it was instantiated (or changed),
 * subscriber or not; one event per graph launch. An exec whose walk failed
 * (or with GPUEXT_DISABLE) has no list (gen 0, nr_kernels 0). */
struct gx_graph_launch_event {
	CUgraphExec exec;
	CUstream stream;
	unsigned long long gen;      /* this kernel list's id: new at each instantiation
				      * and change, never reused (0: no list) */
	unsigned nr_kernels;         /* distinct kernels */
	unsigned nodes;              /* kernel nodes in all */
	const struct gx_graph_kernel *kernels; /* valid during the callback */
};

struct gx_module_event {
	void *handle;                /* CUmodule or CUlibrary given to the application */
	int is_library;
	const char *api;             /* e.g. "cuLibraryLoadData" */
	int rewritten;               /* loaded from rewritten PTX */
	const char *reason;          /* if not rewritten: why, e.g. "SASS only" */
};

struct gx_mem_event {
	CUdeviceptr ptr;
	size_t size;                 /* 0 when unknown (cuMemFree) */
	unsigned flags;              /* cuMemAllocManaged flags */
	CUmem_advise advice;         /* GX_EV_MEM_ADVISE */
	CUmemLocation location;      /* prefetch/advise target (device id in .id) */
	CUstream stream;             /* prefetch stream */
};

struct gx_stream_event {
	CUstream stream;             /* NULL in GX_EV_STREAM_CREATING */
	unsigned flags;
	int priority;                /* CUDA's: lower is higher; 0 for cuStreamCreate */
};

struct gx_event {
	size_t sz;                   /* sizeof(struct gx_event) of the shim */
	enum gx_event_kind kind;
	CUcontext ctx;               /* current context (NULL if unknown) */
	CUdevice dev;                /* its device (-1 if unknown) */
	union {
		struct gx_launch_event launch;
		struct gx_graph_node_event graph;
		struct gx_graph_launch_event glaunch;
		struct gx_module_event module;
		struct gx_mem_event mem;
		struct gx_stream_event stream;
	};
};

typedef CUresult (*gx_event_fn)(struct gx_event *ev, void *cookie);

/* Subscribe `fn` to the kinds in `mask` (GX_EV_MASK bits). Returns an id
 * >= 0, or -EINVAL (bad mask/fn), -ENOSPC (too many subscribers) or -ENODEV
 * (GPUEXT_DISABLE is set: the shim only forwards). */
int gx_events_subscribe(unsigned mask, gx_event_fn fn, void *cookie);
/* Stop delivering events to a subscription. A callback already running on
 * another thread may still finish after this returns. 0 or -ENOENT. */
int gx_events_unsubscribe(int id);
/* Mask of kinds somebody is subscribed to. */
unsigned gx_events_active(void);

#ifdef __cplusplus
}
#endif
#endif
