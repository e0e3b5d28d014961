//! What the ROCm side leaves out of upstream's CUDA code ([`Gap`]), and the
//! short description of a node that reports name it by.

use quote::ToTokens;

/// Something upstream has on CUDA that the ROCm side leaves out, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Gap {
    pub file: String,
    pub line: u32,
    pub construct: String,
    pub feature: String,
    pub reason: String,
}

impl Gap {
    pub fn new(file: &str, line: u32, construct: &str, feature: &str, reason: &str) -> Gap {
        Gap { file: file.to_string(), line, construct: construct.to_string(), feature: feature.to_string(), reason: reason.to_string() }
    }
}

/// A short description of a node for reports: its tokens, cut at 80 chars.
pub fn describe(node: &impl ToTokens) -> String {
    let mut text = node.to_token_stream().to_string();
    // drop attributes for readability: keep from the first non-attribute token
    while text.starts_with('#') {
        match text.find(']') {
            Some(end) => text = text[end + 1..].trim_start().to_string(),
            None => break,
        }
    }
    if text.len() > 80 {
        let cut = (0..=80).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        text.truncate(cut);
        text.push_str(" ...");
    }
    text
}

