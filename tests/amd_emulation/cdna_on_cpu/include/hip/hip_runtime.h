// Stand-in for HIP's <hip/hip_runtime.h> in the CPU wave64 emulation: everything lives
// in hip_cpu_device.h (see there).
#pragma once
#include "../../hip_cpu_device.h"
