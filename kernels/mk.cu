/* mk.cu - the CUDA backend of mk.h (being written). */
#include "cuda_util.cuh"
