//! Rule `nvidia-tools`: ROCm code that runs one of NVIDIA's programs
//! ([`NVIDIA_TOOLS`]: `Command::new("nvidia-smi")`) is listed, with the reason,
//! never passed over in silence. The twins copy such a call from the CUDA code
//! (mistralrs-core asks `nvidia-smi` for the compute capability to choose its
//! `auto` dtype); an AMD machine has not got the program, so the ROCm twin
//! fails where it runs it. Nothing is rewritten: what the program answered
//! has no AMD equivalent that a rule could derive.

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit::Visit;

use super::cuda_names::mentions_rocm;
use super::gaps::{describe, Gap};
use super::mapping::NVIDIA_TOOLS;

/// Lists each call of an NVIDIA program in code gated on the `rocm` feature.
/// Returns how many were listed.
pub fn list(file: &str, f: &syn::File, gaps: &mut Vec<Gap>) -> usize {
    let mut finder = Finder { file, gaps, in_rocm: false, found: 0 };
    finder.visit_file(f);
    finder.found
}

struct Finder<'a> {
    file: &'a str,
    gaps: &'a mut Vec<Gap>,
    /// Inside a node whose `cfg` names the `rocm` feature.
    in_rocm: bool,
    found: usize,
}

impl Finder<'_> {
    fn gated(&mut self, attrs: &[syn::Attribute], visit: impl FnOnce(&mut Self)) {
        let outer = self.in_rocm;
        self.in_rocm |= attrs.iter().any(|a| a.path().is_ident("cfg") && mentions_rocm(a.meta.to_token_stream()));
        visit(self);
        self.in_rocm = outer;
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        self.gated(&i.attrs, |s| syn::visit::visit_item_fn(s, i));
    }
    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        self.gated(&i.attrs, |s| syn::visit::visit_impl_item_fn(s, i));
    }
    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        self.gated(&i.attrs, |s| syn::visit::visit_item_mod(s, i));
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        self.gated(&i.attrs, |s| syn::visit::visit_item_impl(s, i));
    }
    fn visit_expr_block(&mut self, i: &'ast syn::ExprBlock) {
        self.gated(&i.attrs, |s| syn::visit::visit_expr_block(s, i));
    }
    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        let attrs: &[syn::Attribute] = match stmt {
            syn::Stmt::Local(l) => &l.attrs,
            syn::Stmt::Macro(m) => &m.attrs,
            _ => &[],
        };
        self.gated(attrs, |s| syn::visit::visit_stmt(s, stmt));
    }
    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if self.in_rocm {
            let is_command_new = matches!(&*call.func, syn::Expr::Path(p) if p.path.segments.len() >= 2
                && p.path.segments.iter().rev().take(2).map(|s| s.ident.to_string()).eq(["new", "Command"]));
            if let (true, Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(program), .. }))) = (is_command_new, call.args.first()) {
                if let Some((_, reason)) = NVIDIA_TOOLS.iter().find(|(tool, _)| program.value() == *tool) {
                    self.gaps.push(Gap::new(self.file, call.span().start().line as u32, &describe(call), "nvidia-tools", reason));
                    self.found += 1;
                }
            }
        }
        syn::visit::visit_expr_call(self, call);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mistralrs-core's `get_dtypes`, as the twins leave it
    #[test]
    fn a_rocm_twin_running_nvidia_smi_is_listed() {
        let src = "#[cfg(feature = \"cuda\")]\nfn get_dtypes() -> Vec<DType> { let out = Command::new(\"nvidia-smi\").arg(\"--query-gpu=compute_cap\").output(); vec![] }\n\
                   #[cfg(all(feature = \"rocm\", not(feature = \"cuda\")))]\nfn get_dtypes() -> Vec<DType> {\n    let out = std::process::Command::new(\"nvidia-smi\").arg(\"--query-gpu=compute_cap\").output();\n    vec![]\n}\n\
                   #[cfg(feature = \"rocm\")]\nfn ok() { Command::new(\"rocm-smi\"); }\n";
        let f: syn::File = syn::parse_str(src).unwrap();
        let mut gaps = Vec::new();
        assert_eq!(list("normal.rs", &f, &mut gaps), 1);
        assert_eq!((gaps[0].line, gaps[0].feature.as_str()), (5, "nvidia-tools"));
        assert!(gaps[0].construct.contains("nvidia-smi") && gaps[0].reason.contains("AMD"), "{:?}", gaps[0]);
    }
}
