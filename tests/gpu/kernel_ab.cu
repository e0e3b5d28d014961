// A/B check of translated kernels on an NVIDIA GPU: the original candle-kernels
// module (CUDA, built with nvcc) and its translation from generated/kernels
// (built with nvcc through tests/gpu/nvcc_hip_shim) are loaded as two cubins,
// and every listed elementwise kernel runs on the same random input in both.
// Usage: kernel_ab [--binary|--softmax|--rmsnorm] ORIG.cubin TRANSLATED.cubin KERNEL...
// (names ending _f32, _f16 or _bf16). Unary kernels take (numel, num_dims,
// info, inp, out); --binary (numel, num_dims, dims_and_strides, lhs, rhs, out),
// contiguous (info = null). --softmax (src, dst, n_cols) and --rmsnorm (src,
// dst, alpha, n_cols, block_size, eps) run rows of n_cols with candle-nn's
// launch shapes (block (1,32,1); block (32 or 1024,1,1)), exercising the warp
// shuffles and block reductions.
// Prints per kernel the max relative difference and "N passed, M failed".
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <string>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); printf("%s failed: %s\n", #x, s); exit(2); } } while (0)

static float to_f(const void* p, int size, bool bf) {
    if (size == 4) return *(const float*)p;
    unsigned short b; memcpy(&b, p, 2);
    if (bf) { unsigned int u = (unsigned int)b << 16; float f; memcpy(&f, &u, 4); return f; }
    return __half2float(*(const __half*)p);
}

int main(int argc, char** argv) {
    std::string mode = argc > 1 && strncmp(argv[1], "--", 2) == 0 ? argv[1] + 2 : "unary";
    if (mode != "unary") { ++argv; --argc; }
    const bool binary = mode == "binary";
    if (argc < 4) { printf("usage: kernel_ab [--binary] ORIG TRANSLATED KERNEL...\n"); return 2; }
    CK(cuInit(0));
    CUdevice dev; CK(cuDeviceGet(&dev, 0));
    CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    CUmodule a, b;
    CK(cuModuleLoad(&a, argv[1]));
    CK(cuModuleLoad(&b, argv[2]));
    const size_t n = 1 << 16;
    int passed = 0, failed = 0;
    for (int k = 3; k < argc; ++k) {
        std::string name = argv[k];
        int size = 4; bool bf = false;
        if (name.size() > 4 && name.compare(name.size() - 4, 4, "_f16") == 0) size = 2;
        if (name.size() > 5 && name.compare(name.size() - 5, 5, "_bf16") == 0) { size = 2; bf = true; }
        std::vector<unsigned char> in(n * size);
        srand(7);
        for (size_t i = 0; i < n; ++i) {
            float v = ((rand() % 20001) - 10000) / 2500.0f;  // [-4, 4]
            if (size == 4) memcpy(&in[i * 4], &v, 4);
            else if (bf) { unsigned int u; memcpy(&u, &v, 4); unsigned short h = (unsigned short)((u + 0x7fff + ((u >> 16) & 1)) >> 16); memcpy(&in[i * 2], &h, 2); }
            else { __half h = __float2half(v); memcpy(&in[i * 2], &h, 2); }
        }
        std::vector<unsigned char> out[2];
        CUmodule mods[2] = {a, b};
        for (int m = 0; m < 2; ++m) {
            CUfunction f;
            if (cuModuleGetFunction(&f, mods[m], name.c_str()) != CUDA_SUCCESS) { printf("%s: missing in module %d\n", name.c_str(), m); exit(2); }
            CUdeviceptr din, din2, dout;
            CK(cuMemAlloc(&din, n * size)); CK(cuMemAlloc(&din2, n * size)); CK(cuMemAlloc(&dout, n * size));
            CK(cuMemcpyHtoD(din, in.data(), n * size));
            // the second operand: the input reversed (so both vary)
            std::vector<unsigned char> rev(n * size);
            for (size_t i = 0; i < n; ++i) memcpy(&rev[i * size], &in[(n - 1 - i) * size], size);
            CK(cuMemcpyHtoD(din2, rev.data(), n * size));
            size_t numel = n, dims = 1; CUdeviceptr info = 0;
            void* unary_args[] = {&numel, &dims, &info, &din, &dout};
            void* binary_args[] = {&numel, &dims, &info, &din, &din2, &dout};
            if (mode == "softmax" || mode == "rmsnorm") {
                // rows of 4096 (block 1024 for rmsnorm) then rows of 512 (block 32)
                for (int n_cols : {4096, 512}) {
                    int rows = (int)(n / n_cols), block = n_cols < 1024 ? 32 : 1024;
                    float eps = 1e-5f;
                    void* sm_args[] = {&din, &dout, &n_cols};
                    void* rn_args[] = {&din, &dout, &din2, &n_cols, &block, &eps};
                    if (mode == "softmax") CK(cuLaunchKernel(f, rows, 1, 1, 1, 32, 1, 0, 0, sm_args, nullptr));
                    else CK(cuLaunchKernel(f, rows, 1, 1, block, 1, 1, 0, 0, rn_args, nullptr));
                    CK(cuCtxSynchronize());
                    if (n_cols == 4096) {  // compare both shapes: keep the first result too
                        std::vector<unsigned char> first(n * size);
                        CK(cuMemcpyDtoH(first.data(), dout, n * size));
                        out[m].insert(out[m].end(), first.begin(), first.end());
                    }
                }
            } else {
                CK(cuLaunchKernel(f, (unsigned)(n / 256), 1, 1, 256, 1, 1, 0, 0, binary ? binary_args : unary_args, nullptr));
            }
            CK(cuCtxSynchronize());
            std::vector<unsigned char> last(n * size);
            CK(cuMemcpyDtoH(last.data(), dout, n * size));
            out[m].insert(out[m].end(), last.begin(), last.end());
            cuMemFree(din); cuMemFree(din2); cuMemFree(dout);
        }
        double worst = 0; size_t identical = 0;
        const size_t total = out[0].size() / size;
        for (size_t i = 0; i < total; ++i) {
            if (memcmp(&out[0][i * size], &out[1][i * size], size) == 0) { ++identical; continue; }
            float x = to_f(&out[0][i * size], size, bf), y = to_f(&out[1][i * size], size, bf);
            if (std::isnan(x) && std::isnan(y)) { ++identical; continue; }
            double rel = fabs((double)x - y) / fmax(1e-6, fabs((double)x));
            if (!(rel <= worst)) worst = std::isnan(rel) ? INFINITY : fmax(worst, rel);
        }
        const double tol = size == 4 ? 1e-6 : (bf ? 1e-2 : 1e-3);  // one ulp of the type
        bool ok = worst <= tol;
        printf("%-24s %s  bit-identical %zu/%zu  max rel diff %.3g\n", name.c_str(), ok ? "ok  " : "FAIL", identical, total, worst);
        ok ? ++passed : ++failed;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
