//! Rule `build-tools`: the build script of a crate that compiles its own CUDA kernels with
//! cudaforge or bindgen_cuda compiles them with candle-rocm-build instead (what `cargo
//! xtask port-crate` does to an extension crate's `build.rs`).
//!
//! * the tools' names become candle-rocm-build's ([`BUILD_TOOL_NAMES`]), in `use` items
//!   (keeping the local name: `use candle_rocm_build::Builder as KernelBuilder`) and paths;
//! * the methods of a chain that starts at a builder (its constructor, or a variable bound
//!   to a chain that does) become candle-rocm-build's ([`BUILD_TOOL_METHODS`]): renamed,
//!   or taken out and listed (nvcc tuning; CUTLASS, which has no AMD meaning);
//! * the CUDA libraries of `cargo:rustc-link-lib` lines become ROCm's ([`LINK_LIBRARIES`]);
//! * `feature = "cuda"` in the script's `cfg` attributes becomes `feature = "rocm"`: the ported
//!   script builds for AMD, so what it did under `cuda` it does under `rocm` (and its
//!   `not(cuda)` fallback `main` steps aside for it).
//!
//! A name or method of the tools that no row covers is an error naming file, line and
//! construct. Chains that start elsewhere (`Command::new("nvcc").arg(..)`) are left alone.
//!
//! Rule `toolkit-probes`: a function of the script that runs nvcc (`Command::new("nvcc")`)
//! asks the CUDA toolkit something, most often its version, which the script turns into
//! cfgs (`feature = "cuda-12080"`). An AMD build has no CUDA toolkit: each `let` that binds
//! such a call, and every statement after it in the block that reads what it bound, are
//! taken out and listed, so what the script derived from the answer stays unset, as on a
//! toolkit older than every version it knows. A probe called any other way is listed for a
//! hand port.

use std::collections::BTreeSet;

use proc_macro2::{Literal, TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};

use super::cuda_gates::calls_any;
use super::gaps::{describe, Gap};
use super::mapping::{BuildToolMethod, BUILD_TOOL_METHODS, BUILD_TOOL_NAMES, LINK_LIBRARIES};
use super::mirror::{parse, print};
use crate::TranslateError;

/// The crate candle-rocm-build is imported as.
const ROCM_TOOL: &str = "candle_rocm_build";

/// A ported build script.
#[derive(Debug, Clone)]
pub struct PortedScript {
    pub text: String,
    /// Names, methods and link lines rewritten.
    pub rewrites: usize,
    /// Statements rule `toolkit-probes` took out.
    pub probe_statements: usize,
    /// Calls taken out, each with why.
    pub gaps: Vec<Gap>,
}

/// Ports `source` (a build script, named `file` in errors and gaps).
pub fn port_build_script(file: &str, source: &str) -> Result<PortedScript, TranslateError> {
    let mut parsed = parse(file, source)?;
    let probes = toolkit_probes(&parsed);
    let mut dropper = ProbeDropper { file, probes: &probes, gaps: Vec::new() };
    dropper.visit_file_mut(&mut parsed);
    let probe_statements = dropper.gaps.len();
    // probes no call is left of: they never run in the AMD build
    let mut calls = CallCounter { probes: &probes, called: BTreeSet::new() };
    syn::visit::Visit::visit_file(&mut calls, &parsed);
    let silent_probes = probes.difference(&calls.called).cloned().collect();
    let mut port = Port { file, builder_types: BTreeSet::new(), builder_vars: BTreeSet::new(), rewrites: 0, gaps: dropper.gaps, error: None, silent_probes, current_fn: None };
    port.visit_file_mut(&mut parsed);
    if let Some(e) = port.error {
        return Err(e);
    }
    Ok(PortedScript { text: print(&mut parsed), rewrites: port.rewrites, probe_statements, gaps: port.gaps })
}

fn is_tool(ident: &str) -> bool {
    BUILD_TOOL_NAMES.iter().any(|(tool, _, _)| *tool == ident)
}

fn rocm_name(tool: &str, name: &str) -> Option<&'static str> {
    BUILD_TOOL_NAMES.iter().find(|(t, n, _)| *t == tool && *n == name).map(|(_, _, to)| *to)
}

