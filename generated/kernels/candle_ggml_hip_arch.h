// Written by `cargo xtask regen` from the translator's tables (candle_ggml_hip_arch.h; candle-rocm's own code). Do not edit here.
// ggml's per-arch definitions for its HIP build (llama.cpp ggml-cuda/vendors/hip.h and common.cuh),
// which Candle's mmq_gguf/ (ggml's MMQ code) branches on. Keyed by clang's __gfxNNNN__ macros, so each
// device pass of hipcc gets its own arch's; the host pass gets GGML_USE_HIP only, and the launchers
// choose by the compute capability the backend passes (0x1000000 + gfx id, as ggml's).
// The table is translator/src/kernels/mapping.rs (GGML_AMD_FAMILIES, GGML_DERIVED_DEFINES).
#pragma once

#if defined(__gfx908__)
#define CDNA1
#endif

#if defined(__gfx90a__)
#define CDNA2
#endif

#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define CDNA3
#endif

#if defined(__gfx950__)
#define CDNA4
#endif

#if defined(__gfx1010__) || defined(__gfx1011__) || defined(__gfx1012__)
#define RDNA1
#endif

#if defined(__gfx1030__) || defined(__gfx1031__) || defined(__gfx1032__) || defined(__gfx1033__) || \
    defined(__gfx1034__) || defined(__gfx1035__) || defined(__gfx1036__) || defined(__gfx1037__)
#define RDNA2
#endif

#if defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) || \
    defined(__gfx1150__) || defined(__gfx1151__) || defined(__gfx1152__) || defined(__gfx1153__)
#define RDNA3
#endif

#if defined(__gfx1150__) || defined(__gfx1151__) || defined(__gfx1152__) || defined(__gfx1153__)
#define RDNA3_5
#endif

#if defined(__gfx1200__) || defined(__gfx1201__)
#define RDNA4
#endif

// the whole CDNA family (ggml)
#if defined(CDNA1) || defined(CDNA2) || defined(CDNA3) || defined(CDNA4)
#define CDNA
#endif

// the whole RDNA family (ggml)
#if defined(RDNA1) || defined(RDNA2) || defined(RDNA3) || defined(RDNA4)
#define RDNA
#endif

// ggml's HIP build: every pass of hipcc for AMD (host and device); an arch macro alone in a hip-on-cuda emulated build
#if defined(__HIP_PLATFORM_AMD__) || defined(CDNA) || defined(RDNA)
#define GGML_USE_HIP
#endif

// ggml's WMMA MMQ tiles (v_wmma_i32_16x16x16_iu8), wave32; run on an NVIDIA GPU through hip-on-cuda's WMMA emulation
#if defined(RDNA3) || defined(RDNA4)
#define AMD_WMMA_AVAILABLE
#endif

// no MFMA tiles with HIP 5 (Debian's 5.2.3): its clang lacks the __bf16 type that upstream's bf16 MFMA tile passes (ggml itself needs ROCm 6.1)
#if defined(__HIP_PLATFORM_AMD__) && defined(HIP_VERSION_MAJOR) && HIP_VERSION_MAJOR < 6 && !defined(CANDLE_HIP_NO_MMQ_MFMA)
#define CANDLE_HIP_NO_MMQ_MFMA
#endif

// ggml's MFMA MMQ tiles (v_mfma_i32_*), wave64, as ggml's default (checked in the CPU 64-lane emulation, tests/amd_emulation/mmq_wave64); CANDLE_HIP_NO_MMQ_MFMA (ggml's GGML_HIP_NO_MMQ_MFMA) keeps the dp4a tiles; CDNA4 (gfx950) takes CDNA3's int8 instructions (rule ggml-cdna4-mma), as ggml does since llama.cpp PR 21570
#if defined(CDNA) && !defined(CANDLE_HIP_NO_MMQ_MFMA)
#define AMD_MFMA_AVAILABLE
#endif
