PTX_SRCS := ptx-rewrite/rewrite.c
PTX_LIB  := $(BUILD)/lib/libgxptx.a

$(PTX_LIB): $(call objs,$(PTX_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)ar rcs $@ $^

LIBS_ALL += $(PTX_LIB)