struct Port<'a> {
    file: &'a str,
    /// Local names of the tools' builder types (`KernelBuilder`).
    builder_types: BTreeSet<String>,
    /// Variables bound to a builder chain (`builder`, `bindings`).
    builder_vars: BTreeSet<String>,
    rewrites: usize,
    gaps: Vec<Gap>,
    error: Option<TranslateError>,
    /// Toolkit probes that are never called in the ported script (rule `toolkit-probes`).
    silent_probes: BTreeSet<String>,
    /// The function being visited.
    current_fn: Option<String>,
}

/// Whether `call` is `Command::new("nvcc")` (any path to `Command`, any path to nvcc).
fn runs_nvcc(call: &syn::ExprCall) -> bool {
    matches!(&*call.func, syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "new") && p.path.segments.iter().any(|s| s.ident == "Command"))
        && matches!(call.args.first(), Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) if s.value().rsplit('/').next() == Some("nvcc"))
}

/// The script's functions that run nvcc (rule `toolkit-probes`).
fn toolkit_probes(file: &syn::File) -> BTreeSet<String> {
    struct RunsNvcc(bool);
    impl<'ast> syn::visit::Visit<'ast> for RunsNvcc {
        fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
            self.0 |= runs_nvcc(call);
            syn::visit::visit_expr_call(self, call);
        }
    }
    let mut probes = BTreeSet::new();
    for item in &file.items {
        if let syn::Item::Fn(f) = item {
            let mut v = RunsNvcc(false);
            syn::visit::Visit::visit_block(&mut v, &f.block);
            if v.0 && f.sig.ident != "main" {
                probes.insert(f.sig.ident.to_string());
            }
        }
    }
    probes
}

/// The probe a call expression calls, if any (`probe()`, `self::probe()`).
fn probe_called<'a>(expr: &syn::Expr, probes: &'a BTreeSet<String>) -> Option<&'a String> {
    let syn::Expr::Call(call) = expr else { return None };
    let syn::Expr::Path(p) = &*call.func else { return None };
    let name = p.path.segments.last()?.ident.to_string();
    probes.get(&name)
}

/// The names a pattern binds.
fn bound_names(pat: &syn::Pat, out: &mut BTreeSet<String>) {
    match pat {
        syn::Pat::Ident(i) => {
            out.insert(i.ident.to_string());
        }
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|p| bound_names(p, out)),
        syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|p| bound_names(p, out)),
        syn::Pat::Type(t) => bound_names(&t.pat, out),
        syn::Pat::Reference(r) => bound_names(&r.pat, out),
        syn::Pat::Slice(s) => s.elems.iter().for_each(|p| bound_names(p, out)),
        syn::Pat::Struct(s) => s.fields.iter().for_each(|f| bound_names(&f.pat, out)),
        _ => {}
    }
}

/// Whether `tokens` name one of `names` (macro arguments and format strings included:
/// `println!("{major}")` reads `major`).
fn reads_any(tokens: TokenStream, names: &BTreeSet<String>) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(i) => names.contains(&i.to_string()),
        TokenTree::Group(g) => reads_any(g.stream(), names),
        TokenTree::Literal(l) => {
            let text = l.to_string();
            names.iter().any(|n| text.contains(&format!("{{{n}}}")) || text.contains(&format!("{{{n}:")))
        }
        _ => false,
    })
}

/// Takes out each `let` bound to a probe's call and the statements after it that read it.
struct ProbeDropper<'a> {
    file: &'a str,
    probes: &'a BTreeSet<String>,
    gaps: Vec<Gap>,
}

impl VisitMut for ProbeDropper<'_> {
    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        let mut tainted = BTreeSet::new();
        let mut kept = Vec::new();
        for stmt in std::mem::take(&mut block.stmts) {
            let line = stmt.span().start().line as u32;
            if let syn::Stmt::Local(local) = &stmt {
                if let Some(probe) = local.init.as_ref().and_then(|i| probe_called(&i.expr, self.probes)) {
                    bound_names(&local.pat, &mut tainted);
                    self.gaps.push(Gap::new(self.file, line, &describe(&stmt), "dropped", &format!("`{probe}` runs nvcc to ask the CUDA toolkit; an AMD build has none, so what the script derives from the answer stays unset (rule toolkit-probes)")));
                    continue;
                }
            }
            if !tainted.is_empty() && reads_any(stmt.to_token_stream(), &tainted) {
                if let syn::Stmt::Local(local) = &stmt {
                    bound_names(&local.pat, &mut tainted);
                }
                self.gaps.push(Gap::new(self.file, line, &describe(&stmt), "dropped", "reads the CUDA toolkit's answer, which an AMD build has not got (rule toolkit-probes)"));
                continue;
            }
            kept.push(stmt);
        }
        block.stmts = kept;
        visit_mut::visit_block_mut(self, block);
    }
}

