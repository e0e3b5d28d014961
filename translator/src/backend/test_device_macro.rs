//! Rule `test-device`: candle-core's `test_device!` macro makes a `_gpu`
//! (CUDA) and a `_metal` test from each device-generic test function. Its
//! ROCm twin is a module named like the CUDA test with one test `rocm` in it
//! (`matmul_gpu::rocm`), so the callers (`test_device!(matmul, matmul_cpu,
//! matmul_gpu, matmul_metal)` in every test file of candle-core and candle-nn)
//! stay unchanged: macros cannot make a new identifier, but a module in the
//! type namespace can share the CUDA test function's name.
//!
//! On a machine without a ROCm device the twin says so on stderr and returns
//! `Ok`: it did not run, and it says that plainly.

use std::collections::BTreeMap;

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::quote;

use super::rules;
use super::cuda_names::mentions_cuda;
use crate::TranslateError;

type Rule = fn(&str, TokenStream, &mut BTreeMap<&'static str, usize>) -> Result<TokenStream, TranslateError>;

/// The rule for a `macro_rules!` of this name, if it has one.
pub fn rule_for(macro_name: &str) -> Option<Rule> {
    (macro_name == "test_device").then_some(twin_test_functions as Rule)
}

/// Rewrites the macro's rules: after each CUDA-gated `fn $name() { body }`
/// comes `#[cfg(feature = "rocm")] mod $name { use super::*; #[test] fn
/// rocm() { skip-without-device; mirrored body } }`.
fn twin_test_functions(file: &str, tokens: TokenStream, counts: &mut BTreeMap<&'static str, usize>) -> Result<TokenStream, TranslateError> {
    let mut out = Vec::new();
    let mut twinned = 0;
    for tt in tokens {
        match tt {
            // a rule's expansion: `(...) => { ... }`
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                let body = twin_in_expansion(file, g.stream(), counts, &mut twinned)?;
                out.push(TokenTree::Group(Group::new(Delimiter::Brace, body)));
            }
            other => out.push(other),
        }
    }
    if twinned == 0 {
        return Err(TranslateError::unsupported(file, 0, "macro_rules! test_device", "no CUDA test function found to twin: upstream changed the macro's shape; update rule `test-device`"));
    }
    *counts.entry("test-device").or_default() += twinned;
    Ok(out.into_iter().collect())
}

fn twin_in_expansion(file: &str, body: TokenStream, counts: &mut BTreeMap<&'static str, usize>, twinned: &mut usize) -> Result<TokenStream, TranslateError> {
    let tokens: Vec<TokenTree> = body.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::new();
    let mut start = 0;
    for (i, tt) in tokens.iter().enumerate() {
        // an item ends at a brace group that is not an attribute's
        let ends_item = matches!(tt, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace);
        if !ends_item {
            continue;
        }
        let item = &tokens[start..=i];
        out.extend(item.iter().cloned());
        start = i + 1;
        if is_cuda_gated_fn(item) {
            out.extend(rocm_test_module(file, item, counts)?);
            *twinned += 1;
        }
    }
    out.extend(tokens[start..].iter().cloned());
    Ok(out.into_iter().collect())
}

fn is_cuda_gated_fn(item: &[TokenTree]) -> bool {
    let has_fn = item.iter().any(|t| matches!(t, TokenTree::Ident(id) if id == "fn"));
    let gated = item.windows(2).any(|w| matches!((&w[0], &w[1]), (TokenTree::Punct(p), TokenTree::Group(g)) if p.as_char() == '#' && g.delimiter() == Delimiter::Bracket && g.stream().to_string().starts_with("cfg") && mentions_cuda(g.stream())));
    has_fn && gated
}

fn rocm_test_module(file: &str, item: &[TokenTree], counts: &mut BTreeMap<&'static str, usize>) -> Result<Vec<TokenTree>, TranslateError> {
    let fn_at = item.iter().position(|t| matches!(t, TokenTree::Ident(id) if id == "fn")).expect("checked by is_cuda_gated_fn");
    let (dollar, name) = match (item.get(fn_at + 1), item.get(fn_at + 2)) {
        (Some(TokenTree::Punct(p)), Some(TokenTree::Ident(n))) if p.as_char() == '$' => (p.clone(), n.clone()),
        _ => return Err(TranslateError::unsupported(file, 0, "macro_rules! test_device", "the CUDA test function's name is not a macro argument (`fn $name`)")),
    };
    let Some(TokenTree::Group(body)) = item.last() else { unreachable!("an item ends at its body") };
    let body = rules::rewrite(body.stream(), counts);
    let other_attrs: Vec<TokenStream> = item[..fn_at]
        .chunks(2)
        .filter_map(|c| match c {
            [TokenTree::Punct(p), TokenTree::Group(g)] if p.as_char() == '#' && !g.stream().to_string().starts_with("cfg") => Some(quote!(# #g)),
            _ => None,
        })
        .collect();
    let rocm = Ident::new("rocm", Span::call_site());
    let module = quote! {
        #[cfg(feature = "rocm")]
        mod #dollar #name {
            use super::*;
            #(#other_attrs)*
            fn #rocm() -> Result<()> {
                match #dollar crate::rocm_backend::candle_rocm_hip::driver::HipContext::device_count() {
                    Ok(n) if n > 0 => {}
                    other => {
                        eprintln!("skipped: {}: no ROCm device ({:?})", module_path!(), other);
                        return Ok(());
                    }
                }
                #body
            }
        }
    };
    Ok(module.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPSTREAM_SHAPE: &str = r#"
        ($fn_name: ident, $test_cpu: ident, $test_cuda: ident, $test_metal: ident) => {
            #[test]
            fn $test_cpu() -> Result<()> { $fn_name(&Device::Cpu) }
            #[cfg(feature = "cuda")]
            #[test]
            fn $test_cuda() -> Result<()> { $fn_name(&Device::new_cuda(0)?) }
            #[cfg(feature = "metal")]
            #[test]
            fn $test_metal() -> Result<()> { $fn_name(&Device::new_metal(0)?) }
        };
    "#;

    #[test]
    fn the_cuda_test_gets_a_rocm_module_after_it() {
        let mut counts = BTreeMap::new();
        let out = twin_test_functions("t.rs", UPSTREAM_SHAPE.parse().unwrap(), &mut counts).unwrap().to_string();
        let cuda = out.find("fn $ test_cuda").unwrap();
        let module = out.find("mod $ test_cuda").unwrap();
        assert!(cuda < module && module < out.find("fn $ test_metal").unwrap(), "{out}");
        assert!(out.contains("# [cfg (feature = \"rocm\")] mod $ test_cuda { use super :: * ; # [test] fn rocm () -> Result < () >"), "{out}");
        assert!(out.contains("$ fn_name (& Device :: new_rocm (0) ?)"), "{out}");
        assert!(out.contains("no ROCm device"), "{out}");
        assert_eq!(counts["test-device"], 1);
    }

    #[test]
    fn a_macro_without_a_cuda_test_is_an_error() {
        let err = twin_test_functions("t.rs", "($a: ident) => { fn $a() {} };".parse().unwrap(), &mut BTreeMap::new()).unwrap_err().to_string();
        assert!(err.contains("test_device") && err.contains("update rule"), "{err}");
    }
}
