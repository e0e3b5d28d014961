//! Rule `device-predicates`: where upstream branches on "is this the CUDA
//! device" (`dev.is_cuda()`), the ROCm device answers the same way: it runs
//! the same kernels, so it must meet the CUDA expectations (a test that
//! allows the MMQ path's rounding on CUDA allows it on ROCm). Each call of a
//! predicate of [`DEVICE_PREDICATES`] becomes `(dev.is_cuda() || dev.is_rocm())`.
//! Only receivers without side effects (paths, fields, references, and calls of
//! Candle's getters [`PURE_GETTERS`] on them: `xs.device()`) are rewritten; any
//! other is an error naming the file and line.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

use super::mapping::{DEVICE_PREDICATES, PURE_GETTERS};
use crate::TranslateError;

/// Rewrites every predicate call in `file`; returns how many.
pub fn rewrite(path: &str, file: &mut syn::File) -> Result<usize, TranslateError> {
    let mut pass = Pass { path, count: 0, error: None };
    pass.visit_file_mut(file);
    match pass.error {
        Some(e) => Err(e),
        None => Ok(pass.count),
    }
}

struct Pass<'a> {
    path: &'a str,
    count: usize,
    error: Option<TranslateError>,
}

fn side_effect_free(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Path(_) => true,
        syn::Expr::Field(f) => side_effect_free(&f.base),
        syn::Expr::Reference(r) => side_effect_free(&r.expr),
        syn::Expr::Paren(p) => side_effect_free(&p.expr),
        syn::Expr::MethodCall(m) => m.args.is_empty() && m.turbofish.is_none() && PURE_GETTERS.iter().any(|g| m.method == g) && side_effect_free(&m.receiver),
        _ => false,
    }
}

impl VisitMut for Pass<'_> {
    // `if (a.is_cuda() || a.is_rocm()) {`: an `if` condition needs no
    // parentheses (rustc's unused_parens lint would warn in every example)
    fn visit_expr_if_mut(&mut self, e: &mut syn::ExprIf) {
        if super::branch_twins::chooses_cuda(e) {
            // a branch into CUDA code: rule if-chain-twins gives it a ROCm
            // branch of its own; only its body and the rest of the chain are ours
            self.visit_block_mut(&mut e.then_branch);
            if let Some((_, rest)) = &mut e.else_branch {
                self.visit_expr_mut(rest);
            }
            return;
        }
        syn::visit_mut::visit_expr_if_mut(self, e);
        if let syn::Expr::Paren(p) = &*e.cond {
            let ours = matches!(&*p.expr, syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Or(_))
                && matches!(&*b.right, syn::Expr::MethodCall(m) if DEVICE_PREDICATES.iter().any(|(_, rocm)| m.method == rocm)));
            if ours {
                e.cond = p.expr.clone();
            }
        }
    }

    fn visit_expr_mut(&mut self, expr: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, expr);
        let syn::Expr::MethodCall(call) = expr else { return };
        if !call.args.is_empty() {
            return;
        }
        let Some((_, rocm)) = DEVICE_PREDICATES.iter().find(|(cuda, _)| call.method == cuda) else { return };
        if !side_effect_free(&call.receiver) {
            let line = call.span().start().line as u32;
            self.error.get_or_insert_with(|| {
                TranslateError::unsupported(self.path, line, format!(".{}()", call.method), "device predicate on a receiver with possible side effects (rule device-predicates rewrites paths, fields and Candle's getters of backend::mapping::PURE_GETTERS only)")
            });
            return;
        }
        let receiver = &call.receiver;
        let rocm = syn::Ident::new(rocm, Span::call_site());
        let original = call.clone();
        *expr = syn::parse_quote!((#original || #receiver.#rocm()));
        self.count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> Result<(String, usize), TranslateError> {
        let mut file: syn::File = syn::parse_str(src).unwrap();
        let n = rewrite("t.rs", &mut file)?;
        Ok((prettyplease::unparse(&file), n))
    }

    #[test]
    fn cuda_check_also_accepts_rocm() {
        let (out, n) = run("fn f(dev: &Device) { if dev.is_cuda() { a() } else { b() } }").unwrap();
        assert_eq!(n, 1);
        assert!(out.contains("if dev.is_cuda() || dev.is_rocm() {"), "{out}");
    }

    #[test]
    fn nested_in_conditions() {
        let (out, n) = run("fn f(s: &S) -> bool { (s.device.is_cuda() || s.device.is_metal()) && x }").unwrap();
        assert_eq!(n, 1);
        assert!(out.contains("(s.device.is_cuda() || s.device.is_rocm())"), "{out}");
    }

    #[test]
    fn receivers_through_known_getters() {
        let (out, n) = run("fn f(xs: &Tensor) -> bool { xs.device().is_cuda() && self.w.as_tensor().device().is_cuda() }").unwrap();
        assert_eq!(n, 2);
        let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(out.contains("(xs.device().is_cuda() || xs.device().is_rocm())"), "{out}");
        assert!(out.contains("(self.w.as_tensor().device().is_cuda() || self.w.as_tensor().device().is_rocm())"), "{out}");
        // a getter of something with side effects, or a method that is not a known getter
        assert!(run("fn f() -> bool { make().device().is_cuda() }").is_err());
        assert!(run("fn f(x: &T) -> bool { x.to_device(d).is_cuda() }").is_err());
    }

    #[test]
    fn calls_with_side_effects_are_an_error() {
        let err = run("fn f() -> bool { make_device().is_cuda() }").unwrap_err().to_string();
        assert!(err.starts_with("t.rs:1: .is_cuda():"), "{err}");
    }

    #[test]
    fn other_methods_are_kept() {
        assert_eq!(run("fn f(d: &Device) -> bool { d.is_metal() }").unwrap().1, 0);
    }
}
