// Source of the checked-in test images (regenerate.sh). Kernel names carry their gpusim cost:
// sim_busy_<us>. One extern "C" name, one mangled C++ name, one in a namespace, one global.
extern "C" __global__ void sim_busy_1000(float *p) { if (p) p[threadIdx.x] = 1.0f; }
__global__ void sim_busy_2000(float *p, int n) { if (p && n) p[threadIdx.x] += 2.0f; }
namespace gs {
__global__ void scale(float *p, float a) { if (p) p[threadIdx.x] *= a; }
}
__device__ float gs_table[256];

#ifdef WITH_MAIN
int main(void)
{
    sim_busy_1000<<<1, 32>>>(nullptr);
    return 0;
}
#endif
