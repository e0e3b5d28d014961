//! Upstream code replaced where a row of a table says ([`Replacement`]): an
//! expression, an item or a function's parameter, matched by its tokens as `quote` prints them, in one
//! file of one crate, found exactly `count` times. The rules over such tables:
//!
//! * `wave-launches` ([`mapping::WAVE_LAUNCHES`]): in ROCm code only (a whole
//!   mirrored file, or in a twinned file the functions and modules named for ROCm
//!   or gated on its feature, and the blocks gated on it);
//! * `own-kernel-builds` ([`mapping::OWN_KERNEL_BUILDS`]): in the same ROCm code of
//!   a twinned build script or example;
//! * `upstream-repairs` ([`mapping::UPSTREAM_REPAIRS`]): everywhere in the file,
//!   before its twins are made, so that the CUDA original and its ROCm twin
//!   both get the repair;
//! * `code-object-inputs` ([`mapping::CODE_OBJECT_INPUTS`]): in a mirrored file,
//!   where upstream takes PTX text.
//!
//! A row's code is matched as tokens, so reformatting does not matter. It may have
//! holes, `$name`: each matches one or more token trees (as few as let the rest
//! match), and the replacement writes what it matched where it names `$name`
//! (`LaunchConfig :: for_num_elems ($n)` matches whatever element count upstream
//! passes). A row found another number of times is an error naming the file, the code
//! and the table: upstream changed, and the row must be checked.
//!
//! [`mapping::WAVE_LAUNCHES`]: super::mapping::WAVE_LAUNCHES
//! [`mapping::UPSTREAM_REPAIRS`]: super::mapping::UPSTREAM_REPAIRS
//! [`mapping::OWN_KERNEL_BUILDS`]: super::mapping::OWN_KERNEL_BUILDS
//! [`mapping::CODE_OBJECT_INPUTS`]: super::mapping::CODE_OBJECT_INPUTS

use quote::ToTokens;
use syn::visit_mut::VisitMut;

use super::cuda_names::mentions_rocm;
use super::mapping::Replacement;
use crate::TranslateError;

/// Where in a file a table's rows apply.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scope {
    /// The whole file.
    Everywhere,
    /// In a twinned file, the functions and modules named for ROCm or gated on its
    /// feature, and the blocks gated on it.
    RocmCode,
}

/// What a table is, for its errors: the rule's name and the table's path.
pub struct Table {
    pub rule: &'static str,
    pub path: &'static str,
    pub rows: &'static [Replacement],
}

/// Applies `table`'s rows for `file` of the crate that `label` names (its first
/// word: `candle-nn 0.11.1 src/ops.rs`). Returns how many replacements were made.
pub fn apply(table: &Table, label: &str, file: &str, parsed: &mut syn::File, scope: Scope) -> Result<usize, TranslateError> {
    apply_rows(table.rule, table.path, table.rows, label, file, parsed, scope)
}

/// The crate a provenance label names (its first word: `candle-nn 0.11.1 src/ops.rs` is
/// candle-nn).
pub fn krate(label: &str) -> &str {
    label.split(' ').next().unwrap_or_default()
}

/// The release a provenance label names (its second word: `candle-nn 0.11.1 src/ops.rs`
/// is 0.11.1), when it is one.
pub fn release(label: &str) -> Option<(u64, u64, u64)> {
    let version = label.split(' ').nth(1)?;
    let mut parts = version.split(['.', '-', '+']).map(str::parse::<u64>);
    Some((parts.next()?.ok()?, parts.next()?.ok()?, parts.next()?.ok()?))
}

/// Whether `table` has rows for `file` of crate `krate`.
pub fn has_rows(table: &Table, krate: &str, file: &str) -> bool {
    table.rows.iter().any(|r| r.krate == krate && r.file == file)
}

