# ptx-rewrite: PTX parser/IR/emitter (ptx_*.c), passes (pass_*.c, passes.c)
# and the public entry point gx_ptx_rewrite() (rewrite.c).
PTX_SRCS := ptx-rewrite/rewrite.c ptx-rewrite/ptx_ir.c ptx-rewrite/ptx_lex.c ptx-rewrite/ptx_parse.c ptx-rewrite/ptx_emit.c \
            ptx-rewrite/passes.c $(filter-out ptx-rewrite/passes.c,$(wildcard ptx-rewrite/pass_*.c))
PTX_LIB  := $(BUILD)/lib/libgxptx.a

$(PTX_LIB): $(call objs,$(PTX_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)ar rcs $@ $^

LIBS_ALL += $(PTX_LIB)

CLI_SRCS += cli/ptx.c
CLI_LIBS += $(PTX_LIB)

# Identity round trip over the PTX corpus (built into $(BUILD)/ptx-corpus by
# tests/ptx/corpus.sh, which the passes' tests reuse).
TESTS += tests/ptx/test_corpus.sh

# Pass tests (tests/ptx/test_passes.sh, test_link.sh): see docs/ptx-rewrite.md.
TEST_BINS += $(BUILD)/tests/ptx/test_link
TESTS     += tests/ptx/test_passes.sh tests/ptx/test_link.sh
$(BUILD)/tests/ptx/test_link: $(call objs,tests/ptx/test_link.c) $(PTX_LIB) $(COMMON_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)
