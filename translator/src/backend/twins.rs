//! Rule `twins`: outside the CUDA backend itself, every CUDA-specific node of
//! candle-core gets a ROCm twin, inserted right after it and produced by the
//! token rules of [`super::rules`] (then pruned by [`super::cfg`]):
//!
//! * items, impl items and trait items named for CUDA (`fn new_cuda`,
//!   `fn cuda_fwd`, `mod cuda_backend`), gated on the `cuda` feature, `impl`s
//!   for a CUDA type, and macro invocations that mention CUDA
//!   (`forward_op1!(cuda_fwd, ...)`);
//! * enum variants (`Storage::Cuda(CudaStorage)` → `Rocm(RocmStorage)`);
//! * match arms whose pattern mentions CUDA (`(Self::Cuda(a), Self::Cuda(b))`);
//!   an or-pattern that mixes backends gets the twin case inside it instead
//!   (`Self::Cuda(_) | Self::Metal(_)` → `Self::Cuda(_) | Self::Rocm(_) | ...`);
//! * statements gated on the `cuda` feature, and calls of a function of Candle's
//!   `cuda` module that no gate guards (`candle::cuda::set_gemm_reduced_precision_f16(true)`:
//!   that module is the CUDA backend or its dummy in every build, so the call only ever
//!   sets the CUDA backend's state; the twin calls the `rocm` module's, which is the
//!   ROCm backend or its dummy);
//! * imports: a CUDA name inside a `use` group gets its twin beside it
//!   (`use crate::{CpuStorage, CudaStorage}` → `..., CudaStorage, RocmStorage}`),
//!   a `use` through a CUDA path is twinned whole.
//!
//! A twin is never searched again (it is ROCm through and through), and the
//! original is kept byte-for-byte in meaning: the CUDA backend stays.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit_mut::VisitMut;
use syn::{Arm, Attribute, ImplItem, Item, Pat, Stmt, TraitItem, UseTree, Variant};

use super::cfg::{self, Verdict};
use super::cuda_names::{cfg_mentions_cuda, is_cuda_ident, mentions_cuda, mentions_rocm};
use super::gaps::{describe, Gap};
use super::mapping::{FOREIGN_BACKEND_VARIANTS, UNTWINNED_ITEMS};
use super::node_attrs::{item_attrs, stmt_attrs};
use super::pass::FileState;
use super::prune::Pruner;
use super::rules::{self, replace_in_literals};
use super::{skip_without_device, test_device_macro};
use crate::TranslateError;

/// Pass `twins` over a whole file (what the module's docs list); its rewrites
/// are counted under their own names, so it returns 0.
pub fn apply(state: &mut FileState, file: &mut syn::File) -> Result<usize, TranslateError> {
    let krate = skip_without_device::candle_core_path(file);
    let mut pass = TwinPass { file: state.file, counts: &mut state.counts, gaps: &mut state.gaps, error: None, krate };
    pass.visit_file_mut(file);
    pass.error.map_or(Ok(0), Err)
}

/// The pass over one file. Errors and gaps are collected; the first error
/// wins.
pub struct TwinPass<'a> {
    pub file: &'a str,
    pub counts: &'a mut BTreeMap<&'static str, usize>,
    pub gaps: &'a mut Vec<Gap>,
    pub error: Option<TranslateError>,
    /// How this file reaches candle-core (for rule `device-tests-skip`).
    pub krate: syn::Path,
}

trait Twinnable: Sized + ToTokens {
    fn parse_twin(tokens: TokenStream) -> syn::Result<Self>;
    fn attrs_mut(&mut self) -> Option<&mut Vec<Attribute>>;
    fn prune(&mut self, pruner: &mut Pruner);
    fn complete_matches(&mut self, rule: &mut ExhaustiveTwins);
    /// What the node declares (a function's name, an impl's type and
    /// trait): a twin that declares the same must not coexist with it.
    fn declares(&self) -> Option<String> {
        None
    }
}

macro_rules! twinnable {
    ($ty:ty, $visit:ident, |$n:ident| $attrs:expr) => {
        twinnable!($ty, $visit, |$n| $attrs, |_n| None);
    };
    ($ty:ty, $visit:ident, |$n:ident| $attrs:expr, |$d:ident| $declares:expr) => {
        impl Twinnable for $ty {
            fn parse_twin(tokens: TokenStream) -> syn::Result<Self> {
                syn::parse2(tokens)
            }
            fn attrs_mut(&mut self) -> Option<&mut Vec<Attribute>> {
                let $n = self;
                $attrs
            }
            fn prune(&mut self, pruner: &mut Pruner) {
                pruner.$visit(self)
            }
            fn complete_matches(&mut self, rule: &mut ExhaustiveTwins) {
                rule.$visit(self)
            }
            fn declares(&self) -> Option<String> {
                let $d = self;
                $declares
            }
        }
    };
}

