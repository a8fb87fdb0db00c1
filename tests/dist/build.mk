# tests/dist: make dist's tarball, JIT add-on and wheel, checked the way a
# GPU host without LLVM uses them (against the fake driver), and the check
# that refuses binaries such a host cannot run; then the cluster path
# (deploy/kubernetes) in a Debian root.
TEST_BINS += $(ATTACH_FAKE) $(T_ATT)/attach_app
TESTS     += tests/dist/test_dist.sh tests/dist/test_deploy.sh
