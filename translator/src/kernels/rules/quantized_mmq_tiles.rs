//! Rule `quantized-mmq-tiles`: Candle's older MMQ kernels take ggml's AMD tiles.
//!
//! `quantized.cu`'s `mul_mat_q*` (ggml's MMQ before its rewrite) carry ggml's tile
//! macros for every GPU family (`MMQ_X_Q4_0_RDNA2`, `..._RDNA1`, `..._AMPERE`, with
//! `MMQ_Y_*` and `NWARPS_*`), but upstream's kernels name the `_AMPERE` ones only. Each
//! such initializer (`const int mmq_x = MMQ_X_Q4_0_AMPERE;`) becomes
//! `CANDLE_MMQ_TILE(MMQ_X_Q4_0)`, which [`QuantizedMmqTiles::select`] (inserted before the
//! first kernel) resolves per device pass as ggml did: `_RDNA2` on RDNA2 and later,
//! `_RDNA1` on other AMD arches, `_AMPERE` on NVIDIA, so hip-on-cuda's build is
//! upstream's. The kernels of the quant types in `second_only` name
//! `CANDLE_MMQ_TILE_RDNA1` instead, `_RDNA1` on every AMD arch (their `_RDNA2` tile
//! spills). Each kernel gets `__launch_bounds__(WARP_SIZE * CANDLE_MMQ_TILE(NWARPS_<T>))`
//! (or the other macro), its own block.
//!
//! The launcher must launch the same tile: [`host_table`] writes the AMD columns of the
//! same macros as `quantized_mmq_tiles.rs`, which candle-core's ROCm launcher reads by
//! the device's ggml compute capability (backend rule `wave-launches`).
//!
//! A kernel with only some of the three initializers, one already bounded, another
//! number of kernels than the data says, a `second_only` quant type no kernel takes, or
//! a tile macro without its AMD definitions is an error naming file and line (upstream
//! changed: check the row).
//!
//! [`QuantizedMmqTiles::select`]: crate::kernels::mapping::QuantizedMmqTiles::select

use std::collections::BTreeMap;

use super::launch_bounds::kernel_name;
use super::tokens::{next_significant, prev_significant, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{QuantizedMmqTiles, QUANTIZED_MMQ_TILES};
use crate::lexer::{self, Token, TokenKind};
use crate::TranslateError;

/// The three tile parameters, as the macros' prefixes spell them.
const PARAMS: [&str; 3] = ["MMQ_X", "MMQ_Y", "NWARPS"];

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    if unit.path != QUANTIZED_MMQ_TILES.file {
        return Ok(0);
    }
    rewrite(unit, &QUANTIZED_MMQ_TILES)
}

/// One kernel that takes a tile: where its definition and name begin, its name, the
/// quant type (`Q4_0`) and the tokens of its three initializers.
struct TiledKernel {
    definition: usize,
    name_start: usize,
    name: String,
    quant: String,
    initializers: [Option<usize>; 3],
    line: u32,
}

