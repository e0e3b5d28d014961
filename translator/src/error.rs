use thiserror::Error;

/// A construct the translator cannot handle. Every variant names the file,
/// the 1-based line and the construct, so a maintainer can find it at once.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TranslateError {
    #[error("{file}:{line}: {construct}: {reason}")]
    Unsupported {
        file: String,
        line: u32,
        construct: String,
        reason: String,
    },
    /// A construct with no AMD meaning, refused on purpose: `cause` names what it is
    /// (inline PTX, an sm_90 instruction, a CUTLASS/CuTe header, ...).
    #[error("{file}:{line}: {construct}: NVIDIA-only: {cause}")]
    NvidiaOnly {
        file: String,
        line: u32,
        construct: String,
        cause: String,
        /// The NVIDIA compute capability that brought the construct, where one did.
        since_sm: Option<u32>,
    },
    /// A header of a library outside CUDA that this translation does not provide (PyTorch's
    /// C++ API in vLLM's kernels): not a CUDA construct, so neither mapped nor refused.
    #[error("{file}:{line}: {construct}: needs {library}, which this translation does not provide")]
    NeedsLibrary {
        file: String,
        line: u32,
        construct: String,
        library: String,
    },
    #[error("{file}:{line}: input is not valid UTF-8")]
    NotUtf8 { file: String, line: u32 },
    #[error("{file}:{line}: {what}")]
    Lex { file: String, line: u32, what: String },
}

impl TranslateError {
    pub fn nvidia_only(file: &str, line: u32, construct: impl Into<String>, cause: impl Into<String>, since_sm: Option<u32>) -> Self {
        TranslateError::NvidiaOnly { file: file.to_string(), line, construct: construct.into(), cause: cause.into(), since_sm }
    }

    pub fn unsupported(file: &str, line: u32, construct: impl Into<String>, reason: impl Into<String>) -> Self {
        TranslateError::Unsupported {
            file: file.to_string(),
            line,
            construct: construct.into(),
            reason: reason.into(),
        }
    }
}
