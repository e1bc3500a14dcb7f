/* mp.cu - the CUDA backend of mp.h (being written). */
#include "cuda_util.cuh"