/// The kernels of `tokens` whose body initializes a local with an `nvidia` tile macro.
fn tiled_kernels(path: &str, tokens: &[Token], data: &QuantizedMmqTiles) -> Result<Vec<TiledKernel>, TranslateError> {
    let suffix = format!("_{}", data.nvidia);
    let mut kernels: Vec<TiledKernel> = Vec::new();
    let mut current: Option<(usize, usize, String, bool)> = None;
    for i in 0..tokens.len() {
        let t = &tokens[i];
        if t.is_ident("__global__") {
            current = kernel_name(tokens, i).map(|(start, name, bounded)| (definition_start(tokens, i), start, name, bounded));
            continue;
        }
        if t.kind != TokenKind::Ident || !prev_significant(tokens, i).is_some_and(|p| tokens[p].is_punct("=")) {
            continue;
        }
        let Some((param, quant)) = t.text.strip_suffix(suffix.as_str()).and_then(|stem| {
            PARAMS.iter().enumerate().find_map(|(k, p)| stem.strip_prefix(p).and_then(|q| q.strip_prefix('_')).map(|q| (k, q.to_string())))
        }) else {
            continue;
        };
        let Some((definition, name_start, name, bounded)) = current.clone() else {
            return Err(TranslateError::unsupported(path, t.line, t.text.as_str(), "rule quantized-mmq-tiles: a tile macro outside a __global__ kernel"));
        };
        if bounded {
            return Err(TranslateError::unsupported(path, t.line, format!("__global__ {name}"), "rule quantized-mmq-tiles: upstream bounds this kernel already (check kernels::mapping::QUANTIZED_MMQ_TILES)"));
        }
        if kernels.last().is_none_or(|k| k.name_start != name_start) {
            kernels.push(TiledKernel { definition, name_start, name, quant: quant.clone(), initializers: [None; 3], line: t.line });
        }
        let kernel = kernels.last_mut().expect("pushed above");
        if kernel.quant != quant || kernel.initializers[param].is_some() {
            return Err(TranslateError::unsupported(path, t.line, t.text.as_str(), format!("rule quantized-mmq-tiles: kernel {} takes a second {} or another quant type's ({})", kernel.name, PARAMS[param], kernel.quant)));
        }
        kernel.initializers[param] = Some(i);
    }
    for k in &kernels {
        if let Some(missing) = k.initializers.iter().position(Option::is_none) {
            return Err(TranslateError::unsupported(path, k.line, format!("__global__ {}", k.name), format!("rule quantized-mmq-tiles: no {}_{}{suffix} initializer", PARAMS[missing], k.quant)));
        }
    }
    if let Some(quant) = data.second_only.iter().find(|q| !kernels.iter().any(|k| k.quant == **q)) {
        return Err(TranslateError::unsupported(path, 0, format!("{}_{quant}{suffix}", PARAMS[0]), "rule quantized-mmq-tiles: no kernel takes this quant type's tile, but second_only lists it (upstream changed: check kernels::mapping::QUANTIZED_MMQ_TILES)"));
    }
    if kernels.len() != data.kernels {
        return Err(TranslateError::unsupported(path, 0, format!("{}_*{suffix}", PARAMS[0]), format!("rule quantized-mmq-tiles: {} kernels take a tile, expected {} (upstream changed: check kernels::mapping::QUANTIZED_MMQ_TILES and the ROCm launcher)", kernels.len(), data.kernels)));
    }
    Ok(kernels)
}

/// The first token of the definition whose `__global__` is at `global`: an
/// `extern "C"` right before it, else the `__global__` itself.
fn definition_start(tokens: &[Token], global: usize) -> usize {
    match prev_significant(tokens, global) {
        Some(c) if tokens[c].kind == TokenKind::Str && tokens[c].text == "\"C\"" => prev_significant(tokens, c).filter(|&e| tokens[e].is_ident("extern")).unwrap_or(global),
        _ => global,
    }
}

fn rewrite(unit: &mut Unit, data: &QuantizedMmqTiles) -> Result<usize, TranslateError> {
    let kernels = tiled_kernels(&unit.path, &unit.tokens, data)?;
    // edits from the end, so that earlier indices stay valid
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let second_only = data.second_only_macro();
    for k in &kernels {
        let tile = if data.takes_second_only(&k.quant) { second_only.as_str() } else { "CANDLE_MMQ_TILE" };
        for (param, at) in PARAMS.iter().zip(k.initializers) {
            edits.push((at.expect("checked"), 1, format!("{tile}({param}_{})", k.quant)));
        }
        edits.push((k.name_start, 0, format!("__launch_bounds__(WARP_SIZE * {tile}(NWARPS_{})) ", k.quant)));
    }
    if let Some(first) = kernels.first() {
        edits.push((first.definition, 0, data.select()));
    }
    edits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    for (at, remove, text) in edits {
        let line = unit.tokens[at].line;
        unit.tokens.splice(at..at + remove, tokens_from(&text, line));
    }
    Ok(kernels.len())
}

/// `quantized_mmq_tiles.rs`: for each tiled kernel of `source` (upstream's
/// `quantized.cu`), ggml's AMD tiles from the file's own `#define`s, and the choice
/// between them by compute capability; `label` names the release in the provenance line.
pub fn host_table(source: &str, label: &str) -> Result<String, TranslateError> {
    table_of(source, label, &QUANTIZED_MMQ_TILES)
}

