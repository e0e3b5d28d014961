//! The backend rules, on token streams.
//!
//! * `path-prefixes`: `cudarc::driver::X` → `candle_rocm_hip::driver::X`, ...
//! * `identifiers`: the HIP layer's names for cudarc types.
//! * `words`: `Cuda`/`cuda`/`CUDA` inside any other identifier.
//! * `features`: `feature = "cuda"` → `feature = "rocm"`.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Group, Ident, Literal, Punct, Spacing, TokenStream, TokenTree};

use super::mapping::{FEATURES, IDENTIFIERS, PATH_PREFIXES, WORDS};

/// Rewrites a token stream (recursively into groups, hence macro bodies too).
pub fn rewrite(stream: TokenStream, counts: &mut BTreeMap<&'static str, usize>) -> TokenStream {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), rewrite(g.stream(), counts));
                group.set_span(g.span());
                out.push(group.into());
                i += 1;
            }
            TokenTree::Ident(ident) => {
                if let Some((consumed, replacement)) = match_prefix(&tokens, i) {
                    push_path(&mut out, replacement, ident);
                    *counts.entry("path-prefixes").or_default() += 1;
                    i += consumed;
                    continue;
                }
                let (renamed, rule) = rename(&ident.to_string());
                if let Some(rule) = rule {
                    *counts.entry(rule).or_default() += 1;
                }
                out.push(Ident::new(&renamed, ident.span()).into());
                i += 1;
            }
            TokenTree::Literal(lit) => {
                out.push(match feature_rename(&out, lit) {
                    Some(new) => {
                        *counts.entry("features").or_default() += 1;
                        new.into()
                    }
                    None => lit.clone().into(),
                });
                i += 1;
            }
            other => {
                out.push(other.clone());
                i += 1;
            }
        }
    }
    out.into_iter().collect()
}

/// Tokens consumed and replacement of a path prefix starting at `i`.
fn match_prefix(tokens: &[TokenTree], i: usize) -> Option<(usize, &'static [&'static str])> {
    'rows: for (parts, replacement) in PATH_PREFIXES {
        let mut at = i;
        for (n, part) in parts.iter().enumerate() {
            if n > 0 {
                if !is_path_sep(tokens, at) {
                    continue 'rows;
                }
                at += 2;
            }
            match tokens.get(at) {
                Some(TokenTree::Ident(id)) if id == part => at += 1,
                _ => continue 'rows,
            }
        }
        return Some((at - i, *replacement));
    }
    None
}

