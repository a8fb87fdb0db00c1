/* gx_stats.h — the figures one process under the shim publishes for
 * `gpuext exporter` (docs/metrics.md): one file per process,
 * `<maps folder>/<pid>-gpuext.stats` (mode 0600), rewritten about once a
 * second by a background thread the process already runs (the tool drainer,
 * the tenant completion thread) and replaced with rename(), so a reader sees
 * either the old file or the new one, never half of one. Nothing here is
 * written on a launch path: the counters are those the shim keeps anyway,
 * copied out by that thread. The file is removed at exit; a process killed
 * leaves it (with `<pid>-*` of its maps) to the tenant reaper or `gpuext
 * tenant gc`, and readers skip files whose pid is gone or reused.
 *
 * Readers check magic, version and size before anything else, take every
 * count as a hint (a garbage file yields garbage figures, never a crash) and
 * terminate every string themselves. Layout: little-endian, naturally
 * aligned, grows only at the end (readers accept a larger size). */
#ifndef GX_STATS_H
#define GX_STATS_H
#include <stddef.h>
#include <stdint.h>

#define GX_STATS_MAGIC	      0x31535847u /* "GXS1" */
#define GX_STATS_VERSION      1
#define GX_STATS_SUFFIX	      "-gpuext.stats"
#define GX_STATS_KERNELS      32  /* kernels kept, most launched first */
#define GX_STATS_KNAME	      112 /* a kernel's name, truncated */
#define GX_STATS_POLICIES     160 /* "tag,tag,..." of attached device policies and tools */
#define GX_STATS_LAT_SUB      16  /* latency buckets per octave */
#define GX_STATS_LAT_MIN_LOG2 10  /* the first octave starts at 2^10 ns (1.024 µs) */
#define GX_STATS_LAT_OCT      24  /* up to 2^34 ns (17.2 s) */
/* [0]: below the first octave; then SUB per octave; the last: above */
#define GX_STATS_LAT_BUCKETS  (GX_STATS_LAT_SUB * GX_STATS_LAT_OCT + 2)

/* How a module load ended. */
enum gx_stats_module {
	GX_STATS_MOD_REWRITTEN = 0, /* loaded with hooks / copies / identity */
	GX_STATS_MOD_PASSED,	    /* passed through before any rewrite (reason below) */
	GX_STATS_MOD_FELL_BACK,	    /* rewritten, the driver refused it: original loaded */
	GX_STATS_MOD__COUNT
};

/* Why a module was passed through: a bounded set (the log line has the detail). */
enum gx_stats_reason {
	GX_STATS_WHY_DISABLED = 0, /* GPUEXT_DISABLE */
	GX_STATS_WHY_SASS_ONLY,	   /* no PTX to rewrite */
	GX_STATS_WHY_NO_PTX_ARCH,  /* PTX, but none for this GPU */
	GX_STATS_WHY_PREHOOKED,	   /* compiled with the hooks in (gpuext-ptxas) */
	GX_STATS_WHY_BAD_IMAGE,	   /* unrecognised or empty image */
	GX_STATS_WHY_REWRITE,	   /* the rewriter failed */
	GX_STATS_WHY_RDC,	   /* -rdc link of the units failed */
	GX_STATS_WHY_DRIVER,	   /* the driver rejected the rewritten PTX */
	GX_STATS_WHY_OTHER,
	GX_STATS_WHY__COUNT
};

/* blocksched: why a launch of a kernel with a persistent copy ran unchanged
 * (a bounded set; `gpuext sched` has the detail). */
enum gx_stats_bs_reason {
	GX_STATS_BS_COOPERATIVE = 0, /* cooperative launch */
	GX_STATS_BS_EXTRA,	     /* parameters through `extra` */
	GX_STATS_BS_ATTRIBUTES,	     /* cuLaunchKernelEx attributes */
	GX_STATS_BS_CAPTURE,	     /* a stream being captured (claiming policies) */
	GX_STATS_BS_OCCUPANCY,	     /* the copy keeps fewer blocks per SM, or none fits */
	GX_STATS_BS_MEMORY,	     /* no device state */
	GX_STATS_BS_SHARED_MEM,	     /* dynamic shared memory the copy cannot get */
	GX_STATS_BS_GRID,	     /* more than 2^31 blocks */
	GX_STATS_BS_STATIC_ONLY,     /* a claiming launch of a static-only copy */
	GX_STATS_BS_GUARD,	     /* the guard ran the original (faster, or being timed) */
	GX_STATS_BS__COUNT
};

struct gx_stats_kernel {
	char name[GX_STATS_KNAME];
	uint64_t launches;	 /* launch calls, graph kernel nodes included */
	uint64_t graph_launches; /* of those, as a node of a graph launch */
};

