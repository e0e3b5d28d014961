//! What is CUDA-specific in Rust tokens: the identifiers, `cfg`s and string
//! literals that the twinning rules look for (and `"rocm"`, to leave a twin alone).

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::Attribute;

use super::mapping::{CUDA_MARKERS, IDENTIFIERS};
use super::rules;

/// Does this identifier name something CUDA-specific that has a ROCm name?
/// (cuDNN/cuTile/NCCL names have none: code named for them is not twinned;
/// where it is gated on their feature it is left out of ROCm code by
/// `cfg`.)
pub fn is_cuda_ident(ident: &str) -> bool {
    rules::rename(ident).1.is_some() && {
        let lower = ident.to_ascii_lowercase();
        CUDA_MARKERS.iter().any(|m| lower.contains(m)) || IDENTIFIERS.iter().any(|(from, _)| *from == ident)
    }
}

/// Does this token stream mention a CUDA-specific identifier (or the `cuda`
/// feature)?
pub fn mentions_cuda(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(id) => is_cuda_ident(&id.to_string()),
        proc_macro2::TokenTree::Group(g) => mentions_cuda(g.stream()),
        proc_macro2::TokenTree::Literal(l) => l.to_string() == "\"cuda\"",
        proc_macro2::TokenTree::Punct(_) => false,
    })
}

pub fn mentions_rocm(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Group(g) => mentions_rocm(g.stream()),
        proc_macro2::TokenTree::Literal(l) => l.to_string() == "\"rocm\"",
        _ => false,
    })
}

pub fn cfg_mentions_cuda(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg") && mentions_cuda(a.meta.to_token_stream()))
}