/// The probes still called in the script.
struct CallCounter<'a> {
    probes: &'a BTreeSet<String>,
    called: BTreeSet<String>,
}

impl<'ast> syn::visit::Visit<'ast> for CallCounter<'_> {
    fn visit_expr(&mut self, expr: &'ast syn::Expr) {
        if let Some(probe) = probe_called(expr, self.probes) {
            self.called.insert(probe.clone());
        }
        syn::visit::visit_expr(self, expr);
    }

    /// `println!("{}", probe())`: a call in a macro's arguments
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        for probe in self.probes {
            if calls_any(mac.tokens.clone(), std::slice::from_ref(probe)) {
                self.called.insert(probe.clone());
            }
        }
    }
}

impl Port<'_> {
    fn fail(&mut self, line: usize, construct: &str, reason: &str) {
        if self.error.is_none() {
            self.error = Some(TranslateError::unsupported(self.file, line as u32, construct, format!("{reason} (rule build-tools)")));
        }
    }

    /// `use cudaforge::{KernelBuilder, Result}` below the crate's name.
    fn port_use(&mut self, tool: &str, tree: &mut syn::UseTree) {
        match tree {
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let Some(to) = rocm_name(tool, &name) else {
                    return self.fail(n.ident.span().start().line, &format!("{tool}::{name}"), "no candle-rocm-build counterpart: add a row to backend::mapping::BUILD_TOOL_NAMES");
                };
                if to.ends_with("Builder") {
                    self.builder_types.insert(name.clone());
                }
                if to != name {
                    *tree = syn::UseTree::Rename(syn::UseRename { ident: syn::Ident::new(to, n.ident.span()), as_token: Default::default(), rename: n.ident.clone() });
                }
                self.rewrites += 1;
            }
            syn::UseTree::Rename(r) => {
                let name = r.ident.to_string();
                let Some(to) = rocm_name(tool, &name) else {
                    return self.fail(r.ident.span().start().line, &format!("{tool}::{name}"), "no candle-rocm-build counterpart: add a row to backend::mapping::BUILD_TOOL_NAMES");
                };
                if to.ends_with("Builder") {
                    self.builder_types.insert(r.rename.to_string());
                }
                r.ident = syn::Ident::new(to, r.ident.span());
                self.rewrites += 1;
            }
            syn::UseTree::Group(g) => g.items.iter_mut().for_each(|t| self.port_use(tool, t)),
            syn::UseTree::Glob(g) => self.fail(g.star_token.span().start().line, &format!("use {tool}::*"), "a glob import: name what is used"),
            syn::UseTree::Path(p) => self.fail(p.ident.span().start().line, &format!("{tool}::{}", p.ident), "no candle-rocm-build counterpart: add a row to backend::mapping::BUILD_TOOL_NAMES"),
        }
    }

    /// Whether `expr`'s chain starts at a builder: its constructor or a bound variable.
    fn starts_at_builder(&self, expr: &syn::Expr) -> bool {
        let mut e = expr;
        loop {
            e = match e {
                syn::Expr::MethodCall(m) => &m.receiver,
                syn::Expr::Try(t) => &t.expr,
                syn::Expr::Paren(p) => &p.expr,
                syn::Expr::Reference(r) => &r.expr,
                syn::Expr::Call(c) => {
                    let syn::Expr::Path(p) = &*c.func else { return false };
                    let segments: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                    return match segments.as_slice() {
                        [ty, _] => self.builder_types.contains(ty),
                        [tool, ty, _] => (is_tool(tool) && rocm_name(tool, ty).is_some_and(|to| to.ends_with("Builder"))) || (tool == ROCM_TOOL && ty == "Builder"),
                        _ => false,
                    };
                }
                syn::Expr::Path(p) => return p.path.get_ident().is_some_and(|i| self.builder_vars.contains(&i.to_string())),
                _ => return false,
            };
        }
    }

    /// `cargo:rustc-link-lib=[KIND=]cudart` in a string literal, with ROCm's library.
    fn port_link_line(&mut self, text: &str) -> Option<String> {
        let at = text.find("rustc-link-lib=")? + "rustc-link-lib=".len();
        let (head, spec) = text.split_at(at);
        let (kind, name) = spec.rsplit_once('=').map_or(("", spec), |(k, n)| (k, n));
        let to = LINK_LIBRARIES.iter().find(|(cuda, _)| *cuda == name)?.1;
        self.rewrites += 1;
        Some(if kind.is_empty() { format!("{head}{to}") } else { format!("{head}{kind}={to}") })
    }

    fn port_tokens(&mut self, tokens: TokenStream) -> TokenStream {
        tokens
            .into_iter()
            .map(|t| match t {
                TokenTree::Literal(lit) => {
                    let ported = syn::parse_str::<syn::LitStr>(&lit.to_string()).ok().and_then(|s| self.port_link_line(&s.value()));
                    match ported {
                        Some(text) => {
                            let mut new = Literal::string(&text);
                            new.set_span(lit.span());
                            TokenTree::Literal(new)
                        }
                        None => TokenTree::Literal(lit),
                    }
                }
                TokenTree::Group(g) => {
                    let mut new = proc_macro2::Group::new(g.delimiter(), self.port_tokens(g.stream()));
                    new.set_span(g.span());
                    TokenTree::Group(new)
                }
                other => other,
            })
            .collect()
    }
}

