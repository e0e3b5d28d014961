#!/usr/bin/env python3
"""PyTorch's CUDA-to-HIP translator (torch.utils.hipify) on a directory of
CUDA sources, for `cargo xtask bench regen`: translates SRC_DIR's .cu/.cuh
files into OUT_DIR and prints the seconds the hipify call took (the process
around it also pays for importing torch)."""
import sys
import time

from torch.utils.hipify import hipify_python


def main() -> None:
    src, out = sys.argv[1], sys.argv[2]
    start = time.perf_counter()
    hipify_python.hipify(
        project_directory=src,
        output_directory=out,
        extensions=(".cu", ".cuh"),
        header_extensions=(".cuh",),
        includes=["*"],
        show_detailed=False,
        show_progress=False,
        is_pytorch_extension=True,
    )
    print(f"hipify_seconds {time.perf_counter() - start:.6f}")


if __name__ == "__main__":
    main()
