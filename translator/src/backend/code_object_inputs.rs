//! Rule `code-object-inputs`: where upstream's CUDA code takes PTX text (candle-core's
//! `get_or_load_custom_func(fn_name, module_name, ptx: &str)`, which a user's
//! `CustomOp` calls with the PTX its build script made), the mirrored ROCm code takes a
//! code object's bytes (`&[u8]`, what candle-rocm-build makes), and loads it with the
//! HIP layer's `load_custom_module`, whose errors name the module and the device's arch
//! ([`CODE_OBJECT_INPUTS`], applied by [`replacements`](super::replacements) to the
//! whole mirrored file).

use super::mapping::CODE_OBJECT_INPUTS;
use super::replacements::{self, Scope, Table};
use crate::TranslateError;

const TABLE: Table = Table { rule: "code-object-inputs", path: "backend::mapping::CODE_OBJECT_INPUTS", rows: CODE_OBJECT_INPUTS };

/// Applies the rows for `file` of the crate that `label` names (a mirrored file).
pub fn rewrite(label: &str, file: &str, parsed: &mut syn::File) -> Result<usize, TranslateError> {
    replacements::apply(&TABLE, label, file, parsed, Scope::Everywhere)
}
