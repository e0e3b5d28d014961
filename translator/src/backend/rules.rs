//! The backend rules, on token streams.
//!
//! * `path-prefixes`: `cudarc::driver::X` → `candle_rocm_hip::driver::X`, ...
//! * `identifiers`: the HIP layer's names for cudarc types.
//! * `words`: `Cuda`/`cuda`/`CUDA` inside any other identifier.
//! * `features`: `feature = "cuda"` → `feature = "rocm"`.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Group, Ident, Literal, Punct, Spacing, TokenStream, TokenTree};

use super::mapping::{CUDA_MARKERS, FEATURES, IDENTIFIERS, LITERAL_WORDS, PATH_PREFIXES, UNBOUND_CUDA_LIBRARIES, WORDS};

/// Rewrites a token stream (recursively into groups, hence macro bodies too).
pub fn rewrite(stream: TokenStream, counts: &mut BTreeMap<&'static str, usize>) -> TokenStream {
    rewrite_under(stream, counts, &[])
}

/// [`rewrite`] inside the braces of a `use` group whose path so far is `under`
/// (`cudarc::{cublas::X, driver::Y}`: `cublas::X` under `[cudarc]`), so that a
/// prefix spanning the braces is still found.
fn rewrite_under(stream: TokenStream, counts: &mut BTreeMap<&'static str, usize>, under: &[&str]) -> TokenStream {
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
                let element_start = i == 0 || matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == ',');
                if let Some((consumed, replacement)) = (!under.is_empty() && element_start).then(|| match_prefix_under(&tokens, i, under)).flatten() {
                    push_path(&mut out, replacement, ident);
                    *counts.entry("path-prefixes").or_default() += 1;
                    i += consumed;
                    continue;
                }
                if let Some((consumed, parts, replacement)) = match_prefix(&tokens, i) {
                    push_path(&mut out, replacement, ident);
                    *counts.entry("path-prefixes").or_default() += 1;
                    i += consumed;
                    // `cudarc::{...}`: the group's elements continue the path
                    if let (true, Some(TokenTree::Group(g))) = (is_path_sep(&tokens, i), tokens.get(i + 2)) {
                        if g.delimiter() == proc_macro2::Delimiter::Brace {
                            out.push(tokens[i].clone());
                            out.push(tokens[i + 1].clone());
                            let mut group = Group::new(g.delimiter(), rewrite_under(g.stream(), counts, parts));
                            group.set_span(g.span());
                            out.push(group.into());
                            i += 3;
                        }
                    }
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
                    None if is_feature_value(&out) => lit.clone().into(),
                    None => match literal_words(lit) {
                        Some(new) => {
                            *counts.entry("literal-words").or_default() += 1;
                            new.into()
                        }
                        None => lit.clone().into(),
                    },
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

/// Tokens consumed, the row's path and its replacement, of a path prefix starting at `i`.
fn match_prefix(tokens: &[TokenTree], i: usize) -> Option<(usize, &'static [&'static str], &'static [&'static str])> {
    PATH_PREFIXES.iter().find_map(|(parts, replacement)| match_path(tokens, i, parts).map(|n| (n, *parts, *replacement)))
}

/// A prefix row that continues `under` at `i` (inside `under::{...}`): tokens consumed,
/// and the part of the replacement past `under`'s own replacement.
fn match_prefix_under(tokens: &[TokenTree], i: usize, under: &[&str]) -> Option<(usize, &'static [&'static str])> {
    let (_, under_to) = PATH_PREFIXES.iter().find(|(parts, _)| *parts == under)?;
    PATH_PREFIXES.iter().find_map(|(parts, replacement)| {
        let continues = parts.len() > under.len() && &parts[..under.len()] == under && replacement.starts_with(under_to);
        continues.then(|| match_path(tokens, i, &parts[under.len()..])).flatten().map(|n| (n, &replacement[under_to.len()..]))
    })
}

/// How many tokens from `i` spell the path `parts` (`cudarc :: cublas`), if they do.
fn match_path(tokens: &[TokenTree], i: usize, parts: &[&str]) -> Option<usize> {
    let mut at = i;
    for (n, part) in parts.iter().enumerate() {
        if n > 0 {
            if !is_path_sep(tokens, at) {
                return None;
            }
            at += 2;
        }
        match tokens.get(at) {
            Some(TokenTree::Ident(id)) if id == part => at += 1,
            _ => return None,
        }
    }
    Some(at - i)
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
    if names_unbound_library(ident).is_some() {
        return (ident.to_string(), None);
    }
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

/// Whether an identifier names a CUDA library the HIP layer does not bind
/// ([`UNBOUND_CUDA_LIBRARIES`]: `cublaslt`, `CublasLtWrapper`, `maybe_init_cublas_lt_wrapper`).
pub fn names_unbound_library(ident: &str) -> Option<&'static (&'static str, &'static str)> {
    let squashed: String = ident.chars().filter(|c| *c != '_').collect::<String>().to_ascii_lowercase();
    UNBOUND_CUDA_LIBRARIES.iter().find(|(word, _)| squashed.contains(word))
}