fn apply_rows(rule: &str, path: &str, rows: &[Replacement], label: &str, file: &str, parsed: &mut syn::File, scope: Scope) -> Result<usize, TranslateError> {
    let krate = krate(label);
    let rows: Vec<&Replacement> = rows.iter().filter(|r| r.krate == krate && r.file == file).collect();
    if rows.is_empty() {
        return Ok(0);
    }
    let mut patterns = Vec::with_capacity(rows.len());
    for row in &rows {
        let pattern: proc_macro2::TokenStream = row.upstream.parse().map_err(|e| TranslateError::unsupported(file, 0, row.upstream, format!("rule {rule}: the row's code does not lex: {e}")))?;
        patterns.push(pattern.into_iter().collect::<Vec<_>>());
        // a replacement that parses with its holes filled by a placeholder parses
        Code::parse(&fill(row.with, &Holes::placeholders(row.with))).map_err(|e| TranslateError::unsupported(file, 0, row.with, format!("rule {rule}: the row's replacement does not parse: {e}")))?;
    }
    let mut pass = Pass { rows: &rows, patterns, found: vec![0; rows.len()], depth: usize::from(scope == Scope::Everywhere), within: Vec::new(), error: None, rule, file };
    pass.visit_file_mut(parsed);
    if let Some(e) = pass.error {
        return Err(e);
    }
    for (row, found) in rows.iter().zip(&pass.found) {
        if *found != row.count {
            let mut place = String::from(if scope == Scope::Everywhere { "" } else { " in ROCm code" });
            if !row.inside.is_empty() {
                place += &format!(" inside `{}`", row.inside);
            }
            return Err(TranslateError::unsupported(
                file,
                0,
                format!("{} ({found} times{place}, expected {})", row.upstream, row.count),
                format!("rule {rule}: upstream changed (check the row in {path})"),
            ));
        }
    }
    Ok(pass.found.iter().sum())
}

/// A row's replacement: an item (`use a::B;`), a function's parameter (`name: Type`)
/// or an expression.
#[derive(Clone)]
enum Code {
    Item(syn::Item),
    Param(syn::FnArg),
    Expr(syn::Expr),
}

impl Code {
    fn parse(text: &str) -> syn::Result<Code> {
        if let Ok(item) = syn::parse_str::<syn::Item>(text) {
            return Ok(Code::Item(item));
        }
        // `name: Type` parses as an expression too (a type ascription is not Rust): a
        // parameter first
        if let Ok(param @ syn::FnArg::Typed(_)) = syn::parse_str::<syn::FnArg>(text) {
            return Ok(Code::Param(param));
        }
        syn::parse_str::<syn::Expr>(text).map(Code::Expr)
    }
}

/// What a row's holes matched: name → tokens, as text.
#[derive(Default)]
struct Holes(Vec<(String, String)>);

impl Holes {
    /// Every hole `text` names, bound to a placeholder identifier.
    fn placeholders(text: &str) -> Holes {
        Holes(hole_names(text).into_iter().map(|n| (n, "placeholder".to_string())).collect())
    }
}

/// The `$name`s of a row's text.
fn hole_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// `text` with each `$name` replaced by what the hole matched (longest names first),
/// parenthesized when it has an operator or a cast (`el as u32`), so that precedence holds.
fn fill(text: &str, holes: &Holes) -> String {
    let mut bound: Vec<&(String, String)> = holes.0.iter().collect();
    bound.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
    let mut out = text.to_string();
    for (name, value) in bound {
        // a path, a field or a call chain needs no parentheses; an operator or a cast does
        let operand = value.parse::<proc_macro2::TokenStream>().is_ok_and(|t| {
            t.into_iter().all(|t| match t {
                proc_macro2::TokenTree::Punct(p) => matches!(p.as_char(), '.' | ':'),
                proc_macro2::TokenTree::Ident(i) => i != "as",
                _ => true,
            })
        });
        out = out.replace(&format!("${name}"), &if operand { value.clone() } else { format!("({value})") });
    }
    out
}

