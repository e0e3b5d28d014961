//! Rule `ggml-amd-profile`: upstream's ggml header gets ggml's AMD answers.
//!
//! Candle's `mmq_gguf/` is ggml's MMQ code with a self-contained header
//! (`mmq_common.cuh`) written for NVIDIA only: `amd_mfma_available(cc)`
//! returns `false`, the physical warp is always 32, and nothing defines the
//! macros ggml's HIP build sets (`GGML_USE_HIP`, `CDNA3`, `RDNA4`,
//! `AMD_WMMA_AVAILABLE`, ...), so every AMD matrix-core branch of
//! `mmq_mma.cuh`/`mmq_gguf.cuh` is dead. In that header this rule
//!
//! * includes [`GGML_HIP_ARCH_HEADER`], which [`arch_header`] writes from
//!   [`GGML_AMD_FAMILIES`] and [`GGML_DERIVED_DEFINES`] (ggml's per-arch
//!   definitions, keyed by clang's `__gfxNNNN__` macros), right after
//!   `#pragma once`;
//! * replaces each function of [`GGML_AMD_QUERIES`] (its whole definition and
//!   the `// NVIDIA only` comment after it) by ggml's HIP definition.
//!
//! A row whose function is not in the header is an error naming the header
//! and the function: upstream changed, and the row must be checked.