struct gx_stats_file {
	uint32_t magic, version, size, nr_kernels;
	uint32_t pid, flags; /* GX_STATS_F_* */
	uint64_t start_time; /* /proc/PID/stat field 22: a reused pid differs */
	uint64_t updated_ns; /* CLOCK_REALTIME of this copy */
	char comm[16];
	char policies[GX_STATS_POLICIES];
	uint32_t nr_policies; /* device policies and tools attached */
	uint32_t nr_host_policies;
	/* launches the shim saw (host side; only counted while something
	 * subscribes to launches: a tool, a device policy, a tenant) */
	uint64_t launches, instrumented;
	uint64_t graph_launches;		       /* cuGraphLaunch calls */
	uint64_t graph_kernel_launches;		       /* kernel nodes run by them (in `launches`) */
	uint64_t sampled_gpu_ns, sampled_gpu_ns_instr; /* timed launches' GPU time */
	uint64_t ring_drops;			       /* tool ring records dropped */
	uint64_t policies_disabled;		       /* host policies disabled for misbehaving */
	uint64_t modules[GX_STATS_MOD__COUNT];
	uint64_t passed[GX_STATS_WHY__COUNT]; /* passed + fell back, by reason */
	/* host policies (hostexec in the shim) */
	uint64_t prefetch_calls, prefetch_bytes; /* cuMemPrefetchAsync issued for them */
	uint64_t evictions, device_prefetch_requests;
	/* this process as a tenant (empty name: none) */
	char tenant[32];
	uint32_t tenant_cls; /* GPU_CLASS_* */
	uint32_t pad2;
	uint64_t held, held_ns; /* launches held, and for how long */
	uint64_t completions;
	uint64_t lat_count, lat_sum_ns; /* launch call to seen complete */
	uint64_t lat[GX_STATS_LAT_BUCKETS];
	struct gx_stats_kernel kernels[GX_STATS_KERNELS];
	/* this process's part of its tenant (tenant table v2; GX_STATS_F_TENANT) */
	uint64_t tenant_mem_used, tenant_mem_hiwater; /* device memory bytes it holds, and its highest */
	uint64_t tenant_gpu_ns;			      /* busy time of its tracked launches */
	/* blocksched (GX_STATS_F_SCHED): launches of kernels with a persistent
	 * copy, run as persistent workers (claiming, static) or unchanged */
	uint64_t bs_persistent_claim, bs_persistent_static;
	uint64_t bs_unchanged[GX_STATS_BS__COUNT];
	uint64_t bs_sampled_launches, bs_steals; /* steals counted in the sampled launches (GPUEXT_SCHED_LOG) */
	/* Added since (a file of GX_STATS_SIZE_MIN bytes ends above: readers
	 * take the rest as zeros). kernels[i]'s id: FNV-1a 64 of its whole
	 * name (gx_kernel_id, struct gdev_ctx.kernel_id), for device maps keyed
	 * by kernel id (kernelretsnoop's krs_counts). */
	uint64_t kernel_ids[GX_STATS_KERNELS];
	/* graph launches timed (the same sample as direct launches, per exec)
	 * and their GPU time, start of the graph to its end on its stream */
	uint64_t graph_timed_launches, graph_gpu_ns;
};
/* The first revision's size (readers accept it: the fields after are 0). */
#define GX_STATS_SIZE_MIN offsetof(struct gx_stats_file, kernel_ids)

#define GX_STATS_F_TENANT (1u << 0) /* tenant fields valid */
#define GX_STATS_F_TOOLS  (1u << 1) /* launch counts valid (a launch subscriber counted them) */
#define GX_STATS_F_SCHED  (1u << 2) /* blocksched counts valid (a schedule policy is on) */

/* The bucket of a latency, and a bucket's upper bound in ns. */
static inline unsigned gx_stats_lat_bucket(uint64_t ns)
{
	if (ns < (1ull << GX_STATS_LAT_MIN_LOG2))
		return 0;
	unsigned lg = 63u - (unsigned)__builtin_clzll(ns);
	if (lg >= GX_STATS_LAT_MIN_LOG2 + GX_STATS_LAT_OCT)
		return GX_STATS_LAT_BUCKETS - 1;
	unsigned sub = (unsigned)((ns >> (lg - 4)) & 15); /* GX_STATS_LAT_SUB = 16 */
	return 1 + (lg - GX_STATS_LAT_MIN_LOG2) * GX_STATS_LAT_SUB + sub;
}

static inline uint64_t gx_stats_lat_upper(unsigned b)
{
	if (b == 0)
		return 1ull << GX_STATS_LAT_MIN_LOG2;
	if (b >= GX_STATS_LAT_BUCKETS - 1)
		return UINT64_MAX;
	unsigned o = (b - 1) / GX_STATS_LAT_SUB, s = (b - 1) % GX_STATS_LAT_SUB;
	uint64_t base = 1ull << (GX_STATS_LAT_MIN_LOG2 + o);
	return base + (base / GX_STATS_LAT_SUB) * (s + 1);
}

#endif
