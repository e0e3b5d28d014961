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
    #[error("{file}:{line}: input is not valid UTF-8")]
    NotUtf8 { file: String, line: u32 },
    #[error("{file}:{line}: {what}")]
    Lex { file: String, line: u32, what: String },
}

impl TranslateError {
    pub fn unsupported(file: &str, line: u32, construct: impl Into<String>, reason: impl Into<String>) -> Self {
        TranslateError::Unsupported {
            file: file.to_string(),
            line,
            construct: construct.into(),
            reason: reason.into(),
        }
    }
}
