/* pd3.cu - the CUDA backend of pd3.h (being written). */
#include "cuda_util.cuh"