impl VisitMut for Port<'_> {
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        let outer = self.current_fn.replace(f.sig.ident.to_string());
        visit_mut::visit_item_fn_mut(self, f);
        self.current_fn = outer;
    }

    fn visit_item_use_mut(&mut self, item: &mut syn::ItemUse) {
        if let syn::UseTree::Path(p) = &mut item.tree {
            let tool = p.ident.to_string();
            if is_tool(&tool) {
                p.ident = syn::Ident::new(ROCM_TOOL, p.ident.span());
                self.port_use(&tool, &mut p.tree);
            }
        }
    }

    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        let tool = path.segments.first().map(|s| s.ident.to_string()).unwrap_or_default();
        if is_tool(&tool) && path.segments.len() >= 2 {
            let name = path.segments[1].ident.to_string();
            let Some(to) = rocm_name(&tool, &name) else {
                return self.fail(path.span().start().line, &describe(path), "no candle-rocm-build counterpart: add a row to backend::mapping::BUILD_TOOL_NAMES");
            };
            path.segments[0].ident = syn::Ident::new(ROCM_TOOL, path.segments[0].ident.span());
            path.segments[1].ident = syn::Ident::new(to, path.segments[1].ident.span());
            self.rewrites += 1;
        }
        visit_mut::visit_path_mut(self, path);
    }

    fn visit_local_mut(&mut self, local: &mut syn::Local) {
        if let (Some(init), syn::Pat::Ident(p)) = (&local.init, &local.pat) {
            if self.starts_at_builder(&init.expr) {
                self.builder_vars.insert(p.ident.to_string());
            }
        }
        visit_mut::visit_local_mut(self, local);
    }

    fn visit_expr_mut(&mut self, expr: &mut syn::Expr) {
        // a build script that runs nvcc itself: no builder to map, listed for a hand port
        if let syn::Expr::Call(call) = expr {
            let in_silent_probe = self.current_fn.as_ref().is_some_and(|f| self.silent_probes.contains(f));
            if runs_nvcc(call) && !in_silent_probe {
                let line = call.span().start().line as u32;
                self.gaps.push(Gap::new(self.file, line, &describe(&*call), "needs a hand port", "the build script runs nvcc itself: compile with candle-rocm-build's Builder (build or build_lib) instead"));
            }
        }
        if let syn::Expr::MethodCall(m) = expr {
            if self.starts_at_builder(&m.receiver) {
                let method = m.method.to_string();
                let line = m.method.span().start().line;
                match BUILD_TOOL_METHODS.iter().find(|(name, _)| *name == method).map(|(_, to)| *to) {
                    Some(BuildToolMethod::To(to)) => {
                        m.method = syn::Ident::new(to, m.method.span());
                        self.rewrites += 1;
                    }
                    Some(to @ (BuildToolMethod::Drop(why) | BuildToolMethod::Unmappable(why))) => {
                        let construct = format!(".{method}({})", describe(&m.args));
                        let what = if matches!(to, BuildToolMethod::Drop(_)) { "dropped" } else { "needs a hand port" };
                        self.gaps.push(Gap::new(self.file, line as u32, &construct, what, why));
                        *expr = (*m.receiver).clone();
                        return self.visit_expr_mut(expr);
                    }
                    None => return self.fail(line, &format!(".{method}(..)"), "a build tool's method with no candle-rocm-build counterpart: add a row to backend::mapping::BUILD_TOOL_METHODS"),
                }
            }
        }
        visit_mut::visit_expr_mut(self, expr);
    }

    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        mac.tokens = self.port_tokens(std::mem::take(&mut mac.tokens));
        visit_mut::visit_macro_mut(self, mac);
    }

    fn visit_attribute_mut(&mut self, attr: &mut syn::Attribute) {
        if attr.path().is_ident("cfg") || attr.path().is_ident("cfg_attr") {
            if let syn::Meta::List(list) = &mut attr.meta {
                let (tokens, n) = cuda_feature_as_rocm(std::mem::take(&mut list.tokens));
                list.tokens = tokens;
                self.rewrites += n;
            }
        }
        visit_mut::visit_attribute_mut(self, attr);
    }
}

