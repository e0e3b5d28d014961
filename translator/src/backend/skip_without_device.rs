//! Rule `device-tests-skip`: a ROCm test function (in a mirrored file, or a
//! twin of a CUDA-gated test) starts by asking the HIP runtime how many
//! devices there are; with none it prints `skipped: <test>: no ROCm device`
//! and returns without running. It did not run, and it says so; on a machine
//! with a device it runs as upstream's CUDA test does.

use quote::quote;
use syn::visit_mut::VisitMut;

/// Adds the device check to every `#[test]` function in `file`, reaching the
/// HIP layer through `krate` (`crate` inside candle-core, `candle_core` or
/// `candle` in a test crate). Returns how many were changed.
pub fn add_to_tests(file: &mut syn::File, krate: &syn::Path) -> usize {
    let mut pass = AddSkip { krate, count: 0 };
    pass.visit_file_mut(file);
    pass.count
}

/// Adds the device check to one function if it is a `#[test]`.
pub fn add_to_test_fn(f: &mut syn::ItemFn, krate: &syn::Path) -> bool {
    if !f.attrs.iter().any(|a| a.path().is_ident("test")) {
        return false;
    }
    let done = if matches!(f.sig.output, syn::ReturnType::Default) { quote!(return;) } else { quote!(return Ok(());) };
    let check: syn::Stmt = syn::parse_quote! {
        match #krate::rocm_backend::candle_rocm_hip::driver::HipContext::device_count() {
            Ok(n) if n > 0 => {}
            other => {
                eprintln!("skipped: {}: no ROCm device ({:?})", module_path!(), other);
                #done
            }
        }
    };
    f.block.stmts.insert(0, check);
    true
}

struct AddSkip<'a> {
    krate: &'a syn::Path,
    count: usize,
}

impl VisitMut for AddSkip<'_> {
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        if add_to_test_fn(f, self.krate) {
            self.count += 1;
        }
        syn::visit_mut::visit_item_fn_mut(self, f);
    }
}

/// How a file reaches candle-core: `crate` inside it, else the name a test
/// crate uses for it (`candle_core`, or `candle` as candle-nn renames it).
pub fn candle_core_path(file: &syn::File) -> syn::Path {
    fn idents(stream: proc_macro2::TokenStream, out: &mut std::collections::BTreeSet<String>) {
        for t in stream {
            match t {
                proc_macro2::TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                proc_macro2::TokenTree::Group(g) => idents(g.stream(), out),
                _ => {}
            }
        }
    }
    // identifiers only: doc comments (string literals) mention crates too
    let mut found = std::collections::BTreeSet::new();
    idents(quote::ToTokens::to_token_stream(file), &mut found);
    let uses = |name: &str| found.contains(name);
    if uses("candle_core") {
        syn::parse_quote!(candle_core)
    } else if uses("candle") {
        syn::parse_quote!(candle)
    } else {
        syn::parse_quote!(crate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_get_the_device_check_and_other_functions_do_not() {
        let mut file: syn::File = syn::parse_str("#[test]\nfn t() -> Result<()> { let d = RocmDevice::new(0)?; Ok(()) }\n#[test]\nfn u() {}\nfn helper() {}\n").unwrap();
        assert_eq!(add_to_tests(&mut file, &syn::parse_quote!(crate)), 2);
        let out = prettyplease::unparse(&file);
        assert!(out.contains("match crate::rocm_backend::candle_rocm_hip::driver::HipContext::device_count()"), "{out}");
        assert!(out.contains("return Ok(());") && out.contains("return;"), "{out}");
        assert_eq!(out.matches("device_count").count(), 2, "{out}");
    }

    #[test]
    fn the_crate_path_follows_the_file() {
        let f = |s: &str| quote::ToTokens::to_token_stream(&candle_core_path(&syn::parse_str(s).unwrap())).to_string();
        assert_eq!(f("use candle_core::Device;"), "candle_core");
        assert_eq!(f("use candle::Device;"), "candle");
        assert_eq!(f("use crate::Device;"), "crate");
        assert_eq!(f("/// use candle_core::Device;\nfn f() {}"), "crate");
    }
}
