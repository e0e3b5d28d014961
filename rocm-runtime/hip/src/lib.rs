//! A thin layer over the HIP runtime, rocBLAS and rocRAND with the same shapes as
//! the parts of `cudarc` 0.19 that candle uses, so that candle's CUDA backend can
//! be turned into a ROCm backend by renaming.
//!
//! | cudarc                  | here                              |
//! |-------------------------|-----------------------------------|
//! | `cudarc::driver`        | [`driver`] (HIP runtime)          |
//! | `cudarc::cublas`        | [`blas`] (rocBLAS)                |
//! | `cudarc::curand`        | [`rand`] (rocRAND)                |
//! | `cudarc::nccl`          | [`nccl`] (RCCL, feature `rccl`)   |
//! | `cudarc::nvrtc`         | [`rtc`] (error type only)         |
//!
//! Raw HIP calls go through `rocm_rs::hip::bindings` (generated from HIP 7.1
//! headers, only functions that exist since ROCm 5 are used, except
//! `hipGetDevicePropertiesR0600` of ROCm 6, bound only when the HIP runtime
//! linked against has it: see `build.rs`). rocBLAS, rocRAND
//! and RCCL are declared here (a few dozen functions) so that they can be left
//! unlinked: see `build.rs` and [`unlinked_ffi!`].

/// Declares the foreign functions of an optional library.
///
/// With `cfg($cfg)` set (by `build.rs`, when the library is linked) this is a plain
/// `extern "C"` block. Without it, each function becomes a Rust function with the
/// same signature that ignores its arguments and returns `$unlinked`, a status
/// value that the library never returns and that the error types print as
/// "library not linked". Code type-checks and links the same way either way.
///
/// `signatures NAME;` after `$unlinked` also declares, for the tests,
/// `NAME: &[(name, [argument types], return type)]` with the Rust types as
/// written, which `abi_tests.rs` compares with the C header's declarations.
macro_rules! unlinked_ffi {
    ($cfg:ident, $unlinked:expr; signatures $sigs:ident; $(pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {
        unlinked_ffi! { $cfg, $unlinked; $(pub fn $name($($arg: $ty),*) -> $ret;)* }
        #[cfg(test)]
        pub(crate) const $sigs: &[(&str, &[&str], &str)] =
            &[$((stringify!($name), &[$(stringify!($ty)),*], stringify!($ret))),*];
    };
    ($cfg:ident, $unlinked:expr; $(pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {
        #[cfg($cfg)]
        extern "C" { $(pub fn $name($($arg: $ty),*) -> $ret;)* }
        $(
            #[cfg(not($cfg))]
            #[allow(unused_variables, clippy::too_many_arguments, clippy::missing_safety_doc)]
            pub unsafe fn $name($($arg: $ty),*) -> $ret { $unlinked }
        )*
    };
}

pub mod blas;
pub mod driver;
pub mod nccl;
pub mod rand;
pub mod rtc;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod abi_tests;
#[cfg(test)]
mod nccl_tests;
