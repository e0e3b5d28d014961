//! Rule `cuda-gates`: in CUDA-only code, which names CUDA without any `cfg`
//! (a package that needs CUDA unconditionally: upstream's candle-flash-attn
//! depends on candle-core with feature `cuda`; an example that requires the
//! `cuda` feature: candle-examples' `llama_multiprocess`), every item that names CUDA gets
//! `#[cfg(feature = "cuda")]` before the twins are made, so that its ROCm twin
//! gets `#[cfg(feature = "rocm")]` and each is built only with its backend's
//! feature (the manifest rule makes both package features, or the example's
//! required features either backend turns on: `package.rs`).
//!
//! Gated: `use` items, functions, consts, statics, type aliases, `extern` blocks and macro
//! invocations that name CUDA; inside an `impl` or inline `mod` that does not
//! itself name CUDA, its items one by one (`impl FlashAttn { fn cuda_fwd_t .. }`);
//! an `impl` whose type or trait names CUDA, whole. Items already gated on a
//! feature that names CUDA are left as they are. A function that calls a gated
//! function of the file is gated too (a test that runs a gated helper:
//! `fn hd256() { paged_shuffled_block_table(256) }`), so that its twin calls the
//! helper's twin and says it skipped without a device.

use quote::ToTokens;
use syn::{Attribute, ImplItem, Item};

use super::cuda_names::{cfg_mentions_cuda, mentions_cuda};

/// Gates the CUDA items of `file`; returns how many were gated.
pub fn gate(file: &mut syn::File) -> usize {
    let mut count = gate_items(&mut file.items);
    loop {
        let gated: Vec<String> = file.items.iter().filter_map(|i| match i {
            Item::Fn(f) if cfg_mentions_cuda(&f.attrs) => Some(f.sig.ident.to_string()),
            _ => None,
        }).collect();
        let mut more = 0;
        for item in &mut file.items {
            if let Item::Fn(f) = item {
                if !cfg_mentions_cuda(&f.attrs) && calls_any(f.block.to_token_stream(), &gated) {
                    f.attrs.push(cuda_cfg());
                    more += 1;
                }
            }
        }
        if more == 0 {
            return count;
        }
        count += more;
    }
}

