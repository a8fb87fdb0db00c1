/* gpuext-run: the same as `gpuext run`, as its own short program name. */
#include "cli/run_internal.h"

int main(int argc, char **argv)
{
	return gx_run_main(argc, argv, "gpuext-run");
}