/// Is the next token the value of `feature = ...`?
fn is_feature_value(before: &[TokenTree]) -> bool {
    let n = before.len();
    n >= 2 && matches!(&before[n - 2], TokenTree::Ident(id) if id == "feature") && matches!(&before[n - 1], TokenTree::Punct(p) if p.as_char() == '=')
}

/// `feature = "cuda"` (the literal after `feature` `=`) → the ROCm feature.
fn feature_rename(before: &[TokenTree], lit: &Literal) -> Option<Literal> {
    if !is_feature_value(before) {
        return None;
    }
    let text = lit.to_string();
    let (_, to) = FEATURES.iter().find(|(from, _)| text == format!("\"{from}\""))?;
    let mut new = Literal::string(to);
    new.set_span(lit.span());
    Some(new)
}

/// Rule `literal-words`: in a plain string literal, the words of
/// [`LITERAL_WORDS`] standing alone (not inside an identifier such as the
/// kernel name `mul_mat_vec_q4_0_q8_1_cuda`) become the ROCm ones, so that
/// messages and display strings name the ROCm device.
fn literal_words(lit: &Literal) -> Option<Literal> {
    let text = lit.to_string();
    if !text.starts_with('"') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    let mut changed = false;
    'scan: while !rest.is_empty() {
        for (from, to) in LITERAL_WORDS {
            if let Some(after) = rest.strip_prefix(from) {
                let before_ok = !out.chars().last().is_some_and(is_ident_char) || out.ends_with("\\n") || out.ends_with("\\t");
                let after_ok = !after.chars().next().is_some_and(is_ident_char);
                if before_ok && after_ok {
                    out.push_str(to);
                    rest = after;
                    changed = true;
                    continue 'scan;
                }
            }
        }
        let ch = rest.chars().next().expect("not empty");
        out.push(ch);
        rest = &rest[ch.len_utf8()..];
    }
    if !changed {
        return None;
    }
    let mut new: Literal = out.parse().ok()?;
    new.set_span(lit.span());
    Some(new)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
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
                if CUDA_MARKERS.iter().any(|w| lower.contains(w)) {
                    found.insert(s);
                }
            }
            _ => {}
        }
    }
}

/// `word` → `with` inside string literals of `tokens`.
pub fn replace_in_literals(tokens: TokenStream, word: &str, with: &str) -> TokenStream {
    tokens
        .into_iter()
        .map(|t| match t {
            proc_macro2::TokenTree::Group(g) => {
                let mut n = proc_macro2::Group::new(g.delimiter(), replace_in_literals(g.stream(), word, with));
                n.set_span(g.span());
                n.into()
            }
            proc_macro2::TokenTree::Literal(l) if l.to_string().starts_with('"') && l.to_string().contains(word) => {
                l.to_string().replace(word, with).parse::<proc_macro2::Literal>().map(Into::into).unwrap_or(proc_macro2::TokenTree::Literal(l))
            }
            other => other,
        })
        .collect()
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

    /// mistralrs-quant's gptq_cuda.rs: the prefix spans a `use` group's braces
    #[test]
    fn cudarc_paths_inside_use_groups() {
        let out = mirror("use candle_core::cuda::{cudarc::{cublas::{result::hgemm, sys::cublasOperation_t}, driver::{CudaSlice, DevicePtr}}, WrapErr};\n");
        assert!(out.contains("candle_rocm_hip::{") && out.contains("blas::{result::hgemm, sys::"), "{out}");
        assert!(out.contains("driver::{HipSlice, DevicePtr}"), "{out}");
        assert!(!out.contains("rocblas::"), "{out}");
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
        assert!(!out.contains("cudnn") && out.contains("fn b() {}"), "not(cudnn) always holds on ROCm: {out}");
    }

    #[test]
    fn string_literals_name_the_rocm_device_but_keep_kernel_names() {
        let out = mirror("fn a() -> [&'static str; 3] { [\"cuda error: {e}\", \"mul_mat_vec_q4_0_q8_1_cuda\", \", cuda:{gpu_id}\"] }\n");
        assert!(out.contains("\"rocm error: {e}\""), "{out}");
        assert!(out.contains("\"mul_mat_vec_q4_0_q8_1_cuda\""), "{out}");
        assert!(out.contains("\", rocm:{gpu_id}\""), "{out}");
    }

    #[test]
    fn what_stays_cuda_is_reported() {
        let m = mirror_file("t.rs", "test", "fn a(x: cudnn::Handle) {}\n").unwrap();
        assert_eq!(m.unmapped.into_iter().collect::<Vec<_>>(), ["cudnn"]);
    }
}
