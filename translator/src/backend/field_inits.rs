//! Rule `field-inits`: a struct field whose upstream value means something
//! on NVIDIA only gets its ROCm value ([`FIELD_INITS`]).
//!
//! The one row today: the compute capability `fast_mmq.rs` hands ggml's MMQ
//! launchers is `major * 100 + minor * 10` upstream; on AMD ggml expects
//! `0x1000000 + gfx id`. The rule runs on mirrored files after the renaming
//! rules. A row whose struct expression is missing from its file, or whose
//! field has another value, is an error naming file and line: upstream
//! changed and the row must be checked.

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

use super::mapping::{FieldInit, FIELD_INITS};
use crate::TranslateError;

/// Applies the rows for `file`; returns how many fields were rewritten.
pub fn rewrite(file: &str, parsed: &mut syn::File) -> Result<usize, TranslateError> {
    rewrite_rows(file, parsed, FIELD_INITS)
}

fn rewrite_rows(file: &str, parsed: &mut syn::File, rows: &[FieldInit]) -> Result<usize, TranslateError> {
    let mut count = 0;
    for row in rows.iter().filter(|r| r.file == file) {
        let rocm: syn::Expr = syn::parse_str(row.rocm).map_err(|e| TranslateError::unsupported(file, 0, row.rocm, format!("rule field-inits: the row's ROCm value does not parse: {e}")))?;
        let mut pass = Pass { file, row, rocm, found: 0, error: None };
        pass.visit_file_mut(parsed);
        if let Some(e) = pass.error {
            return Err(e);
        }
        if pass.found == 0 {
            return Err(TranslateError::unsupported(
                file,
                0,
                format!("{} {{ {}: .. }}", row.strukt, row.field),
                "rule field-inits: no such struct expression (upstream changed: check the row in backend::mapping::FIELD_INITS)",
            ));
        }
        count += pass.found;
    }
    Ok(count)
}

struct Pass<'a> {
    file: &'a str,
    row: &'a FieldInit,
    rocm: syn::Expr,
    found: usize,
    error: Option<TranslateError>,
}

impl VisitMut for Pass<'_> {
    fn visit_expr_struct_mut(&mut self, node: &mut syn::ExprStruct) {
        syn::visit_mut::visit_expr_struct_mut(self, node);
        if node.path.segments.last().is_none_or(|s| s.ident != self.row.strukt) {
            return;
        }
        for field in node.fields.iter_mut() {
            if !matches!(&field.member, syn::Member::Named(name) if name == self.row.field) {
                continue;
            }
            let upstream = field.expr.to_token_stream().to_string();
            if upstream != self.row.upstream {
                let line = field.expr.span().start().line as u32;
                self.error.get_or_insert(TranslateError::unsupported(
                    self.file,
                    line,
                    format!("{}: {upstream}", self.row.field),
                    "rule field-inits: not the value this row expects (upstream changed: check the row in backend::mapping::FIELD_INITS)",
                ));
                return;
            }
            field.expr = self.rocm.clone();
            self.found += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &[FieldInit] = &[FieldInit { file: "f.rs", strukt: "Info", field: "cc", upstream: "major * 100 + minor * 10", rocm: "ggml_cc(dev)", why: "t" }];

    fn run(file: &str, src: &str) -> Result<(String, usize), TranslateError> {
        let mut parsed: syn::File = syn::parse_str(src).unwrap();
        let n = rewrite_rows(file, &mut parsed, ROWS)?;
        Ok((parsed.to_token_stream().to_string(), n))
    }

    #[test]
    fn field_gets_the_rocm_value() {
        let (out, n) = run("f.rs", "fn f() -> Info { Info { cc: major * 100 + minor * 10, nsm } }").unwrap();
        assert_eq!(n, 1);
        assert_eq!(out, "fn f () -> Info { Info { cc : ggml_cc (dev) , nsm } }");
    }

    #[test]
    fn other_value_is_an_error_with_its_line() {
        let err = run("f.rs", "fn f() -> Info {\n    Info { cc: 7 }\n}").unwrap_err().to_string();
        assert!(err.starts_with("f.rs:2: cc: 7"), "{err}");
    }

    #[test]
    fn missing_struct_is_an_error() {
        let err = run("f.rs", "fn f() {}").unwrap_err().to_string();
        assert!(err.contains("Info { cc: .. }"), "{err}");
    }

    #[test]
    fn other_files_are_untouched() {
        assert_eq!(run("g.rs", "fn f() { Info { cc: 7 }; }").unwrap().1, 0);
    }
}
