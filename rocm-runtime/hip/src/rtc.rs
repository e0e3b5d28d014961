//! Runtime compilation (cudarc's `nvrtc`): only the error type.
//!
//! candle's kernels reach this backend as precompiled code objects (see
//! [`crate::driver::CodeObject`]), so no compiler is wrapped here; the type exists so
//! that error enums converting from it keep their shape. A hipRTC wrapper would
//! produce it.

/// A failed runtime compilation: the hipRTC status code and the compiler log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HipCompileError {
    /// `hiprtcResult` value.
    pub status: u32,
    /// Compiler output, possibly empty.
    pub log: String,
}

impl std::fmt::Display for HipCompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hipRTC compilation failed (status {})", self.status)?;
        if !self.log.is_empty() {
            write!(f, ":\n{}", self.log)?;
        }
        Ok(())
    }
}

impl std::error::Error for HipCompileError {}
