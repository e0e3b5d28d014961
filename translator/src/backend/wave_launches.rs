//! Rule `wave-launches`: expressions of the ROCm code whose upstream value
//! holds for NVIDIA only get their ROCm value ([`WAVE_LAUNCHES`], applied by
//! [`replacements`](super::replacements)).
//!
//! Today's rows: candle-nn launches softmax with `block_dim: (1, 32, 1)` and
//! the norms with 32 threads below 1024 columns, one 32-lane warp per row. On
//! ROCm the launch reads the device's wavefront size instead (64 on CDNA, 32
//! on RDNA), and the kernels reduce over that many lanes (kernel rule
//! `wave-rows`), so that no half of a CDNA wavefront idles. candle-core's
//! `mul_mat_via_q8_1` launches `mul_mat_q*` with upstream's NVIDIA tile (the
//! grid from its `mmq_x`/`mmq_y`, 4 warps); on AMD it takes the tile the kernel
//! takes there, ggml's (kernel rule `quantized-mmq-tiles`, whose table
//! `quantized_mmq_tiles.rs` the kernels crate carries), by the device's ggml
//! compute capability.
//!
//! ROCm code is a whole mirrored file, or in a twinned file the functions
//! named for ROCm or gated on its feature.

use super::mapping::WAVE_LAUNCHES;
use super::replacements::{self, Scope, Table};
use crate::TranslateError;

const TABLE: Table = Table { rule: "wave-launches", path: "backend::mapping::WAVE_LAUNCHES", rows: WAVE_LAUNCHES };

/// Applies the rows for `file` of the crate that `label` names; `whole`: the
/// whole file is ROCm code (a mirror). Returns how many expressions changed.
pub fn rewrite(label: &str, file: &str, parsed: &mut syn::File, whole: bool) -> Result<usize, TranslateError> {
    replacements::apply(&TABLE, label, file, parsed, if whole { Scope::Everywhere } else { Scope::RocmCode })
}
