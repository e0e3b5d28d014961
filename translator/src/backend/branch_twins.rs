//! Rules that give ROCm twins to CUDA choices made inside expressions, where
//! the node-level [`super::twins`] has nothing to copy:
//!
//! * `if-chain-twins`: a branch of an `if`/`else if` chain whose condition
//!   calls a CUDA function (`else if cuda_is_available() { Device::new_cuda(0) }`)
//!   is followed by its ROCm twin (`else if rocm_is_available() {
//!   Device::new_rocm(0) }`): candle-examples' `device()` then picks the AMD
//!   GPU. A branch on a device predicate whose body names CUDA (`if
//!   device.is_cuda() { self.attention_cuda(..) }`) is twinned too (`else if
//!   device.is_rocm() { self.attention_rocm(..) }`); other conditions on a
//!   device predicate (a dtype choice) are left to rule `device-predicates`. A branch on a CUDA variant (`if let
//!   Device::Cuda(_) = device { device.synchronize()? }`) is twinned the
//!   same way.
//! * `cfg-macro-twins`: `cfg!(feature = "cuda")` as an `if` condition becomes
//!   `cfg!(feature = "cuda") || cfg!(feature = "rocm")`: the fast path
//!   upstream chooses at compile time for CUDA (qwen3_moe's fused MoE) is the
//!   one the ROCm backend has too.
//!
//! * `if-available-twins`: a call that asks for the CUDA GPU if there is one
//!   (`Device::cuda_if_available(0)`, [`IF_AVAILABLE`]) asks for the ROCm GPU
//!   where CUDA is not available (`if candle_core::utils::cuda_is_available() {
//!   Device::cuda_if_available(0) } else { Device::rocm_if_available(0) }`):
//!   mistral.rs's server picks its device this way.
//!
//! Functions named for CUDA (`cuda_is_available`, `Device::cuda_if_available`)
//! are left alone where they are defined: they answer for CUDA, and their ROCm
//! twins for ROCm.
//! * `feature-hints`: messages that tell the user which feature to build
//!   with (`build this example with `--features cuda``) name the ROCm one
//!   too ([`FEATURE_HINTS`]).

use std::collections::BTreeMap;

use quote::ToTokens;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

use super::cuda_names::{cfg_mentions_cuda, is_cuda_ident, mentions_cuda, mentions_rocm};
use super::mapping::{DEVICE_PREDICATES, FEATURE_HINTS, IF_AVAILABLE};
use super::node_attrs::{item_attrs, stmt_attrs};
use super::rules::{self, replace_in_literals};
use super::skip_without_device::candle_core_path;

/// Applies the four rules to `file`; counts go to `counts`.
pub fn rewrite(file: &mut syn::File, counts: &mut BTreeMap<&'static str, usize>) {
    let candle_core = candle_core_path(file);
    let mut pass = Pass { counts, candle_core };
    pass.visit_file_mut(file);
}

struct Pass<'a> {
    counts: &'a mut BTreeMap<&'static str, usize>,
    /// How the file names candle-core (`candle_core`, `candle`, `crate`).
    candle_core: syn::Path,
}

/// The [`IF_AVAILABLE`] row a call is of (`Device::cuda_if_available(0)`).
fn if_available_row(e: &syn::Expr) -> Option<&'static (&'static str, &'static str, &'static str)> {
    let syn::Expr::Call(call) = e else { return None };
    let syn::Expr::Path(p) = &*call.func else { return None };
    let last = p.path.segments.last()?.ident.to_string();
    IF_AVAILABLE.iter().find(|(cuda, _, _)| last == *cuda)
}

/// Does this branch choose CUDA code: its condition calls a CUDA-named
/// function or matches a CUDA variant (`if let Device::Cuda(_) = device`)
/// and asks no device predicate, or its condition is a lone device
/// predicate (`device.is_cuda()`) and its body names CUDA
/// (`self.attention_cuda(..)`, whose ROCm twin the twin branch calls)?
pub fn chooses_cuda(e: &syn::ExprIf) -> bool {
    match &*e.cond {
        syn::Expr::Let(l) => mentions_cuda(l.pat.to_token_stream()),
        syn::Expr::MethodCall(m) if DEVICE_PREDICATES.iter().any(|(cuda, _)| m.method == cuda) => mentions_cuda(e.then_branch.to_token_stream()),
        cond => calls_cuda_function(cond),
    }
}

