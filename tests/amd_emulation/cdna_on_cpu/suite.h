// suite.h - what the drivers of the suites beside this folder share: counting checks,
// the summary line tests/tests/compat_headers.rs reads ("N passed, M failed"), and
// bf16 rounding of test data.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include "hip_cpu_device.h"  // emu_f32_bits

inline int g_passed = 0, g_failed = 0;

inline void check(bool ok, const std::string& what) {
    if (!ok) printf("  FAILED  %s\n", what.c_str());
    ++(ok ? g_passed : g_failed);
}

// Prints the summary line; the exit status of the suite.
inline int emu_summary() {
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}

inline uint16_t bf16_bits(double v) {  // round to nearest even (finite values)
    uint32_t u = emu_f32_bits(static_cast<float>(v));
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}