/// Whether `subject` is `pattern`, token for token, holes matching one or more trees.
fn matches(pattern: &[proc_macro2::TokenTree], subject: &[proc_macro2::TokenTree], holes: &mut Holes) -> bool {
    use proc_macro2::TokenTree as T;
    match pattern {
        [] => subject.is_empty(),
        [T::Punct(dollar), T::Ident(name), rest @ ..] if dollar.as_char() == '$' => {
            let name = name.to_string();
            for take in 1..=subject.len() {
                let value = subject[..take].iter().cloned().collect::<proc_macro2::TokenStream>().to_string();
                let mark = holes.0.len();
                match holes.0.iter().find(|(n, _)| *n == name) {
                    // a hole named again matches what it matched the first time
                    Some((_, bound)) if *bound != value => continue,
                    Some(_) => {}
                    None => holes.0.push((name.clone(), value)),
                }
                if matches(rest, &subject[take..], holes) {
                    return true;
                }
                holes.0.truncate(mark);
            }
            false
        }
        [first, rest @ ..] => {
            let Some((head, tail)) = subject.split_first() else { return false };
            let mark = holes.0.len();
            let same = match (first, head) {
                (T::Group(a), T::Group(b)) if a.delimiter() == b.delimiter() => {
                    let (a, b): (Vec<_>, Vec<_>) = (a.stream().into_iter().collect(), b.stream().into_iter().collect());
                    matches(&a, &b, holes)
                }
                (T::Ident(a), T::Ident(b)) => a == b,
                (T::Punct(a), T::Punct(b)) => a.as_char() == b.as_char(),
                (T::Literal(a), T::Literal(b)) => a.to_string() == b.to_string(),
                _ => false,
            };
            if same && matches(rest, tail, holes) {
                return true;
            }
            holes.0.truncate(mark);
            false
        }
    }
}

struct Pass<'a> {
    rows: &'a [&'a Replacement],
    /// Each row's code, as tokens.
    patterns: Vec<Vec<proc_macro2::TokenTree>>,
    found: Vec<usize>,
    error: Option<TranslateError>,
    rule: &'a str,
    file: &'a str,
    /// Inside code the rows apply to when positive.
    depth: usize,
    /// The impls (`Map1 for Affine`) and functions (`fn to_dtype`) around the node
    /// visited, outermost first: what a row's `inside` names.
    within: Vec<String>,
}

impl Pass<'_> {
    /// The row whose code `node` is, and what its holes matched.
    fn row_of(&self, node: &dyn ToTokens) -> Option<(usize, Holes)> {
        if self.depth == 0 {
            return None;
        }
        let tokens: Vec<proc_macro2::TokenTree> = node.to_token_stream().into_iter().collect();
        self.rows.iter().zip(&self.patterns).enumerate().find_map(|(i, (r, pattern))| {
            let mut holes = Holes::default();
            let placed = r.inside.is_empty() || self.within.iter().any(|w| w == r.inside);
            (placed && matches(pattern, &tokens, &mut holes)).then_some((i, holes))
        })
    }

    /// Replaces `node` when it is a row's code and that row's replacement is of its kind
    /// (`kind` picks it); whether it did.
    fn replace<T: ToTokens + Clone>(&mut self, node: &mut T, kind: impl Fn(Code) -> Option<T>) -> bool {
        let Some((i, holes)) = self.row_of(node) else { return false };
        let text = fill(self.rows[i].with, &holes);
        let code = match Code::parse(&text) {
            Ok(code) => code,
            Err(e) => {
                let line = node.to_token_stream().into_iter().next().map_or(0, |t| t.span().start().line as u32);
                self.error.get_or_insert_with(|| TranslateError::unsupported(self.file, line, self.rows[i].upstream, format!("rule {}: the replacement with what the holes matched does not parse: {e}", self.rule)));
                return false;
            }
        };
        let Some(new) = kind(code) else { return false };
        *node = new;
        self.found[i] += 1;
        true
    }
}

