use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum HipBuildError {
    #[error("hipcc not found: install it (Debian: apt-get install hipcc) or set ROCM_PATH")]
    HipccNotFound,
    #[error("hipcc does not support --offload-arch={arch}: {message}")]
    UnsupportedArch { arch: String, message: String },
    #[error("{source_path}: hipcc failed:\n{stderr}")]
    CompileFailed { source_path: PathBuf, stderr: String },
    #[error("{source_path}: includes the CUDA header {header}: an AMD build must not see CUDA headers")]
    CudaHeaderIncluded { source_path: PathBuf, header: String },
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
