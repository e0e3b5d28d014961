use std::path::PathBuf;

use thiserror::Error;

/// Everything hip-build can fail with. The messages are meant to be shown to
/// a user as they are (one line each, except the compiler's own output).
#[derive(Debug, Error)]
pub enum HipBuildError {
    #[error("hipcc not found: install it (Debian: apt-get install hipcc) or set ROCM_PATH")]
    HipccNotFound,
    /// `message` is the first line of the compiler's complaint.
    #[error("hipcc does not support --offload-arch={arch}: {message}")]
    UnsupportedArch { arch: String, message: String },
    /// `stderr` is the compiler's output, trimmed to its first
    /// [`STDERR_LINES`](crate::STDERR_LINES) lines.
    #[error("{source_path}: hipcc failed:\n{stderr}")]
    CompileFailed { source_path: PathBuf, stderr: String },
    /// `header` is the dependency path as the compiler reported it; `side`
    /// says which compilation saw it (`device code` or `host code`).
    #[error("{source_path}: includes the CUDA header {header} ({side}): an AMD build must not see CUDA headers")]
    CudaHeaderIncluded { source_path: PathBuf, header: String, side: &'static str },
    /// A tool other than hipcc; `hint` says how to get it.
    #[error("{tool} not found: {hint}")]
    ToolNotFound { tool: String, hint: String },
    #[error("{path}: {what}")]
    CodeObject { path: PathBuf, what: String },
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
}

impl HipBuildError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| HipBuildError::Io { context, source }
    }
}
