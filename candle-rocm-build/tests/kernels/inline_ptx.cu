// A kernel no rule can translate: inline PTX with no row (bfind: the leading one's position).
extern "C" __global__ void lead(unsigned* out) {
    unsigned id;
    asm volatile("bfind.u32 %0, %1;" : "=r"(id) : "r"(threadIdx.x));
    out[threadIdx.x] = id;
}
