// candle-rocm compat: the parallel-algorithms library for code that uses more of it than
// Candle's MoE launchers (candle_hip_thrust.h): that header's own scan and device_ptr, and
// every other name (iterators, algorithms) from rocThrust, where the ROCm release has it
// (ROCm >= 6; not Debian's HIP 5.2.3). Candle's kernels include candle_hip_thrust.h only.
#pragma once

#include "candle_hip_thrust.h"

#if defined(__HIP_PLATFORM_AMD__) && defined(__has_include)
#if __has_include(<thrust/version.h>)
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
namespace candle_thrust {
using namespace ::thrust;
}  // namespace candle_thrust
#endif
#endif