fn table_of(source: &str, label: &str, data: &QuantizedMmqTiles) -> Result<String, TranslateError> {
    let tokens = lexer::lex(source).tokens;
    let kernels = tiled_kernels(data.file, &tokens, data)?;
    let defines = numeric_defines(&tokens);
    let tile = |quant: &str, family: &str, line: u32| -> Result<[u32; 3], TranslateError> {
        let mut t = [0u32; 3];
        for (k, param) in PARAMS.iter().enumerate() {
            let name = format!("{param}_{quant}_{family}");
            t[k] = match defines.get(&name).map(Vec::as_slice) {
                Some([v]) => *v,
                Some(_) => return Err(TranslateError::unsupported(data.file, line, name, "rule quantized-mmq-tiles: defined more than once (the AMD tiles must be unconditional)")),
                None => return Err(TranslateError::unsupported(data.file, line, name, "rule quantized-mmq-tiles: not #defined to a number (upstream changed: check kernels::mapping::QUANTIZED_MMQ_TILES)")),
            };
        }
        Ok(t)
    };
    let mut rows = Vec::new();
    for k in &kernels {
        let second = tile(&k.quant, data.amd[1], k.line)?;
        let first = if data.takes_second_only(&k.quant) { second } else { tile(&k.quant, data.amd[0], k.line)? };
        let name = &k.name;
        let [first, second] = [first, second].map(|t| t.map(proc_macro2::Literal::u32_unsuffixed));
        rows.push(quote::quote! { (#name, [#(#first),*], [#(#second),*]) });
    }
    let [first_cc, second_cc] = data.amd_cc;
    let [first, second] = data.amd;
    let doc_table = format!(
        " ggml's AMD tiles for {}'s MMQ kernels: each kernel's `_{first}` tile `[mmq_x, mmq_y, nwarps]` and its `_{second}` tile, from the file's `MMQ_X_*`, `MMQ_Y_*` and `NWARPS_*` definitions; the {} kernels take their `_{second}` tile in both columns (their `_{first}` one spills).",
        data.file,
        data.second_only.join(", ")
    );
    let doc_fn = format!(
        " The tile `kernel` launches with on a device of ggml compute capability `cc` (the HIP layer's `ggml_compute_capability`): the `_{first}` one from `{first_cc:#x}` on, the `_{second}` one from `{second_cc:#x}` on, as each device pass chooses it (`CANDLE_MMQ_TILE`, rule `quantized-mmq-tiles`); `None` below (NVIDIA through hip-on-cuda: upstream's own tiles) and for a kernel without AMD tiles."
    );
    let [first_cc, second_cc] = data.amd_cc.map(|cc| syn::LitInt::new(&format!("{cc:#x}"), proc_macro2::Span::call_site()));
    let file: syn::File = syn::parse_quote! {
        #[doc = #doc_table]
        pub const AMD_TILES: &[(&str, [u32; 3], [u32; 3])] = &[#(#rows),*];

        #[doc = #doc_fn]
        pub fn amd_tile(kernel: &str, cc: i32) -> Option<(u32, u32, u32)> {
            if cc < #second_cc {
                return None;
            }
            let (_, first, second) = AMD_TILES.iter().find(|(name, ..)| *name == kernel)?;
            let [x, y, warps] = if cc >= #first_cc { *first } else { *second };
            Some((x, y, warps))
        }
    };
    Ok(format!(
        "// Generated by `cargo xtask regen` from {label} src/{} (rule quantized-mmq-tiles). Do not edit: fix the translator rule instead.\n{}",
        data.file,
        prettyplease::unparse(&file)
    ))
}

/// `#define NAME <integer>` lines of `tokens`: every value each name is given.
fn numeric_defines(tokens: &[Token]) -> BTreeMap<String, Vec<u32>> {
    let mut out: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for i in 0..tokens.len() {
        if !tokens[i].is_punct("#") {
            continue;
        }
        let Some(d) = next_significant(tokens, i + 1).filter(|&d| tokens[d].is_ident("define")) else { continue };
        let Some(n) = next_significant(tokens, d + 1).filter(|&n| tokens[n].kind == TokenKind::Ident) else { continue };
        let Some(v) = next_significant(tokens, n + 1).filter(|&v| tokens[v].kind == TokenKind::Number && tokens[v].line == tokens[n].line) else { continue };
        if let Ok(value) = tokens[v].text.parse::<u32>() {
            out.entry(tokens[n].text.to_string()).or_default().push(value);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::mapping::GGML_AMD_FAMILIES;
    use crate::kernels::rules::pp_expr;

    /// Two kernels as upstream writes them, with the tile macros for one family each.
    const SRC: &str = "#define WARP_SIZE 32\n\
        #define  MMQ_X_Q4_0_RDNA2  64\n#define  MMQ_Y_Q4_0_RDNA2  128\n#define NWARPS_Q4_0_RDNA2  8\n\
        #define  MMQ_X_Q4_0_RDNA1  64\n#define  MMQ_Y_Q4_0_RDNA1  64\n#define NWARPS_Q4_0_RDNA1  8\n\
        #if defined(CUDA_USE_TENSOR_CORES)\n#define  MMQ_X_Q4_0_AMPERE 4\n#else\n#define  MMQ_X_Q4_0_AMPERE 64\n#endif\n\
        #define  MMQ_X_Q6_K_RDNA2  64\n#define  MMQ_Y_Q6_K_RDNA2  128\n#define NWARPS_Q6_K_RDNA2  8\n\
        #define  MMQ_X_Q6_K_RDNA1  32\n#define  MMQ_Y_Q6_K_RDNA1  64\n#define NWARPS_Q6_K_RDNA1  8\n\
        static __device__ void helper() { const int x = MMQ_X_Q4_0_RDNA2; }\n\
        extern \"C\" __global__ void\n    mul_mat_q4_0(int n) {\n    const int mmq_x  =  MMQ_X_Q4_0_AMPERE;\n    const int mmq_y  =  MMQ_Y_Q4_0_AMPERE;\n    const int nwarps = NWARPS_Q4_0_AMPERE;\n    body<mmq_x, mmq_y, nwarps>(n);\n}\n\
        extern \"C\" __global__ void\nmul_mat_q6_K(int n) {\n    const int mmq_x  =  MMQ_X_Q6_K_AMPERE;\n    const int mmq_y  =  MMQ_Y_Q6_K_AMPERE;\n    const int nwarps = NWARPS_Q6_K_AMPERE;\n}\n";

    /// The real row for `kernels` kernels, with `SRC`'s `Q6_K` as the quant type that
    /// takes its second tile everywhere.
    fn data(kernels: usize) -> QuantizedMmqTiles {
        QuantizedMmqTiles { kernels, second_only: &["Q6_K"], ..QUANTIZED_MMQ_TILES }
    }

    fn run(src: &str, kernels: usize) -> Result<(String, usize), TranslateError> {
        let mut unit = Unit { path: "quantized.cu".into(), tokens: lexer::lex(src).tokens };
        let n = rewrite(&mut unit, &data(kernels))?;
        Ok((lexer::render(&unit.tokens), n))
    }

    /// Before and after: the initializers name the chosen family's macros (`Q6_K`, in
    /// `second_only`, the second family's everywhere), each kernel is bounded by its own
    /// warps, the choice comes once before the first kernel; the definitions and other
    /// uses of the macros are left alone.
    #[test]
    fn kernels_take_the_tile_of_their_arch() {
        let (out, n) = run(SRC, 2).unwrap();
        assert_eq!(n, 2);
        let select_at = out.find(&data(2).select()).expect("the choice is inserted");
        assert_eq!(out.matches("#define CANDLE_MMQ_TILE(name)").count(), 3, "{out}");
        assert_eq!(out.matches("#define CANDLE_MMQ_TILE_RDNA1(name) name##_RDNA1\n").count(), 2, "{out}");
        assert!(out.contains("#else\n#define CANDLE_MMQ_TILE(name) name##_AMPERE\n#define CANDLE_MMQ_TILE_RDNA1(name) name##_AMPERE\n#endif"), "{out}");
        assert!(out.contains("(the Q6_K kernels: their _RDNA2 one spills)"), "{out}");
        assert!(select_at < out.find("extern \"C\" __global__ void\n    __launch_bounds__").unwrap(), "{out}");
        assert!(out.contains("__global__ void\n    __launch_bounds__(WARP_SIZE * CANDLE_MMQ_TILE(NWARPS_Q4_0)) mul_mat_q4_0(int n)"), "{out}");
        assert!(out.contains("__global__ void\n__launch_bounds__(WARP_SIZE * CANDLE_MMQ_TILE_RDNA1(NWARPS_Q6_K)) mul_mat_q6_K(int n)"), "{out}");
        assert!(out.contains("const int mmq_x  =  CANDLE_MMQ_TILE(MMQ_X_Q4_0);\n    const int mmq_y  =  CANDLE_MMQ_TILE(MMQ_Y_Q4_0);\n    const int nwarps = CANDLE_MMQ_TILE(NWARPS_Q4_0);"), "{out}");
        assert!(out.contains("const int mmq_x  =  CANDLE_MMQ_TILE_RDNA1(MMQ_X_Q6_K);\n    const int mmq_y  =  CANDLE_MMQ_TILE_RDNA1(MMQ_Y_Q6_K);\n    const int nwarps = CANDLE_MMQ_TILE_RDNA1(NWARPS_Q6_K);"), "{out}");
        assert!(out.contains("#define  MMQ_X_Q4_0_AMPERE 64\n") && out.contains("const int x = MMQ_X_Q4_0_RDNA2;"), "{out}");
        assert!(!out.contains("= MMQ_X_Q4_0_AMPERE") && !out.contains("=  MMQ_X_Q4_0_AMPERE"), "{out}");
    }

    #[test]
    fn a_changed_upstream_is_an_error_naming_it() {
        let err = run(SRC, 3).unwrap_err().to_string();
        assert!(err.contains("2 kernels take a tile, expected 3"), "{err}");
        let partial = SRC.replace("    const int nwarps = NWARPS_Q6_K_AMPERE;\n", "");
        let err = run(&partial, 2).unwrap_err().to_string();
        assert!(err.contains("__global__ mul_mat_q6_K") && err.contains("no NWARPS_Q6_K_AMPERE initializer"), "{err}");
        let mixed = SRC.replace("mmq_y  =  MMQ_Y_Q6_K_AMPERE", "mmq_y  =  MMQ_Y_Q4_0_AMPERE");
        let err = run(&mixed, 2).unwrap_err().to_string();
        assert!(err.contains("kernel mul_mat_q6_K takes a second MMQ_Y or another quant type's"), "{err}");
        let bounded = SRC.replace("void\nmul_mat_q6_K", "void __launch_bounds__(128)\nmul_mat_q6_K");
        let err = run(&bounded, 2).unwrap_err().to_string();
        assert!(err.contains("__global__ mul_mat_q6_K") && err.contains("bounds this kernel already"), "{err}");
        let mut unit = Unit { path: "quantized.cu".into(), tokens: lexer::lex(SRC).tokens };
        let err = rewrite(&mut unit, &QuantizedMmqTiles { second_only: &["Q6_K", "Q4_K"], ..data(2) }).unwrap_err().to_string();
        assert!(err.contains("MMQ_X_Q4_K_AMPERE") && err.contains("second_only lists it"), "{err}");
    }

    /// The host table holds each kernel's AMD tiles from the file's definitions, and
    /// names what is missing.
    #[test]
    fn host_table_reads_the_amd_definitions() {
        let src = format!("{SRC}{}", (0..8).map(|i| format!("extern \"C\" __global__ void k{i}() {{ const int a = MMQ_X_Q4_0_AMPERE; const int b = MMQ_Y_Q4_0_AMPERE; const int c = NWARPS_Q4_0_AMPERE; }}\n")).collect::<String>());
        let rs = table_of(&src, "candle-kernels 9.9.9", &data(10)).unwrap();
        assert!(rs.starts_with("// Generated by `cargo xtask regen` from candle-kernels 9.9.9 src/quantized.cu"), "{rs}");
        assert!(rs.contains("(\"mul_mat_q4_0\", [64, 128, 8], [64, 64, 8]),") && rs.contains("(\"mul_mat_q6_K\", [32, 64, 8], [32, 64, 8]),"), "{rs}");
        let without = table_of(&src, "x", &QuantizedMmqTiles { second_only: &[], ..data(10) }).unwrap();
        assert!(without.contains("(\"mul_mat_q6_K\", [64, 128, 8], [32, 64, 8]),"), "{without}");
        assert!(rs.contains("if cc < 0x1000000 {") && rs.contains("if cc >= 0x1001030 { *first } else { *second }"), "{rs}");
        syn::parse_file(&rs).expect("the table is Rust");
        let err = table_of(&src.replace("#define NWARPS_Q6_K_RDNA1  8\n", ""), "x", &data(10)).unwrap_err().to_string();
        assert!(err.contains("NWARPS_Q6_K_RDNA1") && err.contains("not #defined to a number"), "{err}");
        let err = table_of(&src.replace("#define NWARPS_Q4_0_RDNA1  8\n", "#define NWARPS_Q4_0_RDNA1  8\n#define NWARPS_Q4_0_RDNA1  4\n"), "x", &data(10)).unwrap_err().to_string();
        assert!(err.contains("defined more than once"), "{err}");
    }

    /// The device pass and the host choose the same tile on every arch ggml names, for
    /// both macros: each branch of [`QuantizedMmqTiles::select`] evaluated over the arch's
    /// macros (its ggml families, clang's `__GFX<major>__`, `GGML_USE_HIP`; none for
    /// NVIDIA) against `amd_cc` over its ggml compute capability (`0x1000000` plus the arch
    /// id; 900 for sm_90) and the host table's columns (`second_only`: the second in both).
    #[test]
    fn device_and_host_choose_the_same_tile() {
        let data = &QUANTIZED_MMQ_TILES;
        let select = data.select();
        // per branch: its condition (`None` for `#else`) and the suffix each macro names
        let mut branches: Vec<(Option<Vec<Token>>, Vec<(String, String)>)> = Vec::new();
        for line in select.lines() {
            if let Some(cond) = line.strip_prefix("#if ").or_else(|| line.strip_prefix("#elif ")) {
                branches.push((Some(lexer::lex(cond).tokens.into_iter().filter(|t| t.kind != TokenKind::Newline).collect()), Vec::new()));
            } else if line == "#else" {
                branches.push((None, Vec::new()));
            } else if let Some(def) = line.strip_prefix("#define ") {
                let (name, suffix) = def.split_once("(name) name##_").expect("a tile macro");
                branches.last_mut().expect("inside the #if").1.push((name.to_string(), suffix.to_string()));
            }
        }
        assert_eq!(branches.len(), 3, "{select}");
        let mut arches: Vec<&str> = GGML_AMD_FAMILIES.iter().flat_map(|f| f.arches.iter().copied()).collect();
        arches.extend(["gfx1013", "gfx1250", "sm_90"]);
        for arch in arches {
            let (defined, cc): (Vec<String>, i32) = match arch.strip_prefix("gfx") {
                Some(hex) => (
                    GGML_AMD_FAMILIES
                        .iter()
                        .filter(|f| f.arches.contains(&arch))
                        .map(|f| f.define.to_string())
                        .chain([format!("__GFX{}__", &hex[..hex.len() - 2]), "GGML_USE_HIP".to_string()])
                        .collect(),
                    data.amd_cc[1] + i32::from_str_radix(hex, 16).unwrap(),
                ),
                None => (Vec::new(), 900),
            };
            let holds = |cond: &[Token]| -> bool {
                let mut toks = Vec::new();
                let mut i = 0;
                while i < cond.len() {
                    if cond[i].is_ident("defined") {
                        let open = next_significant(cond, i + 1).unwrap();
                        let name = next_significant(cond, open + 1).unwrap();
                        let close = next_significant(cond, name + 1).unwrap();
                        toks.push(Token::new(TokenKind::Number, if defined.contains(&cond[name].text.to_string()) { "1" } else { "0" }, 1));
                        i = close + 1;
                    } else {
                        toks.push(cond[i].clone());
                        i += 1;
                    }
                }
                pp_expr::evaluate(&toks, &Default::default()).expect("a condition of defined() only") != 0
            };
            let (_, macros) = branches.iter().find(|(cond, _)| cond.as_ref().is_none_or(|c| holds(c))).expect("an #else");
            let device = |name: &str| macros.iter().find(|(m, _)| m == name).map(|(_, s)| s.clone()).expect("every branch defines both macros");
            let column = data.amd_cc.iter().position(|&from| cc >= from);
            let host = |second_only: bool| match column {
                Some(0) if !second_only => data.amd[0],
                Some(_) => data.amd[1],
                None => data.nvidia,
            };
            assert_eq!(device("CANDLE_MMQ_TILE"), host(false), "{arch} (cc {cc:#x}, macros {defined:?}): CANDLE_MMQ_TILE");
            assert_eq!(device(&data.second_only_macro()), host(true), "{arch} (cc {cc:#x}, macros {defined:?}): {}", data.second_only_macro());
        }
    }
}