use super::tokens::{matching_close, matching_paren, next_significant, prev_significant, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{GgmlAmdQuery, GGML_AMD_FAMILIES, GGML_AMD_QUERIES, GGML_COMMON_HEADER, GGML_DERIVED_DEFINES, GGML_HIP_ARCH_HEADER};
use crate::lexer::{line_views, Token, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    if unit.path != GGML_COMMON_HEADER {
        return Ok(0);
    }
    rewrite(unit, GGML_AMD_QUERIES)
}

fn rewrite(unit: &mut Unit, queries: &[GgmlAmdQuery]) -> Result<usize, TranslateError> {
    let mut count = 0;
    for query in queries {
        let (start, end, line) = definition_of(&unit.tokens, query.function)
            .ok_or_else(|| TranslateError::unsupported(&unit.path, 0, query.function, "rule ggml-amd-profile: no definition of this function (upstream changed: check the row in kernels::mapping::GGML_AMD_QUERIES)"))?;
        unit.tokens.splice(start..end, tokens_from(query.definition, line));
        count += 1;
    }
    let pragma = pragma_once_end(&unit.tokens).ok_or_else(|| TranslateError::unsupported(&unit.path, 0, "#pragma once", "rule ggml-amd-profile: the header has no `#pragma once` to put the arch header after"))?;
    let line = unit.tokens[pragma - 1].line;
    unit.tokens.splice(pragma..pragma, tokens_from(&format!("#include \"{GGML_HIP_ARCH_HEADER}\"\n"), line));
    Ok(count + 1)
}

/// `[start, end)` of `static ... NAME(...) {...}` plus a line comment right
/// after the closing brace, and the line it starts on.
fn definition_of(tokens: &[Token], name: &str) -> Option<(usize, usize, u32)> {
    let mut i = 0;
    while i < tokens.len() {
        if !tokens[i].is_ident(name) {
            i += 1;
            continue;
        }
        let open = next_significant(tokens, i + 1).filter(|&j| tokens[j].is_punct("("))?;
        let close = matching_paren(tokens, open)?;
        let Some(body) = next_significant(tokens, close + 1).filter(|&j| tokens[j].is_punct("{")) else {
            i = close + 1; // a call or a declaration, not the definition
            continue;
        };
        // Back over the declaration specifiers (identifiers only) to `static`.
        let mut start = i;
        loop {
            let prev = prev_significant(tokens, start)?;
            if tokens[prev].kind != TokenKind::Ident {
                return None;
            }
            start = prev;
            if tokens[prev].is_ident("static") {
                break;
            }
        }
        let mut end = matching_close(tokens, body)? + 1;
        let mut after = end;
        while after < tokens.len() && tokens[after].kind == TokenKind::Space {
            after += 1;
        }
        if tokens.get(after).is_some_and(|t| t.kind == TokenKind::LineComment) {
            end = after + 1;
        }
        return Some((start, end, tokens[start].line));
    }
    None
}

/// Index just after the newline ending `#pragma once`.
fn pragma_once_end(tokens: &[Token]) -> Option<usize> {
    let mut end = 0;
    for line in line_views(tokens) {
        end += line.tokens.len();
        if line.directive() == Some("pragma") && line.directive_body().iter().filter(|t| !t.is_trivia()).map(|t| t.text.as_str()).eq(["once"]) {
            return Some(end);
        }
    }
    None
}

/// The text of [`GGML_HIP_ARCH_HEADER`], from [`GGML_AMD_FAMILIES`] and
/// [`GGML_DERIVED_DEFINES`].
pub fn arch_header() -> String {
    let mut text = String::from(
        "// ggml's per-arch definitions for its HIP build (llama.cpp ggml-cuda/vendors/hip.h and common.cuh),\n\
         // which Candle's mmq_gguf/ (ggml's MMQ code) branches on. Keyed by clang's __gfxNNNN__ macros, so each\n\
         // device pass of hipcc gets its own arch's; the host pass gets GGML_USE_HIP only, and the launchers\n\
         // choose by the compute capability the backend passes (0x1000000 + gfx id, as ggml's).\n\
         // The table is translator/src/kernels/mapping.rs (GGML_AMD_FAMILIES, GGML_DERIVED_DEFINES).\n\
         #pragma once\n",
    );
    for family in GGML_AMD_FAMILIES {
        let condition: Vec<String> = family.arches.iter().map(|a| format!("defined(__{a}__)")).collect();
        text.push_str(&format!("\n#if {}\n#define {}\n#endif\n", wrap(&condition.join(" || ")), family.define));
    }
    for derived in GGML_DERIVED_DEFINES {
        text.push_str(&format!("\n// {}\n#if {}\n#define {}\n#endif\n", derived.why, derived.condition, derived.define));
    }
    text
}

/// Breaks a long `||` chain over continuation lines.
fn wrap(condition: &str) -> String {
    let mut out = String::new();
    let mut line_len = 4;
    for (n, part) in condition.split(" || ").enumerate() {
        if n > 0 {
            if line_len + part.len() > 100 {
                out.push_str(" || \\\n    ");
                line_len = 4;
            } else {
                out.push_str(" || ");
                line_len += 4;
            }
        }
        out.push_str(part);
        line_len += part.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer;

    const QUERY: &[GgmlAmdQuery] = &[GgmlAmdQuery { function: "amd_x", definition: "static bool amd_x(const int cc) {\n    return cc > 1;\n}", why: "test" }];

    fn run(src: &str, queries: &[GgmlAmdQuery]) -> Result<(String, usize), TranslateError> {
        let mut unit = Unit { path: GGML_COMMON_HEADER.into(), tokens: lexer::lex(src).tokens };
        let n = rewrite(&mut unit, queries)?;
        Ok((lexer::render(&unit.tokens), n))
    }

    #[test]
    fn stub_becomes_ggml_definition_and_header_is_included() {
        let src = "#pragma once\n#include <x>\nbool f();\nstatic bool amd_x(const int /*cc*/) { return false; } // NVIDIA only\nint y = amd_x(3);\n";
        let (out, n) = run(src, QUERY).unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            out,
            format!("#pragma once\n#include \"{GGML_HIP_ARCH_HEADER}\"\n#include <x>\nbool f();\nstatic bool amd_x(const int cc) {{\n    return cc > 1;\n}}\nint y = amd_x(3);\n")
        );
    }

    #[test]
    fn device_function_with_specifiers() {
        let q = &[GgmlAmdQuery { function: "w", definition: "static constexpr __device__ int w() { return 64; }", why: "t" }];
        let (out, _) = run("#pragma once\nstatic constexpr __device__ int w() {\n    return 32; // NVIDIA only\n}\n", q).unwrap();
        assert_eq!(out, format!("#pragma once\n#include \"{GGML_HIP_ARCH_HEADER}\"\nstatic constexpr __device__ int w() {{ return 64; }}\n"));
    }

    #[test]
    fn missing_function_is_an_error() {
        let err = run("#pragma once\nint z;\n", QUERY).unwrap_err().to_string();
        assert!(err.contains("amd_x") && err.contains(GGML_COMMON_HEADER), "{err}");
    }

    #[test]
    fn other_files_are_untouched() {
        let src = "static bool amd_mfma_available(const int) { return false; }\n";
        let mut unit = Unit { path: "other.cuh".into(), tokens: lexer::lex(src).tokens };
        assert_eq!(apply(&mut unit, &TreeFacts::default()).unwrap(), 0);
        assert_eq!(lexer::render(&unit.tokens), src);
    }

    #[test]
    fn header_defines_every_family_from_its_arches() {
        let h = arch_header();
        assert!(h.contains("#if defined(__gfx942__)") || h.contains("defined(__gfx942__)\n#define CDNA3"), "{h}");
        assert!(h.contains("defined(__gfx90a__)\n#define CDNA2\n"), "{h}");
        assert!(h.contains("#if defined(RDNA3) || defined(RDNA4)\n#define AMD_WMMA_AVAILABLE\n"), "{h}");
        assert!(h.contains("#if defined(CDNA) && !defined(CANDLE_HIP_NO_MMQ_MFMA)\n#define AMD_MFMA_AVAILABLE\n"), "{h}");
        // Families before what is derived from them.
        assert!(h.find("#define CDNA4").unwrap() < h.find("#define CDNA\n").unwrap());
        assert!(h.find("#define CDNA\n").unwrap() < h.find("#define GGML_USE_HIP").unwrap());
    }
}
