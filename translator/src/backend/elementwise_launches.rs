//! Rule `elementwise-launches`: the ROCm backend launches the elementwise kernels whose
//! contiguous loops move 16-byte packs (kernel rule `elementwise-packs`) with one thread
//! per pack when the layouts are contiguous and start on a pack
//! ([`ELEMENTWISE_LAUNCHES`], applied by [`replacements`](super::replacements) in the
//! mirrored backend, each row inside the one impl or function it names). Upstream's
//! grid of one thread per element would leave most blocks without work.

use super::mapping::ELEMENTWISE_LAUNCHES;
use super::replacements::{self, Scope, Table};
use crate::TranslateError;

const TABLE: Table = Table { rule: "elementwise-launches", path: "backend::mapping::ELEMENTWISE_LAUNCHES", rows: ELEMENTWISE_LAUNCHES };

/// Applies the rows for `file` of the crate that `label` names, in a mirrored (whole
/// ROCm) file. Returns how many launch configurations changed.
pub fn rewrite(label: &str, file: &str, parsed: &mut syn::File) -> Result<usize, TranslateError> {
    replacements::apply(&TABLE, label, file, parsed, Scope::Everywhere)
}
