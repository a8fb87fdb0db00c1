# devbpf: each piece has its own fragment.
include devbpf/jit.mk
