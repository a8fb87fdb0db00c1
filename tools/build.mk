# tools/ — the shipped device tools, each a pair: NAME.bpf.c (its device
# program, built to $(TOOLS_DIR)/NAME.bpf.o) and NAME.c (its report),
# registered in tools.c. Public header: tools/gx_tools.h. libgxtools.a
# (registry, reports, run data) is linked into the CLI.
TOOLS_DIR   := $(BUILD)/share/gpuext/tools
TOOL_PROGS  := $(patsubst tools/%.bpf.c,%,$(wildcard tools/*.bpf.c))
# kernelretsnoop_all: kernelretsnoop without its block sampling.
# Issue 40's load-time variants (attach/policy.c, docs/devbpf-perf.md): a
# tool's name stays, its object changes: kernelretsnoop_c1024 / _c256
# (GX_KRS_CAP: a lower per-launch block cap), threadhist_lw
# (GX_TH_WARP=last: the block counted by its last warp, not warp 0),
# memtrace_prog (GX_MT_GATE=0: sampled in the program, not by the rewriter's gate;
# memtrace_gate, GX_MT_GATE=1, is the default build under another name),
# kernelretsnoop_counts (GX_KRS_COUNTS=1: with the krs_counts map for gpuext exporter).
# threadhist_w1 (GX_TH_WARP=1: warp 1 counts, for GX_PTX_BLOCK_SITE=barrier).
# launchlate_ring (GX_LL_RING=1: its records through a ring, not the record table).
# kernelretsnoop_ring (GX_KRS_RING=1: the same, its blocks capped at 16,384 a launch).
TOOL_VARIANTS := launchlate_ring kernelretsnoop_ring kernelretsnoop_c1024 kernelretsnoop_c256 threadhist_lw threadhist_w1 memtrace_gate memtrace_prog kernelretsnoop_counts
TOOL_OBJS   := $(patsubst %,$(TOOLS_DIR)/%.bpf.o,$(TOOL_PROGS) kernelretsnoop_all $(TOOL_VARIANTS))
TOOL_HDRS   := tools/tools_common.h $(GDEV_HDRS)
TOOLS_SRCS  := $(filter-out %.bpf.c,$(sort $(wildcard tools/*.c)))
TOOLS_LIB   := $(BUILD)/lib/libgxtools.a

$(TOOLS_DIR)/%.bpf.o: tools/%.bpf.c $(TOOL_HDRS)
	$(bpf_compile)
$(TOOLS_DIR)/kernelretsnoop_all.bpf.o: tools/kernelretsnoop.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,-DGX_KRS_ALL)
$(TOOLS_DIR)/kernelretsnoop_c1024.bpf.o: tools/kernelretsnoop.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,-DGX_KRS_SHIFT=10)
$(TOOLS_DIR)/kernelretsnoop_c256.bpf.o: tools/kernelretsnoop.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,-DGX_KRS_SHIFT=8)
$(TOOLS_DIR)/threadhist_lw.bpf.o: tools/threadhist.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,-DGX_TH_LAST_WARP)
$(TOOLS_DIR)/threadhist_w1.bpf.o: tools/threadhist.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,-DGX_TH_WARP1)
$(TOOLS_DIR)/kernelretsnoop_counts.bpf.o: tools/kernelretsnoop.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,-DGX_KRS_COUNTS)
$(TOOLS_DIR)/memtrace_gate.bpf.o: tools/memtrace.bpf.c $(TOOL_HDRS)
	$(bpf_compile)
$(TOOLS_DIR)/launchlate_ring.bpf.o: tools/launchlate.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,-DGX_LL_RING)
$(TOOLS_DIR)/kernelretsnoop_ring.bpf.o: tools/kernelretsnoop.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,-DGX_KRS_RING)
$(TOOLS_DIR)/memtrace_prog.bpf.o: tools/memtrace.bpf.c $(TOOL_HDRS)
	$(call bpf_compile,-DGX_MT_PROG)

$(TOOLS_LIB): $(call objs,$(TOOLS_SRCS))
	$(archive)

LIBS_ALL += $(TOOL_OBJS) $(TOOLS_LIB)