twinnable!(Item, visit_item_mut, |n| item_attrs(n), |n| match n {
    Item::Fn(x) => Some(x.sig.ident.to_string()),
    Item::Mod(x) => Some(x.ident.to_string()),
    Item::Struct(x) => Some(x.ident.to_string()),
    Item::Enum(x) => Some(x.ident.to_string()),
    Item::Union(x) => Some(x.ident.to_string()),
    Item::Type(x) => Some(x.ident.to_string()),
    Item::Const(x) => Some(x.ident.to_string()),
    Item::Static(x) => Some(x.ident.to_string()),
    Item::Trait(x) => Some(x.ident.to_string()),
    Item::Use(x) => Some(x.tree.to_token_stream().to_string()),
    Item::Impl(x) => Some(format!("impl {} for {}", x.trait_.as_ref().map(|(_, p, _)| p.to_token_stream().to_string()).unwrap_or_default(), x.self_ty.to_token_stream())),
    _ => None,
});
twinnable!(ImplItem, visit_impl_item_mut, |n| match n {
    ImplItem::Const(x) => Some(&mut x.attrs),
    ImplItem::Fn(x) => Some(&mut x.attrs),
    ImplItem::Type(x) => Some(&mut x.attrs),
    ImplItem::Macro(x) => Some(&mut x.attrs),
    _ => None,
}, |n| match n {
    ImplItem::Fn(x) => Some(x.sig.ident.to_string()),
    ImplItem::Const(x) => Some(x.ident.to_string()),
    ImplItem::Type(x) => Some(x.ident.to_string()),
    _ => None,
});
twinnable!(TraitItem, visit_trait_item_mut, |n| match n {
    TraitItem::Const(x) => Some(&mut x.attrs),
    TraitItem::Fn(x) => Some(&mut x.attrs),
    TraitItem::Type(x) => Some(&mut x.attrs),
    TraitItem::Macro(x) => Some(&mut x.attrs),
    _ => None,
}, |n| match n {
    TraitItem::Fn(x) => Some(x.sig.ident.to_string()),
    TraitItem::Const(x) => Some(x.ident.to_string()),
    TraitItem::Type(x) => Some(x.ident.to_string()),
    _ => None,
});
twinnable!(Variant, visit_variant_mut, |n| Some(&mut n.attrs));

/// A struct's named field under a CUDA cfg (`#[cfg(feature = "cuda")] weights: ..`).
impl Twinnable for syn::Field {
    fn parse_twin(tokens: TokenStream) -> syn::Result<Self> {
        syn::parse::Parser::parse2(syn::Field::parse_named, tokens)
    }
    fn attrs_mut(&mut self) -> Option<&mut Vec<Attribute>> {
        Some(&mut self.attrs)
    }
    fn prune(&mut self, pruner: &mut Pruner) {
        pruner.visit_field_mut(self)
    }
    fn complete_matches(&mut self, rule: &mut ExhaustiveTwins) {
        rule.visit_field_mut(self)
    }
    fn declares(&self) -> Option<String> {
        self.ident.as_ref().map(|i| i.to_string())
    }
}
twinnable!(Arm, visit_arm_mut, |n| Some(&mut n.attrs));