/// `::` at `at` (two `:` puncts, the first joint).
fn is_path_sep(tokens: &[TokenTree], at: usize) -> bool {
    matches!((tokens.get(at), tokens.get(at + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
        if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':')
}

fn push_path(out: &mut Vec<TokenTree>, parts: &[&str], like: &Ident) {
    for (n, part) in parts.iter().enumerate() {
        if n > 0 {
            out.push(Punct::new(':', Spacing::Joint).into());
            out.push(Punct::new(':', Spacing::Alone).into());
        }
        out.push(Ident::new(part, like.span()).into());
    }
}

/// The ROCm name of an identifier, and the rule that gave it.
pub fn rename(ident: &str) -> (String, Option<&'static str>) {
    if let Some((_, to)) = IDENTIFIERS.iter().find(|(from, _)| *from == ident) {
        return (to.to_string(), Some("identifiers"));
    }
    let mut renamed = ident.to_string();
    for (from, to) in WORDS {
        renamed = renamed.replace(from, to);
    }
    if renamed != ident {
        (renamed, Some("words"))
    } else {
        (renamed, None)
    }
}

/// `feature = "cuda"` (the literal after `feature` `=`) → the ROCm feature.
fn feature_rename(before: &[TokenTree], lit: &Literal) -> Option<Literal> {
    let n = before.len();
    let is_feature_eq = n >= 2
        && matches!(&before[n - 2], TokenTree::Ident(id) if id == "feature")
        && matches!(&before[n - 1], TokenTree::Punct(p) if p.as_char() == '=');
    if !is_feature_eq {
        return None;
    }
    let text = lit.to_string();
    let (_, to) = FEATURES.iter().find(|(from, _)| text == format!("\"{from}\""))?;
    let mut new = Literal::string(to);
    new.set_span(lit.span());
    Some(new)
}

/// Identifiers of the mirrored file that still name a CUDA library.
pub fn unmapped_identifiers(file: &syn::File) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    collect(quote::ToTokens::to_token_stream(file), &mut found);
    found
}

fn collect(stream: TokenStream, found: &mut BTreeSet<String>) {
    for t in stream {
        match t {
            TokenTree::Group(g) => collect(g.stream(), found),
            TokenTree::Ident(id) => {
                let s = id.to_string();
                let lower = s.to_ascii_lowercase();
                if ["cuda", "cudarc", "cublas", "curand", "nvrtc", "cudnn", "cutile", "nccl"].iter().any(|w| lower.contains(w)) {
                    found.insert(s);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::mirror_file;

    fn mirror(src: &str) -> String {
        let m = mirror_file("t.rs", "test", src).unwrap();
        m.text.lines().skip(1).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn cudarc_paths_go_to_the_hip_layer() {
        let out = mirror("use cudarc::driver::{CudaSlice, DeviceRepr};\nfn f(e: cudarc::cublas::result::CublasError) {}\n");
        assert!(out.contains("use candle_rocm_hip::driver::{HipSlice, DeviceRepr};"), "{out}");
        assert!(out.contains("fn f(e: candle_rocm_hip::blas::result::RocblasError) {}"), "{out}");
    }

    #[test]
    fn cudarc_reexported_through_the_backend_is_the_layer_too() {
        let out = mirror("pub use cudarc;\nuse crate::cuda_backend::cudarc::driver::CudaStream;\n");
        assert!(out.contains("pub use candle_rocm_hip;"), "{out}");
        assert!(out.contains("use crate::rocm_backend::candle_rocm_hip::driver::HipStream;"), "{out}");
    }

    #[test]
    fn cuda_words_become_rocm_words() {
        let out = mirror("pub struct CudaDevice;\nimpl CudaDevice { pub fn new_cuda() -> Self { Self } }\nfn cuda_fwd() {}\n");
        assert!(out.contains("pub struct RocmDevice;") && out.contains("pub fn new_rocm()") && out.contains("fn rocm_fwd()"), "{out}");
    }

    #[test]
    fn cfg_features_and_macro_bodies() {
        let out = mirror("#[cfg(feature = \"cuda\")]\nfn a() { println!(\"{}\", CudaDevice::new_cuda(0)); }\n#[cfg(not(feature = \"cudnn\"))]\nfn b() {}\n");
        assert!(out.contains("#[cfg(feature = \"rocm\")]"), "{out}");
        assert!(out.contains("RocmDevice::new_rocm(0)"), "{out}");
        assert!(out.contains("feature = \"cudnn\""), "features without a ROCm twin are left, and reported: {out}");
    }

    #[test]
    fn string_literals_are_untouched() {
        let out = mirror("fn a() -> &'static str { \"cuda error\" }\n");
        assert!(out.contains("\"cuda error\""), "{out}");
    }

    #[test]
    fn what_stays_cuda_is_reported() {
        let m = mirror_file("t.rs", "test", "fn a(x: cudnn::Handle) {}\n").unwrap();
        assert_eq!(m.unmapped.into_iter().collect::<Vec<_>>(), ["cudnn"]);
    }

    #[test]
    fn unparsable_rust_is_an_error_with_its_line() {
        let err = mirror_file("t.rs", "test", "fn a() {}\nfn (\n").unwrap_err().to_string();
        assert!(err.starts_with("t.rs:2: Rust source: does not parse"), "{err}");
    }

    #[test]
    fn output_is_deterministic() {
        let src = "use cudarc::driver::CudaStream;\npub fn f(s: &CudaStream) {}\n";
        assert_eq!(mirror(src), mirror(src));
    }
}
