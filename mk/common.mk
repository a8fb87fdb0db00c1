# Generic rules shared by every part.
$(BUILD)/obj/%.o: %.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# Objects of a source list: $(call objs,a.c b.c)
objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