impl Twinnable for Stmt {
    fn parse_twin(tokens: TokenStream) -> syn::Result<Self> {
        let block: syn::Block = syn::parse2(quote::quote!({ #tokens }))?;
        block.stmts.into_iter().next().ok_or_else(|| syn::Error::new(proc_macro2::Span::call_site(), "empty statement"))
    }
    fn attrs_mut(&mut self) -> Option<&mut Vec<Attribute>> {
        stmt_attrs(self)
    }
    fn prune(&mut self, pruner: &mut Pruner) {
        pruner.visit_stmt_mut(self)
    }
    fn complete_matches(&mut self, rule: &mut ExhaustiveTwins) {
        rule.visit_stmt_mut(self)
    }
}

/// Rule `exhaustive-twins`: a CUDA-only function that matches on a device
/// enum (`as_cuda_device`: `Self::Cuda(d) => Ok(d)`, `Self::Metal(_) =>
/// bail!(...)`) lacks an arm for the ROCm variant, and its twin one for the
/// CUDA variant. The arm of a foreign backend ([`FOREIGN_BACKEND_VARIANTS`])
/// is the model: `Self::Rocm(_) => bail!("expected a cuda device, got rocm")`.
pub struct ExhaustiveTwins<'a> {
    own: &'static str,
    other: &'static str,
    counts: &'a mut BTreeMap<&'static str, usize>,
}

fn arm_variant(pat: &Pat) -> Option<String> {
    let path = match pat {
        Pat::TupleStruct(p) => &p.path,
        Pat::Path(p) => &p.path,
        Pat::Struct(p) => &p.path,
        _ => return None,
    };
    path.segments.last().map(|s| s.ident.to_string())
}

impl VisitMut for ExhaustiveTwins<'_> {
    fn visit_expr_match_mut(&mut self, m: &mut syn::ExprMatch) {
        syn::visit_mut::visit_expr_match_mut(self, m);
        let catch_all = m.arms.iter().any(|a| matches!(&a.pat, Pat::Wild(_) | Pat::Ident(syn::PatIdent { subpat: None, .. })));
        // the variants each arm covers (an or-pattern covers several)
        let variants: Vec<Vec<String>> = m.arms.iter().map(|a| arm_cases(&a.pat).iter().filter_map(|c| arm_variant(c)).collect()).collect();
        let has = |v: &str| variants.iter().flatten().any(|x| x == v);
        if catch_all || !has(self.own) || has(self.other) {
            return;
        }
        let Some((model, foreign)) = variants.iter().enumerate().find_map(|(i, vs)| vs.iter().find(|v| FOREIGN_BACKEND_VARIANTS.contains(&v.as_str())).map(|v| (i, v.clone()))) else { return };
        let rename_variant = |pat: &Pat, to: &str| -> Option<Pat> {
            let mut pat = pat.clone();
            let path = match &mut pat {
                Pat::TupleStruct(p) => &mut p.path,
                Pat::Path(p) => &mut p.path,
                Pat::Struct(p) => &mut p.path,
                _ => return None,
            };
            path.segments.last_mut()?.ident = syn::Ident::new(to, proc_macro2::Span::call_site());
            Some(pat)
        };
        if let Pat::Or(or) = &mut m.arms[model].pat {
            // `Metal(_) | Cpu(_) => bail!(..)`: one more case
            let Some(case) = or.cases.iter().find(|c| arm_variant(c).as_deref() == Some(foreign.as_str())).and_then(|c| rename_variant(c, self.other)) else { return };
            or.cases.push(case);
        } else {
            let mut arm = m.arms[model].clone();
            let Some(pat) = rename_variant(&arm.pat, self.other) else { return };
            arm.pat = pat;
            let word = self.other.to_ascii_lowercase();
            let body = replace_in_literals(arm.body.to_token_stream(), &foreign, &word);
            let Ok(body) = syn::parse2(body) else { return };
            arm.body = Box::new(body);
            m.arms.insert(model + 1, arm);
        }
        *self.counts.entry("exhaustive-twins").or_default() += 1;
    }
}

fn arm_cases(pat: &Pat) -> Vec<&Pat> {
    match pat {
        Pat::Or(or) => or.cases.iter().collect(),
        other => vec![other],
    }
}

/// A statement that calls a function of Candle's `cuda` module by its path
/// (`candle::cuda::f(..)` or `candle_core::cuda::f(..)`).
fn calls_candle_cuda_module(stmt: &Stmt) -> bool {
    let Stmt::Expr(syn::Expr::Call(call), _) = stmt else { return false };
    let syn::Expr::Path(p) = &*call.func else { return false };
    let segments: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    segments.len() == 3 && matches!(segments[0].as_str(), "candle" | "candle_core") && segments[1] == "cuda"
}

fn item_is_cuda_specific(item: &mut Item) -> bool {
    if item_attrs(item).is_some_and(|a| cfg_mentions_cuda(a)) {
        return true;
    }
    let ident = |i: &syn::Ident| is_cuda_ident(&i.to_string());
    match item {
        Item::Fn(x) => ident(&x.sig.ident),
        Item::Mod(x) => ident(&x.ident),
        Item::Struct(x) => ident(&x.ident),
        Item::Enum(x) => ident(&x.ident),
        Item::Union(x) => ident(&x.ident),
        Item::Type(x) => ident(&x.ident),
        Item::Const(x) => ident(&x.ident),
        Item::Static(x) => ident(&x.ident),
        Item::Trait(x) => ident(&x.ident),
        Item::Macro(x) => match &x.ident {
            Some(name) => ident(name),
            // an invocation is twinned for its macro's name (`cuda_dtype!`),
            // not for names it passes along (`test_device!(a, a_cpu, a_cuda,
            // a_metal)`: the macro has its own ROCm twin, rule `test-device`)
            None => x.mac.path.segments.iter().any(|s| ident(&s.ident)),
        },
        Item::Impl(x) => mentions_cuda(x.self_ty.to_token_stream()) || x.trait_.as_ref().is_some_and(|(_, p, _)| mentions_cuda(p.to_token_stream())),
        Item::Use(x) => use_is_cuda_specific(&x.tree),
        _ => false,
    }
}

/// A `use` is twinned whole when a path segment (not a leaf in a group)
/// names CUDA; CUDA leaves inside groups are twinned in place instead.
fn use_is_cuda_specific(tree: &UseTree) -> bool {
    match tree {
        UseTree::Path(p) => is_cuda_ident(&p.ident.to_string()) || use_is_cuda_specific(&p.tree),
        UseTree::Name(n) => is_cuda_ident(&n.ident.to_string()),
        UseTree::Rename(r) => is_cuda_ident(&r.ident.to_string()),
        UseTree::Glob(_) | UseTree::Group(_) => false,
    }
}

fn impl_item_is_cuda_specific(item: &mut ImplItem) -> bool {
    let by_cfg = Twinnable::attrs_mut(item).is_some_and(|a| cfg_mentions_cuda(a));
    by_cfg
        || match item {
            ImplItem::Fn(x) => is_cuda_ident(&x.sig.ident.to_string()),
            ImplItem::Const(x) => is_cuda_ident(&x.ident.to_string()),
            ImplItem::Type(x) => is_cuda_ident(&x.ident.to_string()),
            ImplItem::Macro(x) => mentions_cuda(x.mac.tokens.clone()),
            _ => false,
        }
}

fn trait_item_is_cuda_specific(item: &mut TraitItem) -> bool {
    let by_cfg = Twinnable::attrs_mut(item).is_some_and(|a| cfg_mentions_cuda(a));
    by_cfg
        || match item {
            TraitItem::Fn(x) => is_cuda_ident(&x.sig.ident.to_string()),
            TraitItem::Const(x) => is_cuda_ident(&x.ident.to_string()),
            TraitItem::Type(x) => is_cuda_ident(&x.ident.to_string()),
            TraitItem::Macro(x) => mentions_cuda(x.mac.tokens.clone()),
            _ => false,
        }
}

/// Rule `same-name-imports`: an import without a cfg whose twin binds the same names
/// (`use crate::cuda::moe;` → `use crate::rocm::moe;`: mistralrs-core's `cuda` module is
/// compiled by every build, and has a mirrored `rocm` twin) would clash with it: the twin
/// is the ROCm build's (`cfg(feature = "rocm")`), the original every other build's
/// (`cfg(not(feature = "rocm"))`). Whether it applied.
fn ungated_imports_of_one_name<T: Twinnable + 'static>(node: &mut T, twin: &mut T) -> bool {
    let (Some(Item::Use(original)), Some(Item::Use(import))) = ((node as &mut dyn std::any::Any).downcast_mut::<Item>(), (twin as &mut dyn std::any::Any).downcast_mut::<Item>()) else {
        return false;
    };
    let ungated = |u: &syn::ItemUse| !u.attrs.iter().any(|a| a.path().is_ident("cfg"));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    use_bindings(&original.tree, &mut a);
    use_bindings(&import.tree, &mut b);
    if !(ungated(original) && ungated(import) && !a.is_empty() && a == b) {
        return false;
    }
    original.attrs.push(syn::parse_quote!(#[cfg(not(feature = "rocm"))]));
    import.attrs.push(syn::parse_quote!(#[cfg(feature = "rocm")]));
    true
}

/// The names a `use` tree binds (`_` and globs bind none that can clash).
fn use_bindings(tree: &UseTree, out: &mut Vec<String>) {
    match tree {
        UseTree::Path(p) => use_bindings(&p.tree, out),
        UseTree::Name(n) => out.push(n.ident.to_string()),
        UseTree::Rename(r) if r.rename != "_" => out.push(r.rename.to_string()),
        UseTree::Group(g) => g.items.iter().for_each(|t| use_bindings(t, out)),
        UseTree::Rename(_) | UseTree::Glob(_) => {}
    }
}

/// Rule `extern-link-names`: a function of an `extern` block's twin whose name the
/// words rule changed (`gemm_half_q_half_cuda_part` → `..._rocm_part`) is still the
/// kernel library's symbol of the original name, which the kernel rules keep: the twin
/// declares it with `#[link_name]`, so Rust callers use the ROCm name. How many.
fn keep_link_names(original: &syn::ItemForeignMod, twin: &mut syn::ItemForeignMod) -> usize {
    let mut count = 0;
    for (from, to) in original.items.iter().zip(twin.items.iter_mut()) {
        let (syn::ForeignItem::Fn(from), syn::ForeignItem::Fn(to)) = (from, to) else { continue };
        let has_link_name = to.attrs.iter().any(|a| a.path().is_ident("link_name"));
        if from.sig.ident != to.sig.ident && !has_link_name {
            let symbol = from.sig.ident.to_string();
            to.attrs.push(syn::parse_quote!(#[link_name = #symbol]));
            count += 1;
        }
    }
    count
}

impl TwinPass<'_> {
    fn line_of(node: &impl ToTokens) -> u32 {
        node.to_token_stream().into_iter().next().map(|t| t.span().start().line as u32).unwrap_or(0)
    }

    /// The ROCm twin of `node`, or `None` when it is left out (a gap) or
    /// does not parse (an error).
    fn twin<T: Twinnable + 'static>(&mut self, node: &T) -> Option<T> {
        let tokens = rules::rewrite(node.to_token_stream(), self.counts);
        let mut twin = match T::parse_twin(tokens) {
            Ok(t) => t,
            Err(e) => {
                let line = Self::line_of(node);
                self.error.get_or_insert_with(|| TranslateError::unsupported(self.file, line, &describe(node), format!("its ROCm twin does not parse: {e}")));
                return None;
            }
        };
        if let Some(attrs) = twin.attrs_mut() {
            if let Verdict::Drop { feature, reason } = cfg::apply(attrs) {
                self.gaps.push(Gap::new(self.file, Self::line_of(node), &describe(node), feature, reason));
                return None;
            }
        }
        let mut pruner = Pruner { file: self.file, gaps: self.gaps };
        twin.prune(&mut pruner);
        if let (Some(Item::ForeignMod(original)), Some(Item::ForeignMod(declared))) = ((node as &dyn std::any::Any).downcast_ref::<Item>(), (&mut twin as &mut dyn std::any::Any).downcast_mut::<Item>()) {
            *self.counts.entry("extern-link-names").or_default() += keep_link_names(original, declared);
        }
        if let Some(Item::Fn(f)) = (&mut twin as &mut dyn std::any::Any).downcast_mut::<Item>() {
            if skip_without_device::add_to_test_fn(f, &self.krate) {
                *self.counts.entry("device-tests-skip").or_default() += 1;
            }
        }
        *self.counts.entry("twins").or_default() += 1;
        Some(twin)
    }

    /// Rule `exhaustive-twins` on an original and its twin: the matches inside each
    /// stay exhaustive (the original's gain the `Rocm` arm, the twin's the `Cuda` arm).
    fn complete_matches<T: Twinnable>(&mut self, node: &mut T, twin: Option<&mut T>) {
        node.complete_matches(&mut ExhaustiveTwins { own: "Cuda", other: "Rocm", counts: self.counts });
        if let Some(t) = twin {
            t.complete_matches(&mut ExhaustiveTwins { own: "Rocm", other: "Cuda", counts: self.counts });
        }
    }

    fn twin_list<T: Twinnable + 'static>(&mut self, list: Vec<T>, mut specific: impl FnMut(&mut T) -> bool, mut recurse: impl FnMut(&mut Self, &mut T)) -> Vec<T> {
        let mut out = Vec::with_capacity(list.len());
        for mut node in list {
            if specific(&mut node) && self.merge_negative_cfg(&mut node) {
                out.push(node);
            } else if specific(&mut node) {
                let mut twin = self.twin(&node);
                self.complete_matches(&mut node, twin.as_mut());
                if let Some(t) = &mut twin {
                    if ungated_imports_of_one_name(&mut node, t) {
                        *self.counts.entry("same-name-imports").or_default() += 1;
                    } else if t.declares().is_some() && t.declares() == node.declares() {
                        let keep_twin = self.same_name_twins(&mut node, t);
                        if !keep_twin {
                            twin = None;
                        }
                    }
                }
                out.push(node);
                out.extend(twin);
            } else {
                recurse(self, &mut node);
                out.push(node);
            }
        }
        out
    }

    /// Rule `negative-cfg-merge`: a fallback for builds without CUDA that
    /// names nothing of CUDA itself (`#[cfg(not(any(feature = "cuda",
    /// feature = "metal")))] { Ok(Self { name }) }`) is the fallback for
    /// builds without any GPU backend: its cfg becomes `all(not(any(cuda,
    /// metal)), not(any(rocm, metal)))` and it gets no twin (a twin would be a
    /// second copy of the same code, compiled beside the first with `rocm`).
    /// Returns whether the node was merged.
    fn merge_negative_cfg<T: Twinnable>(&mut self, node: &mut T) -> bool {
        let Some(attrs) = node.attrs_mut() else { return false };
        let Some(i) = attrs.iter().position(|a| a.path().is_ident("cfg") && mentions_cuda(a.meta.to_token_stream())) else { return false };
        let Ok(p) = attrs[i].parse_args::<syn::Meta>() else { return false };
        if !matches!(&p, syn::Meta::List(l) if l.path.is_ident("not")) {
            return false;
        }
        let saved = std::mem::take(attrs);
        let body_names_cuda = mentions_cuda(node.to_token_stream());
        *node.attrs_mut().expect("had attributes") = saved;
        if body_names_cuda {
            return false;
        }
        let Ok(q) = syn::parse2::<syn::Meta>(rules::rewrite(p.to_token_stream(), self.counts)) else { return false };
        node.attrs_mut().expect("had attributes")[i] = syn::parse_quote!(#[cfg(all(#p, #q))]);
        *self.counts.entry("negative-cfg-merge").or_default() += 1;
        true
    }

    /// Rule `same-name-twins`: a twin that declares what the original
    /// declares (`#[cfg(feature = "cuda")] fn moe_gemm` → `#[cfg(feature =
    /// "rocm")] fn moe_gemm`) must not be compiled beside it. A CUDA version
    /// keeps precedence when both features are on (the twin gets `all(rocm,
    /// not(cuda))`); a fallback for builds without CUDA (`not(cuda)`) becomes
    /// the fallback for builds with neither (`all(not(cuda), not(rocm))`) and
    /// has no twin. Returns whether the twin stays.
    fn same_name_twins<T: Twinnable>(&mut self, node: &mut T, twin: &mut T) -> bool {
        let line = Self::line_of(node);
        let cfg_of = |attrs: Option<&mut Vec<Attribute>>| -> Option<(usize, syn::Meta)> {
            let attrs = attrs?;
            attrs.iter().enumerate().find(|(_, a)| a.path().is_ident("cfg") && mentions_cuda(a.meta.to_token_stream()) || a.path().is_ident("cfg") && mentions_rocm(a.meta.to_token_stream())).and_then(|(i, a)| a.parse_args::<syn::Meta>().ok().map(|m| (i, m)))
        };
        let (Some((i, p)), Some((j, q))) = (cfg_of(node.attrs_mut()), cfg_of(twin.attrs_mut())) else {
            self.error.get_or_insert_with(|| TranslateError::unsupported(self.file, line, &describe(node), "its ROCm twin declares the same name and no `cuda` cfg tells them apart"));
            return false;
        };
        *self.counts.entry("same-name-twins").or_default() += 1;
        let negative = matches!(&p, syn::Meta::List(l) if l.path.is_ident("not"));
        if negative {
            node.attrs_mut().expect("has a cfg")[i] = syn::parse_quote!(#[cfg(all(#p, #q))]);
            false
        } else {
            twin.attrs_mut().expect("has a cfg")[j] = syn::parse_quote!(#[cfg(all(#q, not(#p)))]);
            true
        }
    }

    fn twin_items(&mut self, items: &mut Vec<Item>) {
        let list = std::mem::take(items);
        *items = self.twin_list(list, item_is_cuda_specific, |s, i| s.visit_item_mut(i));
    }

    /// `A | Cuda | B` → `A | Cuda | Rocm | B`, when the body is backend-neutral.
    fn twin_or_cases(&mut self, arm: &mut Arm) -> bool {
        let Pat::Or(or) = &mut arm.pat else { return false };
        if or.cases.iter().all(|c| mentions_cuda(c.to_token_stream())) || mentions_cuda(arm.body.to_token_stream()) {
            return false;
        }
        let mut cases = syn::punctuated::Punctuated::new();
        for case in std::mem::take(&mut or.cases) {
            let specific = mentions_cuda(case.to_token_stream());
            let twin = specific.then(|| rules::rewrite(case.to_token_stream(), self.counts));
            cases.push(case);
            if let Some(tokens) = twin {
                match syn::parse::Parser::parse2(Pat::parse_single, tokens) {
                    Ok(p) => {
                        cases.push(p);
                        *self.counts.entry("twins").or_default() += 1;
                    }
                    Err(e) => {
                        self.error.get_or_insert_with(|| TranslateError::unsupported(self.file, 0, "or-pattern", format!("its ROCm twin does not parse: {e}")));
                    }
                }
            }
        }
        or.cases = cases;
        true
    }
}

impl VisitMut for TwinPass<'_> {
    fn visit_file_mut(&mut self, file: &mut syn::File) {
        self.twin_items(&mut file.items);
    }

    fn visit_item_mod_mut(&mut self, m: &mut syn::ItemMod) {
        if let Some((_, items)) = &mut m.content {
            self.twin_items(items);
        }
    }

    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        // rule `untwinned-items`: upstream items built on something without a ROCm backend
        let self_ty = i.self_ty.to_token_stream().to_string();
        if let Some((name, feature, reason)) = UNTWINNED_ITEMS.iter().find(|(name, _, _)| self_ty == *name) {
            let construct = format!("impl {}for {name}", i.trait_.as_ref().map(|(_, p, _)| format!("{} ", p.to_token_stream())).unwrap_or_default());
            self.gaps.push(Gap::new(self.file, Self::line_of(i), &construct, feature, reason));
            *self.counts.entry("untwinned-items").or_default() += 1;
            return;
        }
        let list = std::mem::take(&mut i.items);
        i.items = self.twin_list(list, impl_item_is_cuda_specific, |s, n| s.visit_impl_item_mut(n));
    }

    fn visit_item_trait_mut(&mut self, t: &mut syn::ItemTrait) {
        let list = std::mem::take(&mut t.items);
        t.items = self.twin_list(list, trait_item_is_cuda_specific, |s, n| s.visit_trait_item_mut(n));
    }

    fn visit_item_struct_mut(&mut self, st: &mut syn::ItemStruct) {
        // a type without ROCm twins (UNTWINNED_ITEMS: ug's UgIOp1) keeps its fields as they are,
        // as its impls, which initialize them, get no twins
        if UNTWINNED_ITEMS.iter().any(|(name, _, _)| st.ident == name) {
            return;
        }
        syn::visit_mut::visit_item_struct_mut(self, st);
    }

    fn visit_fields_named_mut(&mut self, f: &mut syn::FieldsNamed) {
        let list: Vec<syn::Field> = std::mem::take(&mut f.named).into_iter().collect();
        let out = self.twin_list(list, |field| cfg_mentions_cuda(&field.attrs), |s, field| s.visit_field_mut(field));
        f.named = out.into_iter().collect();
    }

    fn visit_item_enum_mut(&mut self, e: &mut syn::ItemEnum) {
        let list: Vec<Variant> = std::mem::take(&mut e.variants).into_iter().collect();
        let out = self.twin_list(list, |v| mentions_cuda(v.to_token_stream()), |_, _| {});
        e.variants = out.into_iter().collect();
    }

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let list = std::mem::take(&mut b.stmts);
        b.stmts = self.twin_list(
            list,
            |s| match s {
                Stmt::Item(i) => item_is_cuda_specific(i),
                other => stmt_attrs(other).is_some_and(|a| cfg_mentions_cuda(a)) || calls_candle_cuda_module(other),
            },
            |s, n| s.visit_stmt_mut(n),
        );
    }

    fn visit_expr_match_mut(&mut self, m: &mut syn::ExprMatch) {
        self.visit_expr_mut(&mut m.expr);
        let list = std::mem::take(&mut m.arms);
        let mut out = Vec::with_capacity(list.len());
        for mut arm in list {
            if self.twin_or_cases(&mut arm) {
                out.push(arm);
                continue;
            }
            let specific = mentions_cuda(arm.pat.to_token_stream()) || cfg_mentions_cuda(&arm.attrs);
            if specific {
                let mut twin = self.twin(&arm);
                // matches inside the arm and its twin stay exhaustive (mistralrs-core's
                // device map matches `d.location()` again inside its `Cuda` arm)
                self.complete_matches(&mut arm, twin.as_mut());
                out.push(arm);
                out.extend(twin);
            } else {
                self.visit_arm_mut(&mut arm);
                out.push(arm);
            }
        }
        m.arms = out;
    }

    fn visit_use_tree_mut(&mut self, tree: &mut UseTree) {
        match tree {
            UseTree::Path(p) => self.visit_use_tree_mut(&mut p.tree),
            UseTree::Group(g) => {
                let mut out = syn::punctuated::Punctuated::new();
                for mut leaf in std::mem::take(&mut g.items) {
                    self.visit_use_tree_mut(&mut leaf);
                    let twin = use_is_cuda_specific(&leaf).then(|| rules::rewrite(leaf.to_token_stream(), self.counts));
                    out.push(leaf);
                    if let Some(tokens) = twin {
                        match syn::parse2::<UseTree>(tokens) {
                            Ok(t) => {
                                out.push(t);
                                *self.counts.entry("twins").or_default() += 1;
                            }
                            Err(e) => {
                                self.error.get_or_insert_with(|| TranslateError::unsupported(self.file, 0, "use", format!("its ROCm twin does not parse: {e}")));
                            }
                        }
                    }
                }
                g.items = out;
            }
            _ => {}
        }
    }

    fn visit_item_macro_mut(&mut self, m: &mut syn::ItemMacro) {
        if let Some(name) = &m.ident {
            if let Some(rule) = test_device_macro::rule_for(&name.to_string()) {
                match rule(self.file, m.mac.tokens.clone(), self.counts) {
                    Ok(tokens) => m.mac.tokens = tokens,
                    Err(e) => {
                        self.error.get_or_insert(e);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::twin_file;

    fn twin(src: &str) -> String {
        let out = twin_file("t.rs", "test", src).unwrap();
        out.text.lines().skip(1).collect::<Vec<_>>().join("\n")
    }

    /// mistralrs-core's device map: a match inside a `Cuda` arm, and so inside its twin
    #[test]
    fn matches_inside_a_twinned_arm_stay_exhaustive() {
        let out = twin("fn f(l: L) -> u32 {\n    match l {\n        L::Cpu => 0,\n        L::Cuda { gpu_id } => match other() {\n            L::Cpu => 0,\n            L::Cuda { gpu_id } => gpu_id,\n            L::Metal { gpu_id } => gpu_id,\n        },\n        L::Metal { gpu_id } => gpu_id,\n    }\n}\n");
        assert_eq!(out.matches("L::Rocm { gpu_id } => gpu_id,").count(), 2, "{out}");
        assert_eq!(out.matches("L::Cuda { gpu_id } => gpu_id,").count(), 2, "{out}");
    }

    /// mistralrs-core's MlaWeights: a field for CUDA builds, another for the rest
    #[test]
    fn gated_fields_get_twins() {
        let out = twin("pub struct W {\n    #[cfg(feature = \"cuda\")]\n    weights: Option<T>,\n    #[cfg(not(feature = \"cuda\"))]\n    _phantom: P,\n}\n");
        assert!(out.contains("#[cfg(feature = \"cuda\")]\n    weights: Option<T>,\n    #[cfg(all(feature = \"rocm\", not(feature = \"cuda\")))]\n    weights: Option<T>,"), "{out}");
        assert!(out.contains("#[cfg(all(not(feature = \"cuda\"), not(feature = \"rocm\")))]\n    _phantom: P,"), "{out}");
    }

    /// mistralrs-core's MoE: a block's value from a CUDA block or a non-CUDA tail expression
    #[test]
    fn a_gated_tail_expression_is_the_fallback_of_both_backends() {
        let out = twin("fn f() -> R {\n    let x = if p {\n        #[cfg(feature = \"cuda\")]\n        { a()? }\n        #[cfg(not(feature = \"cuda\"))]\n        b()?\n    } else { c()? };\n    x\n}\n");
        assert!(out.contains("#[cfg(feature = \"rocm\")] { a()? }\n        #[cfg(all(not(feature = \"cuda\"), not(feature = \"rocm\")))] b()?"), "{out}");
    }

    #[test]
    fn ungated_imports_of_one_name_are_told_apart_by_the_rocm_feature() {
        let out = twin("use crate::cuda::moe;\nuse crate::cuda_backend::CudaDevice;\n");
        assert!(out.contains("#[cfg(not(feature = \"rocm\"))]\nuse crate::cuda::moe;\n#[cfg(feature = \"rocm\")]\nuse crate::rocm::moe;"), "{out}");
        assert!(out.contains("use crate::cuda_backend::CudaDevice;\nuse crate::rocm_backend::RocmDevice;"), "names that differ need no gate: {out}");
    }

    #[test]
    fn extern_twins_keep_the_kernel_symbols() {
        let out = twin("#[cfg(feature = \"cuda\")]\nextern \"C\" {\n    fn gemm_cuda_part(s: CUstream);\n    fn plain(s: CUstream);\n}\n");
        assert!(out.contains("#[cfg(feature = \"rocm\")]\nextern \"C\" {\n    #[link_name = \"gemm_cuda_part\"]\n    fn gemm_rocm_part("), "{out}");
        assert_eq!(out.matches("#[link_name").count(), 1, "a name the rules keep needs none: {out}");
    }

    #[test]
    fn impls_of_untwinned_items_keep_upstream_form_and_are_gaps() {
        let src = "impl UgIOp1 {\n    #[cfg(feature = \"cuda\")]\n    fn cuda_fwd(&self) {}\n}\nimpl Other {\n    #[cfg(feature = \"cuda\")]\n    fn cuda_fwd(&self) {}\n}\n";
        let out = twin_file("t.rs", "test", src).unwrap();
        assert_eq!(out.text.matches("fn rocm_fwd").count(), 1, "{}", out.text);
        assert_eq!(out.gaps.len(), 1);
        assert_eq!((out.gaps[0].construct.as_str(), out.gaps[0].feature.as_str(), out.gaps[0].line), ("impl for UgIOp1", "ug", 1));
    }

    #[test]
    fn a_gpu_free_fallback_is_merged_not_twinned() {
        let out = twin("fn new(name: &'static str) -> Result<Self> {\n    #[cfg(feature = \"cuda\")]\n    {\n        return Ok(Self { name, func: cuda_func() });\n    }\n    #[cfg(not(any(feature = \"cuda\", feature = \"metal\")))]\n    {\n        Ok(Self { name })\n    }\n}\n");
        assert_eq!(out.matches("Ok(Self { name })").count(), 1, "{out}");
        let flat: String = out.split_whitespace().collect();
        assert!(flat.contains("#[cfg(all(not(any(feature=\"cuda\",feature=\"metal\")),not(any(feature=\"rocm\",feature=\"metal\"))))]{Ok(Self{name})}"), "{out}");
        assert!(out.contains("rocm_func()"), "{out}");
    }

    #[test]
    fn ungated_calls_of_candles_cuda_module_get_a_rocm_twin() {
        let out = twin("fn main() {\n    candle::cuda::set_gemm_reduced_precision_f16(true);\n    candle::utils::cuda_is_available();\n    other::cuda::f();\n}\n");
        assert!(out.contains("candle::cuda::set_gemm_reduced_precision_f16(true);\n    candle::rocm::set_gemm_reduced_precision_f16(true);\n"), "{out}");
        // another module of candle, or another crate's `cuda`: no twin
        assert!(!out.contains("candle::utils::rocm") && !out.contains("other::rocm"), "{out}");
    }

    #[test]
    fn variants_and_arms_get_twins() {
        let out = twin("enum Storage { Cpu(C), Cuda(CudaStorage) }\nfn f(s: &Storage) -> u8 { match s { Storage::Cpu(_) => 0, Storage::Cuda(c) => c.x() } }\n");
        assert!(out.contains("Cuda(CudaStorage),\n    Rocm(RocmStorage),"), "{out}");
        assert!(out.contains("Storage::Cuda(c) => c.x(),\n        Storage::Rocm(c) => c.x(),"), "{out}");
    }

    #[test]
    fn cuda_only_matches_and_their_twins_stay_exhaustive() {
        let out = twin("impl Device { pub fn as_cuda_device(&self) -> Result<&CudaDevice> { match self { Self::Cuda(d) => Ok(d), Self::Cpu => bail!(\"expected a cuda device, got cpu\"), Self::Metal(_) => bail!(\"expected a cuda device, got Metal\") } } }\n");
        assert!(out.contains("Self::Metal(_) => bail!(\"expected a cuda device, got Metal\"),\n            Self::Rocm(_) => bail!(\"expected a cuda device, got rocm\"),"), "{out}");
        assert!(out.contains("Self::Metal(_) => bail!(\"expected a rocm device, got Metal\"),\n            Self::Cuda(_) => bail!(\"expected a rocm device, got cuda\"),"), "{out}");
    }

    #[test]
    fn test_device_invocations_are_not_twinned() {
        let src = "test_device!(qmm, qmm_cpu, qmm_cuda, qmm_metal);\nquantized_matmul!(q, q_cpu, q_cuda, q_metal, GgmlDType::Q4_0);\n";
        assert_eq!(twin_file("t.rs", "t", src).unwrap().text, src);
    }

    #[test]
    fn twins_with_the_same_name_never_coexist() {
        let out = twin("#[cfg(feature = \"cuda\")]\npub fn moe_gemm(x: &CudaStorage) {}\n#[cfg(not(feature = \"cuda\"))]\npub fn moe_gemm() {}\n");
        assert!(out.contains("#[cfg(feature = \"cuda\")]\npub fn moe_gemm(x: &CudaStorage) {}"), "{out}");
        assert!(out.contains("#[cfg(all(feature = \"rocm\", not(feature = \"cuda\")))]\npub fn moe_gemm(x: &RocmStorage) {}"), "{out}");
        assert!(out.contains("#[cfg(all(not(feature = \"cuda\"), not(feature = \"rocm\")))]\npub fn moe_gemm() {}"), "{out}");
        assert_eq!(out.matches("fn moe_gemm").count(), 3, "{out}");
    }

    #[test]
    fn cudnn_named_items_have_no_twin() {
        let src = "pub enum CudnnFwdAlgo { A }\n";
        assert_eq!(twin_file("t.rs", "t", src).unwrap().text, src);
    }

    #[test]
    fn or_patterns_get_the_twin_case_inside() {
        let out = twin("fn f(d: &Device) -> bool { match d { Device::Cpu => false, Device::Cuda(_) | Device::Metal(_) => true } }\n");
        assert!(out.contains("Device::Cuda(_) | Device::Rocm(_) | Device::Metal(_) => true"), "{out}");
    }

    #[test]
    fn cuda_named_items_and_impl_items_get_twins() {
        let out = twin("impl Device { pub fn new_cuda(o: usize) -> Self { Self::Cuda(o) } pub fn cpu() {} }\ntrait Op { fn cuda_fwd(&self, s: &CudaStorage) -> Result<()> { Err(Error::Cuda(\"no cuda implementation\".into())) } }\n");
        assert!(out.contains("pub fn new_rocm(o: usize) -> Self {\n        Self::Rocm(o)"), "{out}");
        assert!(out.contains("fn rocm_fwd(&self, s: &RocmStorage)"), "{out}");
        assert!(out.contains("\"no rocm implementation\""), "{out}");
        assert_eq!(out.matches("pub fn cpu").count(), 1, "{out}");
    }

    #[test]
    fn feature_gated_items_and_statements_get_twins() {
        let out = twin("#[cfg(feature = \"cuda\")]\npub mod cuda_backend;\n#[cfg(not(feature = \"cuda\"))]\npub use dummy_cuda_backend as cuda;\nfn f() { #[cfg(feature = \"cuda\")] let x = 1; }\n");
        assert!(out.contains("#[cfg(feature = \"rocm\")]\npub mod rocm_backend;"), "{out}");
        assert!(out.contains("#[cfg(not(feature = \"rocm\"))]\npub use dummy_rocm_backend as rocm;"), "{out}");
        assert!(out.contains("#[cfg(feature = \"rocm\")]\n    let x = 1;"), "{out}");
    }

    #[test]
    fn imports_get_twin_leaves() {
        let out = twin("use crate::{CpuStorage, CudaStorage, Layout};\npub use cuda::{CudaDevice, CudaStorage};\n");
        assert!(out.contains("use crate::{CpuStorage, CudaStorage, RocmStorage, Layout};"), "{out}");
        assert!(out.contains("pub use rocm::{RocmDevice, RocmStorage};"), "{out}");
    }

    #[test]
    fn twins_of_unmirrorable_features_are_gaps() {
        let src = "#[cfg(feature = \"cudnn\")]\npub use cuda_backend::cudnn;\n";
        let out = twin_file("t.rs", "test", src).unwrap();
        assert_eq!(out.gaps.len(), 1);
        assert_eq!(out.gaps[0].line, 1);
        assert!(out.gaps[0].reason.contains("MIOpen"), "{:?}", out.gaps);
        assert!(!out.text.contains("rocm"), "{}", out.text);
    }

    #[test]
    fn files_without_cuda_are_returned_verbatim() {
        let src = "// a comment that prettyplease would drop\nfn f() {}\n";
        let out = twin_file("t.rs", "test", src).unwrap();
        assert_eq!(out.text, src);
    }
}
