//! CUDA-to-HIP translation of Candle's sources.
//!
//! * [`lexer`]: a small C++ tokenizer that understands comments, string and
//!   character literals, preprocessor lines and line continuations.
//! * [`kernels`]: rewrites `candle-kernels` `.cu`/`.cuh` files into HIP with
//!   named rules driven by the data tables in [`kernels::mapping`].
//! * [`backend`]: mirrors candle-core's Rust CUDA backend as a ROCm backend
//!   (`syn` in, `prettyplease` out), driven by [`backend::mapping`].

pub mod backend;
pub mod error;
pub mod kernels;
pub mod lexer;
pub mod provenance;

pub use error::TranslateError;

/// The translator's version, recorded in every manifest it helps write.
pub const TRANSLATOR_VERSION: &str = env!("CARGO_PKG_VERSION");

/// One input or output file, addressed by its path relative to a tree root
/// (always with `/` separators, so output is identical on every machine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    pub rel_path: String,
    pub contents: Vec<u8>,
}
