// A kernel no rule can translate: inline PTX.
extern "C" __global__ void lane_id(unsigned* out) {
    unsigned id;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
    out[threadIdx.x] = id;
}
