// kernels_ptx.cu — the corpus kernels as a PTX file for the driver-API cases.
#include "kernels.cuh"
