//! Rule `wave-launches`: expressions of the ROCm code whose upstream value
//! holds for NVIDIA only get their ROCm value ([`WAVE_LAUNCHES`]).
//!
//! Today's rows: candle-nn launches softmax with `block_dim: (1, 32, 1)` and
//! the norms with 32 threads below 1024 columns, one 32-lane warp per row. On
//! ROCm the launch reads the device's wavefront size instead (64 on CDNA, 32
//! on RDNA), and the kernels reduce over that many lanes (kernel rule
//! `wave-rows`), so that no half of a CDNA wavefront idles.
//!
//! ROCm code is a whole mirrored file, or in a twinned file the functions
//! named for ROCm or gated on its feature. A row found another number of
//! times than its `count` is an error naming the file (upstream changed:
//! check the row).

use quote::ToTokens;
use syn::visit_mut::VisitMut;

use super::mapping::{RocmExpr, WAVE_LAUNCHES};
use super::cuda_names::mentions_rocm;
use crate::TranslateError;

/// Applies the rows for `file` of the crate that `label` names; `whole`: the
/// whole file is ROCm code (a mirror). Returns how many expressions changed.
pub fn rewrite(label: &str, file: &str, parsed: &mut syn::File, whole: bool) -> Result<usize, TranslateError> {
    rewrite_rows(label, file, parsed, whole, WAVE_LAUNCHES)
}

fn rewrite_rows(label: &str, file: &str, parsed: &mut syn::File, whole: bool, rows: &[RocmExpr]) -> Result<usize, TranslateError> {
    let krate = label.split(' ').next().unwrap_or_default();
    let rows: Vec<&RocmExpr> = rows.iter().filter(|r| r.krate == krate && r.file == file).collect();
    if rows.is_empty() {
        return Ok(0);
    }
    let mut values = Vec::with_capacity(rows.len());
    for row in &rows {
        let value: syn::Expr = syn::parse_str(row.rocm).map_err(|e| TranslateError::unsupported(file, 0, row.rocm, format!("rule wave-launches: the row's ROCm value does not parse: {e}")))?;
        values.push(value);
    }
    let mut pass = Pass { rows: &rows, values, found: vec![0; rows.len()], depth: usize::from(whole) };
    pass.visit_file_mut(parsed);
    for (row, found) in rows.iter().zip(&pass.found) {
        if *found != row.count {
            return Err(TranslateError::unsupported(
                file,
                0,
                format!("{} ({found} times in ROCm code, expected {})", row.upstream, row.count),
                "rule wave-launches: upstream changed (check the row in backend::mapping::WAVE_LAUNCHES)",
            ));
        }
    }
    Ok(pass.found.iter().sum())
}

struct Pass<'a> {
    rows: &'a [&'a RocmExpr],
    values: Vec<syn::Expr>,
    found: Vec<usize>,
    /// Inside ROCm code when positive.
    depth: usize,
}

fn is_rocm(ident: &syn::Ident, attrs: &[syn::Attribute]) -> bool {
    ident.to_string().contains("rocm") || attrs.iter().any(|a| a.path().is_ident("cfg") && mentions_rocm(a.meta.to_token_stream()))
}

impl VisitMut for Pass<'_> {
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        let rocm = usize::from(is_rocm(&f.sig.ident, &f.attrs));
        self.depth += rocm;
        syn::visit_mut::visit_item_fn_mut(self, f);
        self.depth -= rocm;
    }

    fn visit_impl_item_fn_mut(&mut self, f: &mut syn::ImplItemFn) {
        let rocm = usize::from(is_rocm(&f.sig.ident, &f.attrs));
        self.depth += rocm;
        syn::visit_mut::visit_impl_item_fn_mut(self, f);
        self.depth -= rocm;
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if self.depth > 0 {
            let text = e.to_token_stream().to_string();
            if let Some(i) = self.rows.iter().position(|r| r.upstream == text) {
                *e = self.values[i].clone();
                self.found[i] += 1;
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &[RocmExpr] = &[RocmExpr { krate: "candle-nn", file: "src/ops.rs", upstream: "(1 , 32 , 1)", rocm: "(1, wave(dev), 1)", count: 1, why: "t" }];

    fn run(label: &str, src: &str, whole: bool) -> Result<(String, usize), TranslateError> {
        let mut parsed = syn::parse_file(src).unwrap();
        let n = rewrite_rows(label, "src/ops.rs", &mut parsed, whole, ROWS)?;
        Ok((prettyplease::unparse(&parsed), n))
    }

    const TWINNED: &str = "impl S {\n    fn cuda_fwd(&self) { let c = Cfg { block_dim: (1, 32, 1) }; }\n    #[cfg(feature = \"rocm\")]\n    fn fwd2(&self) { let c = Cfg { block_dim: (1, 32, 1) }; }\n}\n";

    #[test]
    fn rewrites_the_rocm_code_only() {
        let (out, n) = run("candle-nn 0.11.1 src/ops.rs", TWINNED, false).unwrap();
        assert_eq!(n, 1);
        assert!(out.contains("fn cuda_fwd(&self) {\n        let c = Cfg { block_dim: (1, 32, 1) };"), "{out}");
        assert!(out.contains("fn fwd2(&self) {\n        let c = Cfg {\n            block_dim: (1, wave(dev), 1),"), "{out}");
    }

    #[test]
    fn a_mirror_is_rocm_code_throughout() {
        let (out, n) = run("candle-nn 0.11.1 src/ops.rs", "fn f() { g((1, 32, 1)); }\n", true).unwrap();
        assert_eq!(n, 1);
        assert!(out.contains("g((1, wave(dev), 1))"), "{out}");
    }

    #[test]
    fn another_count_is_an_error() {
        let err = run("candle-nn 0.11.1 src/ops.rs", "fn rocm_fwd() {}\n", false).unwrap_err().to_string();
        assert!(err.starts_with("src/ops.rs"), "{err}");
        assert!(err.contains("(1 , 32 , 1) (0 times in ROCm code, expected 1)"), "{err}");
    }

    #[test]
    fn other_crates_are_untouched() {
        assert_eq!(run("candle-core 0.11.1 src/ops.rs", TWINNED, false).unwrap().1, 0);
    }

    #[test]
    fn table_rows_parse_and_print_like_the_matcher() {
        for row in WAVE_LAUNCHES {
            let upstream: syn::Expr = syn::parse_str(row.upstream).unwrap();
            assert_eq!(upstream.to_token_stream().to_string(), row.upstream);
            syn::parse_str::<syn::Expr>(row.rocm).unwrap();
        }
    }
}