/// Does `cond` call a CUDA-named function (and ask no device predicate)?
fn calls_cuda_function(cond: &syn::Expr) -> bool {
    struct Finder {
        cuda_call: bool,
        predicate: bool,
    }
    impl<'ast> Visit<'ast> for Finder {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                if p.path.segments.last().is_some_and(|s| is_cuda_ident(&s.ident.to_string())) {
                    self.cuda_call = true;
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            if DEVICE_PREDICATES.iter().any(|(cuda, _)| m.method == cuda) {
                self.predicate = true;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut f = Finder { cuda_call: false, predicate: false };
    f.visit_expr(cond);
    f.cuda_call && !f.predicate
}

/// Is a node with these attributes gated on a GPU backend's feature?
fn gated(attrs: &[syn::Attribute]) -> bool {
    cfg_mentions_cuda(attrs) || attrs.iter().any(|a| a.path().is_ident("cfg") && mentions_rocm(a.meta.to_token_stream()))
}

/// `cfg!(feature = "cuda")`?
fn is_cfg_cuda(mac: &syn::Macro) -> bool {
    mac.path.is_ident("cfg") && mac.tokens.to_string().replace(' ', "") == "feature=\"cuda\""
}

impl Pass<'_> {
    /// `if <candle>::utils::cuda_is_available() { call } else { its ROCm twin }`
    /// for a call of an [`IF_AVAILABLE`] row.
    fn if_available_twin(&mut self, call: &syn::Expr) -> syn::Expr {
        let (_, rocm, available) = if_available_row(call).expect("a call of a row");
        let mut twin = call.clone();
        if let syn::Expr::Call(syn::ExprCall { func, .. }) = &mut twin {
            if let syn::Expr::Path(p) = &mut **func {
                let last = p.path.segments.last_mut().expect("a row matched the last segment");
                last.ident = syn::Ident::new(rocm, last.ident.span());
            }
        }
        let (krate, available) = (&self.candle_core, syn::Ident::new(available, proc_macro2::Span::call_site()));
        *self.counts.entry("if-available-twins").or_default() += 1;
        syn::parse_quote!(if #krate::utils::#available() { #call } else { #twin })
    }
}

impl VisitMut for Pass<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        // an `if` is a statement at a statement's start: as the operand of `?` or
        // of a method call it is parenthesized (`(if .. {} else {})?`)
        let operand = match e {
            syn::Expr::Try(t) => Some(&mut t.expr),
            syn::Expr::MethodCall(m) => Some(&mut m.receiver),
            _ => None,
        };
        // (the twin is ROCm's already: neither it nor the call is visited again)
        if let Some(operand) = operand.filter(|o| if_available_row(o).is_some()) {
            let twin = self.if_available_twin(operand);
            **operand = syn::Expr::Paren(syn::ExprParen { attrs: vec![], paren_token: Default::default(), expr: Box::new(twin) });
            if let syn::Expr::MethodCall(m) = e {
                for arg in &mut m.args {
                    self.visit_expr_mut(arg);
                }
            }
        } else if if_available_row(e).is_some() {
            *e = self.if_available_twin(e);
        } else {
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }

    fn visit_expr_if_mut(&mut self, e: &mut syn::ExprIf) {
        if let syn::Expr::Macro(m) = &*e.cond {
            if is_cfg_cuda(&m.mac) {
                *e.cond = syn::parse_quote!(cfg!(feature = "cuda") || cfg!(feature = "rocm"));
                *self.counts.entry("cfg-macro-twins").or_default() += 1;
            }
        }
        if chooses_cuda(e) {
            let cond = rules::rewrite(e.cond.to_token_stream(), self.counts);
            let then = rules::rewrite(e.then_branch.to_token_stream(), self.counts);
            if let (Ok(cond), Ok(mut then)) = (syn::parse2::<syn::Expr>(cond), syn::parse2::<syn::Block>(then)) {
                // the branch's statement twins (`#[cfg(cuda)] {..}` and its `#[cfg(rocm)] {..}`)
                // are one statement once renamed: the twin branch keeps it once
                then.stmts.dedup_by(|b, a| stmt_attrs(a).is_some_and(|x| gated(x)) && a.to_token_stream().to_string() == b.to_token_stream().to_string());
                let rest = e.else_branch.take();
                let mut twin = syn::ExprIf { attrs: vec![], if_token: e.if_token, cond: Box::new(cond), then_branch: then, else_branch: None };
                twin.else_branch = rest;
                *self.counts.entry("if-chain-twins").or_default() += 1;
                // the rest of the chain is visited through the twin's else
                // branch; the twin's own condition and body are ROCm already
                syn::visit_mut::visit_block_mut(self, &mut e.then_branch);
                if let Some((_, rest)) = &mut twin.else_branch {
                    self.visit_expr_mut(rest);
                }
                e.else_branch = Some((Default::default(), Box::new(syn::Expr::If(twin))));
                return;
            }
        }
        syn::visit_mut::visit_expr_if_mut(self, e);
    }

    // a function named for CUDA (`cuda_is_available`, `cuda_if_available`)
    // answers for CUDA alone: its ROCm twin answers for ROCm
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        if !is_cuda_ident(&f.sig.ident.to_string()) && !gated(&f.attrs) {
            syn::visit_mut::visit_item_fn_mut(self, f);
        }
    }
    fn visit_impl_item_fn_mut(&mut self, f: &mut syn::ImplItemFn) {
        if !is_cuda_ident(&f.sig.ident.to_string()) && !gated(&f.attrs) {
            syn::visit_mut::visit_impl_item_fn_mut(self, f);
        }
    }
    // code under `cfg(feature = "cuda")` has its twin under `cfg(feature =
    // "rocm")` already (rule `twins`); neither may name the other backend
    fn visit_stmt_mut(&mut self, stmt: &mut syn::Stmt) {
        if !stmt_attrs(stmt).is_some_and(|a| gated(a)) {
            syn::visit_mut::visit_stmt_mut(self, stmt);
        }
    }
    fn visit_item_mut(&mut self, item: &mut syn::Item) {
        if !item_attrs(item).is_some_and(|a| gated(a)) {
            syn::visit_mut::visit_item_mut(self, item);
        }
    }

    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        for (from, to) in FEATURE_HINTS {
            let tokens = replace_in_literals(mac.tokens.clone(), from, to);
            if tokens.to_string() != mac.tokens.to_string() {
                mac.tokens = tokens;
                *self.counts.entry("feature-hints").or_default() += 1;
            }
        }
    }

    fn visit_lit_str_mut(&mut self, lit: &mut syn::LitStr) {
        let value = lit.value();
        if let Some((from, to)) = FEATURE_HINTS.iter().find(|(from, _)| value.contains(from)) {
            *lit = syn::LitStr::new(&value.replace(from, to), lit.span());
            *self.counts.entry("feature-hints").or_default() += 1;
        }
    }

    // doc comments are not messages
    fn visit_attribute_mut(&mut self, _: &mut syn::Attribute) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> (String, BTreeMap<&'static str, usize>) {
        let mut file: syn::File = syn::parse_str(src).unwrap();
        let mut counts = BTreeMap::new();
        rewrite(&mut file, &mut counts);
        (prettyplease::unparse(&file), counts)
    }

    #[test]
    fn an_availability_branch_gets_its_rocm_twin_after_it() {
        let (out, counts) = run("fn device(cpu: bool) -> Result<Device> { if cpu { Ok(Device::Cpu) } else if cuda_is_available() { Ok(Device::new_cuda(0)?) } else if metal_is_available() { Ok(Device::new_metal(0)?) } else { Ok(Device::Cpu) } }");
        let want = "if cpu {\n        Ok(Device::Cpu)\n    } else if cuda_is_available() {\n        Ok(Device::new_cuda(0)?)\n    } else if rocm_is_available() {\n        Ok(Device::new_rocm(0)?)\n    } else if metal_is_available() {";
        assert!(out.contains(want), "{out}");
        assert_eq!(counts["if-chain-twins"], 1);
    }

    /// mistralrs-core's attention: the branch's statements were twinned before the branch
    #[test]
    fn a_twin_branch_keeps_one_copy_of_its_statement_twins() {
        let (out, _) = run("fn f() -> R { if let (Device::Cuda(_), Some(l)) = (d, h) {\n #[cfg(feature = \"cuda\")] { l.go() }\n #[cfg(feature = \"rocm\")] { l.go() }\n #[cfg(all(not(feature = \"cuda\"), not(feature = \"rocm\")))] { bail!(\"no\") }\n } else { naive() } }");
        let twin = &out[out.find("Device::Rocm").unwrap()..];
        assert_eq!(twin.matches("#[cfg(feature = \"rocm\")]").count(), 1, "{out}");
        assert_eq!(out.matches("#[cfg(feature = \"rocm\")]").count(), 2, "{out}");
    }

    #[test]
    fn a_lone_cuda_if_keeps_its_else_after_the_twin() {
        let (out, _) = run("fn f() { let d = if !cpu && utils::cuda_is_available() { Device::new_cuda(0)? } else { Device::Cpu }; }");
        assert!(out.contains("} else if !cpu && utils::rocm_is_available() {\n        Device::new_rocm(0)?\n    } else {\n        Device::Cpu\n    }"), "{out}");
    }

    #[test]
    fn a_branch_on_the_cuda_variant_gets_its_twin() {
        let (out, counts) = run("fn f(device: &Device) -> Result<()> { if let candle::Device::Cuda(_) = device { device.synchronize()?; } Ok(()) }");
        assert!(out.contains("if let candle::Device::Cuda(_) = device {\n        device.synchronize()?;\n    } else if let candle::Device::Rocm(_) = device {\n        device.synchronize()?;\n    }"), "{out}");
        assert_eq!(counts["if-chain-twins"], 1);
    }

    #[test]
    fn code_under_a_backend_cfg_is_left_to_its_twin() {
        let src = "fn f(device: &Device) { #[cfg(feature = \"cuda\")] if let candle::Device::Cuda(d) = &device { d.x() } #[cfg(feature = \"rocm\")] if let candle::Device::Rocm(d) = &device { d.x() } }\n#[cfg(feature = \"cuda\")]\nfn g() { if cuda_is_available() {} }";
        let (out, counts) = run(src);
        assert!(counts.is_empty(), "{out}");
    }

    #[test]
    fn a_predicate_branch_calling_cuda_code_gets_its_twin() {
        let (out, counts) = run("fn f(&self, device: &Device) -> Result<Tensor> { if device.is_cuda() { self.attention_cuda(q) } else if device.is_metal() { self.attention_metal(q) } else { self.attention_basic(q) } }");
        assert!(out.contains("if device.is_cuda() {\n        self.attention_cuda(q)\n    } else if device.is_rocm() {\n        self.attention_rocm(q)\n    } else if device.is_metal() {"), "{out}");
        assert_eq!(counts["if-chain-twins"], 1);
    }

    /// mistralrs-server-core's device choice
    #[test]
    fn asking_for_the_cuda_gpu_if_available_asks_for_the_rocm_one_too() {
        let (out, counts) = run("use candle_core::Device;\nfn f(cpu: bool) -> Result<Device> { let device = if cpu { Device::Cpu } else { Device::cuda_if_available(0)? }; Ok(device) }");
        let want = "Device::Cpu\n    } else {\n        (if candle_core::utils::cuda_is_available() {\n            Device::cuda_if_available(0)\n        } else {\n            Device::rocm_if_available(0)\n        })?\n    };";
        assert!(out.contains(want), "{out}");
        assert_eq!(counts["if-available-twins"], 1);
        // candle-examples names the crate `candle`; inside candle-core it is `crate`
        let (out, _) = run("fn f() -> Result<()> { let dev = candle::Device::cuda_if_available(0)?; Ok(()) }");
        assert!(out.contains("(if candle::utils::cuda_is_available() {\n        candle::Device::cuda_if_available(0)\n    } else {\n        candle::Device::rocm_if_available(0)\n    })?"), "{out}");
        // a bare call needs no parentheses
        let (out, _) = run("fn f() -> Result<Device> { let d = Device::cuda_if_available(1); d }");
        assert!(out.contains("let d = if crate::utils::cuda_is_available() {"), "{out}");
        let (out, counts) = run("impl Device { pub fn cuda_if_available(o: usize) -> Result<Self> { if utils::cuda_is_available() { Self::new_cuda(o) } else { Ok(Self::Cpu) } } }");
        assert!(counts.is_empty() && !out.contains("rocm"), "{out}");
    }

    #[test]
    fn device_predicates_are_not_twinned_here() {
        let (out, counts) = run("fn f(d: &Device) { if d.is_cuda() && cuda_is_available() { a() } else { b() } }");
        assert!(counts.is_empty(), "{out}");
    }

    #[test]
    fn cfg_cuda_choosing_a_path_also_holds_for_rocm() {
        let (out, counts) = run("fn f() { if cfg!(feature = \"cuda\") { fused() } else { naive() } let m = cfg!(feature = \"metal\"); }");
        assert!(out.contains("if cfg!(feature = \"cuda\") || cfg!(feature = \"rocm\") {"), "{out}");
        assert!(out.contains("cfg!(feature = \"metal\")"), "{out}");
        assert_eq!(counts["cfg-macro-twins"], 1);
    }

    #[test]
    fn functions_named_for_cuda_keep_answering_for_cuda() {
        let src = "pub fn cuda_is_available() -> bool { cfg!(feature = \"cuda\") }\nimpl Device { pub fn cuda_if_available(o: usize) -> Result<Self> { if crate::utils::cuda_is_available() { Self::new_cuda(o) } else { Ok(Self::Cpu) } } }";
        let (out, counts) = run(src);
        assert!(counts.is_empty(), "{out}");
    }

    #[test]
    fn feature_hints_name_rocm_in_messages_not_in_docs() {
        let (out, counts) = run("/// build with `--features cuda`\nfn f() { println!(\"Running on CPU, to run on GPU, build this example with `--features cuda`\"); let s = \"`--features cuda`\"; }");
        assert!(out.contains("println!(\n        \"Running on CPU, to run on GPU, build this example with `--features cuda` (NVIDIA) or `--features rocm` (AMD)\"\n    )"), "{out}");
        assert!(out.contains("/// build with `--features cuda`\n"), "{out}");
        assert_eq!(counts["feature-hints"], 2);
    }
}