fn is_rocm(ident: &syn::Ident, attrs: &[syn::Attribute]) -> bool {
    ident.to_string().contains("rocm") || attrs.iter().any(|a| a.path().is_ident("cfg") && mentions_rocm(a.meta.to_token_stream()))
}

impl VisitMut for Pass<'_> {
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        let rocm = usize::from(is_rocm(&f.sig.ident, &f.attrs));
        self.depth += rocm;
        self.within.push(format!("fn {}", f.sig.ident));
        syn::visit_mut::visit_item_fn_mut(self, f);
        self.within.pop();
        self.depth -= rocm;
    }

    fn visit_impl_item_fn_mut(&mut self, f: &mut syn::ImplItemFn) {
        let rocm = usize::from(is_rocm(&f.sig.ident, &f.attrs));
        self.depth += rocm;
        self.within.push(format!("fn {}", f.sig.ident));
        syn::visit_mut::visit_impl_item_fn_mut(self, f);
        self.within.pop();
        self.depth -= rocm;
    }

    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        let ty = i.self_ty.to_token_stream().to_string();
        self.within.push(match &i.trait_ {
            Some((_, path, _)) => format!("{} for {ty}", path.to_token_stream()),
            None => ty,
        });
        syn::visit_mut::visit_item_impl_mut(self, i);
        self.within.pop();
    }

    fn visit_item_mod_mut(&mut self, m: &mut syn::ItemMod) {
        let rocm = usize::from(is_rocm(&m.ident, &m.attrs));
        self.depth += rocm;
        syn::visit_mut::visit_item_mod_mut(self, m);
        self.depth -= rocm;
    }

    fn visit_expr_block_mut(&mut self, b: &mut syn::ExprBlock) {
        let rocm = usize::from(b.attrs.iter().any(|a| a.path().is_ident("cfg") && mentions_rocm(a.meta.to_token_stream())));
        self.depth += rocm;
        syn::visit_mut::visit_expr_block_mut(self, b);
        self.depth -= rocm;
    }

    fn visit_item_mut(&mut self, item: &mut syn::Item) {
        if !self.replace(item, |c| if let Code::Item(i) = c { Some(i) } else { None }) {
            syn::visit_mut::visit_item_mut(self, item);
        }
    }

    fn visit_fn_arg_mut(&mut self, arg: &mut syn::FnArg) {
        if !self.replace(arg, |c| if let Code::Param(p) = c { Some(p) } else { None }) {
            syn::visit_mut::visit_fn_arg_mut(self, arg);
        }
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if !self.replace(e, |c| if let Code::Expr(x) = c { Some(x) } else { None }) {
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &[Replacement] = &[
        Replacement { krate: "candle-nn", file: "src/ops.rs", inside: "", upstream: "(1 , 32 , 1)", with: "(1, wave(dev), 1)", count: 1, why: "t" },
        Replacement { krate: "candle-nn", file: "src/ops.rs", inside: "", upstream: "use a :: Old ;", with: "use a::New;", count: 1, why: "t" },
    ];

    fn run(label: &str, src: &str, scope: Scope) -> Result<(String, usize), TranslateError> {
        let mut parsed = syn::parse_file(src).unwrap();
        let n = apply_rows("wave-launches", "T", ROWS, label, "src/ops.rs", &mut parsed, scope)?;
        Ok((prettyplease::unparse(&parsed), n))
    }

    const TWINNED: &str = "use a::Old;\nimpl S {\n    fn cuda_fwd(&self) { let c = Cfg { block_dim: (1, 32, 1) }; }\n    #[cfg(feature = \"rocm\")]\n    fn fwd2(&self) { let c = Cfg { block_dim: (1, 32, 1) }; }\n}\n";

    #[test]
    fn rocm_functions_scope_rewrites_the_rocm_code_only() {
        let err = run("candle-nn 0.11.1 src/ops.rs", TWINNED, Scope::RocmCode).unwrap_err().to_string();
        // the `use` item is outside any ROCm function: not found there
        assert!(err.contains("use a :: Old ; (0 times in ROCm code, expected 1)"), "{err}");
        let src = TWINNED.replace("use a::Old;\n", "#[cfg(feature = \"rocm\")]\nfn rocm_f() { use a::Old; }\n");
        let (out, n) = run("candle-nn 0.11.1 src/ops.rs", &src, Scope::RocmCode).unwrap();
        assert_eq!(n, 2);
        assert!(out.contains("fn cuda_fwd(&self) {\n        let c = Cfg { block_dim: (1, 32, 1) };"), "{out}");
        assert!(out.contains("fn fwd2(&self) {\n        let c = Cfg {\n            block_dim: (1, wave(dev), 1),"), "{out}");
        assert!(out.contains("use a::New;"), "{out}");
    }

    /// A row limited to one impl or function: the same code elsewhere is left alone.
    #[test]
    fn rows_inside_an_impl_or_a_function_rewrite_there_only() {
        const INSIDE: &[Replacement] = &[
            Replacement { krate: "candle-core", file: "m.rs", inside: "Map1 for Affine", upstream: "cfg (el)", with: "packed(el)", count: 1, why: "t" },
            Replacement { krate: "candle-core", file: "m.rs", inside: "fn to_dtype", upstream: "cfg (el)", with: "cast(el)", count: 1, why: "t" },
        ];
        let src = "impl Map1 for Affine { fn f() { cfg(el); } }
impl Map1 for Where { fn f() { cfg(el); } }
impl S { fn to_dtype() { cfg(el); } }
";
        let mut parsed = syn::parse_file(src).unwrap();
        assert_eq!(apply_rows("r", "T", INSIDE, "candle-core 0.11.1 m.rs", "m.rs", &mut parsed, Scope::Everywhere).unwrap(), 2);
        let out = prettyplease::unparse(&parsed);
        assert!(out.contains("impl Map1 for Affine {
    fn f() {
        packed(el);"), "{out}");
        assert!(out.contains("impl Map1 for Where {
    fn f() {
        cfg(el);"), "{out}");
        assert!(out.contains("fn to_dtype() {
        cast(el);"), "{out}");
        let mut other = syn::parse_file("impl Map1 for Where { fn f() { cfg(el); } }
").unwrap();
        let err = apply_rows("r", "T", INSIDE, "candle-core 0.11.1 m.rs", "m.rs", &mut other, Scope::Everywhere).unwrap_err().to_string();
        assert!(err.contains("cfg (el) (0 times inside `Map1 for Affine`, expected 1)"), "{err}");
    }

    #[test]
    fn everywhere_scope_rewrites_items_and_expressions_anywhere() {
        let src = "use a::Old;\nfn f() { g((1, 32, 1)); }\n";
        let (out, n) = run("candle-nn 0.11.1 src/ops.rs", src, Scope::Everywhere).unwrap();
        assert_eq!((out.as_str(), n), ("use a::New;\nfn f() {\n    g((1, wave(dev), 1));\n}\n", 2));
    }

    #[test]
    fn another_count_is_an_error_naming_file_code_and_table() {
        let err = run("candle-nn 0.11.1 src/ops.rs", "use a::Old;\nfn f() {}\n", Scope::Everywhere).unwrap_err().to_string();
        assert!(err.starts_with("src/ops.rs"), "{err}");
        assert!(err.contains("(1 , 32 , 1) (0 times, expected 1)") && err.contains("rule wave-launches: upstream changed (check the row in T)"), "{err}");
    }

    #[test]
    fn parameters_are_replaced_as_written() {
        const PARAMS: &[Replacement] = &[Replacement { krate: "candle-core", file: "d.rs", inside: "", upstream: "code_object : & str", with: "code_object: &[u8]", count: 1, why: "t" }];
        let mut parsed = syn::parse_file("impl D { pub fn load(&self, name: &str, code_object: &str) {} }\n").unwrap();
        let n = apply_rows("code-object-inputs", "T", PARAMS, "candle-core 0.11.1 d.rs", "d.rs", &mut parsed, Scope::Everywhere).unwrap();
        assert_eq!(n, 1);
        assert!(prettyplease::unparse(&parsed).contains("pub fn load(&self, name: &str, code_object: &[u8])"));
    }

    #[test]
    fn other_crates_are_untouched() {
        assert_eq!(run("candle-core 0.11.1 src/ops.rs", TWINNED, Scope::Everywhere).unwrap().1, 0);
    }

    #[test]
    fn table_rows_parse_and_print_like_the_matcher() {
        use super::super::mapping::{CODE_OBJECT_INPUTS, OWN_KERNEL_BUILDS, UPSTREAM_REPAIRS, WAVE_LAUNCHES};
        use super::super::mapping::ELEMENTWISE_LAUNCHES;
        for row in WAVE_LAUNCHES.iter().chain(UPSTREAM_REPAIRS).chain(CODE_OBJECT_INPUTS).chain(OWN_KERNEL_BUILDS).chain(ELEMENTWISE_LAUNCHES) {
            // holes as plain identifiers
            let upstream = row.upstream.replace('$', "hole_");
            let printed = match Code::parse(&upstream).unwrap() {
                Code::Item(i) => i.to_token_stream().to_string(),
                Code::Param(p) => p.to_token_stream().to_string(),
                Code::Expr(e) => e.to_token_stream().to_string(),
            };
            assert_eq!(printed, upstream);
            Code::parse(&fill(row.with, &Holes::placeholders(row.with))).unwrap();
            for hole in hole_names(row.with) {
                assert!(hole_names(row.upstream).contains(&hole), "{}: ${hole} is not a hole of the row's code", row.upstream);
            }
        }
    }

    /// A changed argument (`el` renamed `elem_count`) and a reformatting keep matching a
    /// row with a hole; the replacement writes what the hole matched.
    #[test]
    fn holes_match_any_argument_and_the_replacement_takes_it() {
        const HOLES: &[Replacement] = &[
            Replacement { krate: "candle-core", file: "m.rs", inside: "", upstream: "LaunchConfig :: for_num_elems ($n)", with: "LaunchConfig::for_packed_elems($n, 4)", count: 2, why: "t" },
            Replacement { krate: "candle-core", file: "m.rs", inside: "", upstream: "unsafe { dev . alloc :: < $t > ($n) } . w () ?", with: "unsafe { dev.alloc::<$t>($n) }?", count: 1, why: "t" },
        ];
        let src = "fn f() { let a = LaunchConfig::for_num_elems(el as u32); let b = LaunchConfig :: for_num_elems ( elem_count ); let c = unsafe { dev.alloc::<bf16>(n * 2) }.w()?; }\n";
        let mut parsed = syn::parse_file(src).unwrap();
        assert_eq!(apply_rows("r", "T", HOLES, "candle-core 0.11.1 m.rs", "m.rs", &mut parsed, Scope::Everywhere).unwrap(), 3);
        let out = prettyplease::unparse(&parsed);
        assert!(out.contains("LaunchConfig::for_packed_elems((el as u32), 4)") && out.contains("LaunchConfig::for_packed_elems(elem_count, 4)"), "{out}");
        assert!(out.contains("unsafe { dev.alloc::<bf16>((n * 2)) }?"), "{out}");
        // a hole bound twice must match the same tokens both times
        const TWICE: &[Replacement] = &[Replacement { krate: "candle-core", file: "m.rs", inside: "", upstream: "f ($a , $a)", with: "g($a)", count: 1, why: "t" }];
        let mut parsed = syn::parse_file("fn h() { f(x, x); f(x, y); }\n").unwrap();
        assert_eq!(apply_rows("r", "T", TWICE, "candle-core 0.11.1 m.rs", "m.rs", &mut parsed, Scope::Everywhere).unwrap(), 1);
        assert!(prettyplease::unparse(&parsed).contains("g(x);\n    f(x, y);"));
    }
}
