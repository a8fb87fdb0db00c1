#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void gs(int *p){ cg::grid_group g = cg::this_grid(); p[blockIdx.x]=1; g.sync(); p[0]+=p[1]; }