/// `feature = "cuda"` → `feature = "rocm"` anywhere in a cfg predicate; how many.
fn cuda_feature_as_rocm(tokens: TokenStream) -> (TokenStream, usize) {
    let mut out = Vec::new();
    let mut count = 0;
    for t in tokens {
        let t = match t {
            TokenTree::Literal(lit) if lit.to_string() == "\"cuda\"" && matches!(out.as_slice(), [.., TokenTree::Ident(i), TokenTree::Punct(p)] if i == "feature" && p.as_char() == '=') => {
                count += 1;
                let mut new = Literal::string("rocm");
                new.set_span(lit.span());
                TokenTree::Literal(new)
            }
            TokenTree::Group(g) => {
                let (inner, n) = cuda_feature_as_rocm(g.stream());
                count += n;
                let mut new = proc_macro2::Group::new(g.delimiter(), inner);
                new.set_span(g.span());
                TokenTree::Group(new)
            }
            other => other,
        };
        out.push(t);
    }
    (out.into_iter().collect(), count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before and after: a cudaforge build script of an extension crate.
    #[test]
    fn a_cudaforge_library_build_becomes_candle_rocm_builds() {
        let src = r#"use cudaforge::{KernelBuilder, Result};
fn main() -> Result<()> {
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut builder = KernelBuilder::new().source_glob("kernels/*.cu").arg("-O3").thread_percentage(0.5);
    builder = builder.arg("--use_fast_math").with_cutlass(Some("7d49e6c"));
    builder.build_lib(out_dir.join("librotary.a"))?;
    let status = std::process::Command::new("nvcc").arg("--version").status();
    println!("cargo::rustc-link-search={}", out_dir.display());
    println!("cargo::rustc-link-lib=rotary");
    println!("cargo::rustc-link-lib=dylib=cudart");
    Ok(())
}
"#;
        let out = port_build_script("build.rs", src).unwrap();
        let t = &out.text;
        assert!(t.contains("use candle_rocm_build::{Builder as KernelBuilder, Result};"), "{t}");
        assert!(t.contains("KernelBuilder::new().kernel_glob(\"kernels/*.cu\").nvcc_arg(\"-O3\");"), "{t}");
        assert!(t.contains("builder = builder.nvcc_arg(\"--use_fast_math\");"), "{t}");
        assert!(t.contains("builder.build_lib(out_dir.join(\"librotary.a\"))?;"), "{t}");
        assert!(t.contains("Command::new(\"nvcc\").arg(\"--version\")"), "a chain that starts elsewhere is left alone: {t}");
        assert!(t.contains("\"cargo::rustc-link-lib=dylib=amdhip64\"") && t.contains("\"cargo::rustc-link-lib=rotary\""), "{t}");
        let listed: Vec<(&str, u32)> = out.gaps.iter().map(|g| (g.feature.as_str(), g.line)).collect();
        assert_eq!(listed, [("dropped", 4), ("needs a hand port", 5), ("needs a hand port", 7)]);
        assert!(out.gaps[2].construct.contains("Command :: new (\"nvcc\")") && out.gaps[2].reason.contains("runs nvcc itself"), "{:?}", out.gaps[2]);
        assert!(out.gaps[1].construct.starts_with(".with_cutlass(Some (\"7d49e6c\"))"), "{:?}", out.gaps);
    }

    #[test]
    fn bindgen_cudas_builder_and_full_paths() {
        let src = "fn main() {\n    let b = bindgen_cuda::Builder::default().kernel_paths(vec![\"k.cu\"]).include_paths(vec![\"inc\"]);\n    b.build_lib(\"libk.a\");\n}\n";
        let t = port_build_script("build.rs", src).unwrap().text;
        assert!(t.contains("candle_rocm_build::Builder::default()\n        .kernels(vec![\"k.cu\"])\n        .include_dirs(vec![\"inc\"]);"), "{t}");
        assert!(t.contains("b.build_lib(\"libk.a\")"), "{t}");
    }

    #[test]
    fn the_scripts_cuda_gates_become_rocm_gates() {
        // mistral.rs 0.8.1: the CUDA build's main, and a fallback main for builds without a GPU backend
        let src = "#[cfg(all(feature = \"cuda\", target_family = \"unix\"))]\nfn main() { cudaforge::KernelBuilder::new().source_glob(\"k/*.cu\").build_lib(\"l.a\").unwrap(); }\n                   #[cfg(not(any(all(feature = \"cuda\", target_family = \"unix\"), feature = \"metal\")))]\nfn main() {}\n";
        let out = port_build_script("build.rs", src).unwrap().text;
        assert!(out.contains("#[cfg(all(feature = \"rocm\", target_family = \"unix\"))]"), "{out}");
        assert!(out.contains("#[cfg(not(any(all(feature = \"rocm\", target_family = \"unix\"), feature = \"metal\")))]"), "{out}");
        assert!(!out.contains("\"cuda\""), "{out}");
    }

    /// Before and after: mistral.rs 0.8.1's quant build script asks nvcc for the toolkit's
    /// version and sets a feature from it; the AMD build sets none, and nvcc never runs.
    #[test]
    fn toolkit_probes_and_what_reads_their_answer_are_taken_out() {
        let src = r#"#[cfg(feature = "cuda")]
fn cuda_version() -> (usize, usize) {
    let out = std::process::Command::new("nvcc").arg("--version").output().unwrap();
    (12, out.stdout.len())
}
fn main() {
    #[cfg(feature = "cuda")]
    {
        println!("cargo:rustc-link-lib=dylib=cudart");
        let (major, minor) = cuda_version();
        let tag = format!("{major}0{minor}0");
        println!("cargo:rustc-cfg=feature=\"cuda-{}\"", tag);
        println!("cargo:rerun-if-changed=build.rs");
    }
}
"#;
        let out = port_build_script("build.rs", src).unwrap();
        let t = &out.text;
        assert!(!t.contains("= cuda_version()") && !t.contains("let tag") && !t.contains("rustc-cfg"), "{t}");
        assert!(t.contains("fn cuda_version()") && t.contains("rerun-if-changed=build.rs") && t.contains("dylib=amdhip64"), "{t}");
        let listed: Vec<(&str, u32)> = out.gaps.iter().map(|g| (g.feature.as_str(), g.line)).collect();
        assert_eq!(listed, [("dropped", 10), ("dropped", 11), ("dropped", 12)], "the probe never runs: no hand port listed");
        assert!(out.gaps[0].reason.contains("`cuda_version` runs nvcc"), "{:?}", out.gaps[0]);
        assert_eq!(out.probe_statements, 3);
        // a probe called another way still needs a hand port
        let src = "fn v() -> u32 { std::process::Command::new(\"nvcc\").status().unwrap(); 1 }\nfn main() { println!(\"{}\", v()); }\n";
        let out = port_build_script("build.rs", src).unwrap();
        assert_eq!(out.gaps.len(), 1);
        assert!(out.gaps[0].reason.contains("runs nvcc itself"), "{:?}", out.gaps);
    }

    #[test]
    fn what_no_row_covers_is_an_error_naming_it() {
        let err = port_build_script("build.rs", "use cudaforge::KernelBuilder;\nfn main() {\n    KernelBuilder::new()\n        .emit_fatbin();\n}\n").unwrap_err().to_string();
        assert!(err.starts_with("build.rs:4: .emit_fatbin(..)") && err.contains("BUILD_TOOL_METHODS"), "{err}");
        let err = port_build_script("build.rs", "use cudaforge::detect_compute_cap;\nfn main() {}\n").unwrap_err().to_string();
        assert!(err.starts_with("build.rs:1: cudaforge::detect_compute_cap"), "{err}");
    }
}