/// Whether `tokens` name one of `functions` followed by a call's parentheses.
pub(super) fn calls_any(tokens: proc_macro2::TokenStream, functions: &[String]) -> bool {
    let tokens: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    tokens.iter().enumerate().any(|(i, t)| match t {
        proc_macro2::TokenTree::Ident(id) => {
            functions.iter().any(|f| id == f)
                && matches!(tokens.get(i + 1), Some(proc_macro2::TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis)
        }
        proc_macro2::TokenTree::Group(g) => calls_any(g.stream(), functions),
        _ => false,
    })
}

fn cuda_cfg() -> Attribute {
    syn::parse_quote!(#[cfg(feature = "cuda")])
}

fn gate_items(items: &mut [Item]) -> usize {
    let mut count = 0;
    for item in items {
        count += match item {
            Item::Impl(imp) => {
                if cfg_mentions_cuda(&imp.attrs) {
                    0
                } else if mentions_cuda(imp.self_ty.to_token_stream()) || imp.trait_.as_ref().is_some_and(|(_, t, _)| mentions_cuda(t.to_token_stream())) {
                    imp.attrs.push(cuda_cfg());
                    1
                } else {
                    imp.items.iter_mut().map(gate_impl_item).sum()
                }
            }
            Item::Mod(m) if !cfg_mentions_cuda(&m.attrs) && m.content.is_some() && !mentions_cuda(m.ident.to_token_stream()) => {
                m.content.as_mut().map_or(0, |(_, items)| gate_items(items))
            }
            Item::Use(_) | Item::Fn(_) | Item::Const(_) | Item::Static(_) | Item::Type(_) | Item::Macro(_) | Item::Mod(_) | Item::Struct(_) | Item::Enum(_) | Item::ForeignMod(_) => {
                gate_one(item)
            }
            _ => 0,
        };
    }
    count
}

fn gate_one(item: &mut Item) -> usize {
    let names_cuda = mentions_cuda(item.to_token_stream());
    let Some(attrs) = super::node_attrs::item_attrs(item) else { return 0 };
    if !names_cuda || cfg_mentions_cuda(attrs) {
        return 0;
    }
    attrs.push(cuda_cfg());
    1
}

fn gate_impl_item(item: &mut ImplItem) -> usize {
    if !mentions_cuda(item.to_token_stream()) {
        return 0;
    }
    let attrs = match item {
        ImplItem::Fn(f) => &mut f.attrs,
        ImplItem::Const(c) => &mut c.attrs,
        ImplItem::Type(t) => &mut t.attrs,
        ImplItem::Macro(m) => &mut m.attrs,
        _ => return 0,
    };
    if cfg_mentions_cuda(attrs) {
        return 0;
    }
    attrs.push(cuda_cfg());
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gated(src: &str) -> (String, usize) {
        let mut file = syn::parse_file(src).unwrap();
        let n = gate(&mut file);
        (prettyplease::unparse(&file), n)
    }

    #[test]
    fn cuda_items_are_gated_and_the_rest_is_not() {
        let (out, n) = gated(
            "use candle::cuda_backend::cudarc::driver::DevicePtr;\nuse candle::Tensor;\nstruct A;\n\
             impl A { fn cuda_fwd_t(&self, s: &candle::CudaStorage) {} fn cpu(&self) {} }\n\
             impl candle::CustomOp1 for A { fn cuda_fwd(&self) {} }\n\
             #[test]\nfn t() { let d = Device::new_cuda(0); }\n",
        );
        assert_eq!(n, 4, "{out}");
        assert!(out.contains("#[cfg(feature = \"cuda\")]\nuse candle::cuda_backend"), "{out}");
        assert!(out.contains("#[cfg(feature = \"cuda\")]\n    fn cuda_fwd_t"), "{out}");
        assert!(out.contains("    fn cpu(&self) {}"), "{out}");
        assert!(!out.contains("#[cfg(feature = \"cuda\")]\nuse candle::Tensor"), "{out}");
        assert!(out.contains("#[test]\n#[cfg(feature = \"cuda\")]\nfn t()"), "{out}");
    }

    #[test]
    fn callers_of_gated_functions_are_gated() {
        let (out, n) = gated("#[test]\nfn hd256() -> R { helper(256) }\nfn helper(d: usize) -> R { let x = Device::new_cuda(0); }\nfn other() { helpers(1); }\n");
        assert_eq!(n, 2, "{out}");
        assert!(out.contains("#[test]\n#[cfg(feature = \"cuda\")]\nfn hd256()"), "{out}");
        assert!(out.contains("\nfn other()"), "{out}");
    }

    /// mistral.rs's launcher declarations, in a module only CUDA builds declare
    #[test]
    fn extern_blocks_that_name_cuda_are_gated() {
        let (out, n) = gated("extern \"C\" {\n    fn launch(n: usize, stream: candle_core::cuda::cudarc::driver::sys::CUstream);\n}\nextern \"C\" {\n    fn plain(n: usize);\n}\n");
        assert_eq!(n, 1, "{out}");
        assert!(out.starts_with("#[cfg(feature = \"cuda\")]\nextern \"C\" {\n    fn launch("), "{out}");
        assert!(out.contains("}\nextern \"C\" {\n    fn plain("), "{out}");
    }

    #[test]
    fn items_already_gated_stay_as_they_are() {
        let src = "#[cfg(feature = \"cuda\")]\nfn new_cuda() {}\n";
        let (out, n) = gated(src);
        assert_eq!((out.as_str(), n), (src, 0));
    }
}
