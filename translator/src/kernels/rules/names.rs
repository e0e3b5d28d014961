//! Rule `names`: renames CUDA identifiers to HIP or compat names.
//!
//! Qualified names ([`QUALIFIED`], e.g. `nvcuda::wmma`) first, then single
//! identifiers ([`IDENTIFIERS`]). Identifier tokens are renamed in code and in
//! macro bodies alike; whole words inside comments are renamed with the same
//! table (hipify-perl rewrites comments too, and the output must not depend
//! on whether it ran); string literals are never touched.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::tokens::{next_significant, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{hipify_rows, HIP_RUNTIME_NAMES, IDENTIFIERS, QUALIFIED};
use crate::lexer::TokenKind;
use crate::TranslateError;

fn identifier_table() -> &'static HashMap<&'static str, &'static str> {
    static TABLE: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    // the runtime API HIP has, then our own rows (which win: compat names, hipify spellings)
    TABLE.get_or_init(|| hipify_rows(HIP_RUNTIME_NAMES).chain(IDENTIFIERS.iter().copied()).collect())
}

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut i = 0;
    while i < unit.tokens.len() {
        if matches!(unit.tokens[i].kind, TokenKind::LineComment | TokenKind::BlockComment) {
            let (text, renamed) = rename_words(&unit.tokens[i].text);
            unit.tokens[i].text = text.into();
            count += renamed;
            i += 1;
            continue;
        }
        if unit.tokens[i].kind != TokenKind::Ident {
            i += 1;
            continue;
        }
        if let Some((end, replacement)) = match_qualified(unit, i) {
            let new = tokens_from(replacement, unit.tokens[i].line);
            let len = new.len();
            unit.tokens.splice(i..=end, new);
            i += len;
            count += 1;
            continue;
        }
        if let Some(to) = identifier_table().get(unit.tokens[i].text.as_str()) {
            unit.tokens[i].text = (*to).into();
            count += 1;
        }
        i += 1;
    }
    Ok(count)
}

/// Renames the whole identifier-like words of a comment.
fn rename_words(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut renamed = 0;
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c == '_' || c.is_ascii_alphabetic()) {
        let (before, from_word) = rest.split_at(start);
        // a word must not continue a preceding alphanumeric run (`x2__nv_bfloat16`)
        let glued = before.chars().last().is_some_and(|c| c.is_ascii_alphanumeric());
        let len = from_word.find(|c: char| !(c == '_' || c.is_ascii_alphanumeric())).unwrap_or(from_word.len());
        let word = &from_word[..len];
        out.push_str(before);
        match identifier_table().get(word) {
            Some(to) if !glued => {
                out.push_str(to);
                renamed += 1;
            }
            _ => out.push_str(word),
        }
        rest = &from_word[len..];
    }
    out.push_str(rest);
    (out, renamed)
}

/// The last token index and replacement of a qualified name starting at `i`.
fn match_qualified(unit: &Unit, i: usize) -> Option<(usize, &'static str)> {
    'rows: for (parts, replacement) in QUALIFIED {
        let mut at = i;
        for (n, part) in parts.iter().enumerate() {
            if n > 0 {
                let sep = next_significant(&unit.tokens, at + 1)?;
                if !unit.tokens[sep].is_punct("::") {
                    continue 'rows;
                }
                at = next_significant(&unit.tokens, sep + 1)?;
            }
            if !unit.tokens[at].is_ident(part) {
                continue 'rows;
            }
        }
        return Some((at, replacement));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn types_intrinsics_and_host_api() {
        let src = "__nv_bfloat16 x = __float2bfloat16(f); cudaStream_t s; \"cudaStream_t\"\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(out, "candle_bf16 x = candle_float2bf16(f); hipStream_t s; \"cudaStream_t\"\n");
        assert_eq!(n, 3);
    }

    /// flashinfer's launch with programmatic dependent launch: an ordinary launch on AMD.
    #[test]
    fn launch_with_a_config_and_pdl() {
        let src = "cudaLaunchAttribute attribute[1];\nattribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;\ncudaLaunchConfig_t config;\nconfig.attrs = attribute;\ncudaLaunchKernelEx(&config, kernel, v, s);\ncudaGridDependencySynchronize(); cudaTriggerProgrammaticLaunchCompletion();\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(
            out,
            "candle_launch_attribute attribute[1];\nattribute[0].id = CANDLE_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;\ncandle_launch_config config;\nconfig.attrs = attribute;\ncandle_launch_kernel_ex(&config, kernel, v, s);\ncandle_grid_dependency_synchronize(); candle_trigger_programmatic_launch_completion();\n"
        );
        assert_eq!(n, 6);
    }

    /// Every row renames its CUDA name, and a `candle_*` / `CANDLE_*` target is a name the
    /// compat headers declare (a row can not point at nothing).
    #[test]
    fn every_row_renames_to_a_name_that_exists() {
        let compat: String = crate::kernels::mapping::COMPAT_HEADERS.iter().map(|(_, text)| *text).collect();
        let declared = |name: &str| {
            compat.match_indices(name).any(|(at, _)| {
                let before = compat[..at].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                let after = compat[at + name.len()..].chars().next().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                before && after
            })
        };
        // names meant to be defined by nothing (`#if defined(...)` is then false)
        const UNDEFINED_ON_PURPOSE: &[&str] = &["CANDLE_NO_CUDA_ARCH_LIST"];
        for (from, to) in IDENTIFIERS {
            let (out, n) = run(apply, &format!("x = {from};\n")).unwrap();
            assert_eq!((out, n), (format!("x = {to};\n"), 1), "{from}");
            if (to.starts_with("candle_") || to.starts_with("CANDLE_")) && !UNDEFINED_ON_PURPOSE.contains(to) {
                let name = to.split("::").next().unwrap();
                assert!(declared(name), "{from} -> {to}: the compat headers do not declare {name}");
            }
        }
    }

    #[test]
    fn whole_words_in_comments_are_renamed_like_code() {
        let (out, n) = run(apply, "// uses __nv_bfloat16 (not x__nv_bfloat16) and hip_bfloat16\n/* cub:: */\n").unwrap();
        assert_eq!(out, "// uses candle_bf16 (not x__nv_bfloat16) and candle_bf16\n/* candle_cub:: */\n");
        assert_eq!(n, 3);
    }

    #[test]
    fn qualified_namespaces() {
        let (out, _) = run(apply, "using namespace nvcuda::wmma; thrust::inclusive_scan(thrust::cuda::par.on(s), a); cub::BlockScan<int, 8>\n").unwrap();
        assert_eq!(out, "using namespace candle_wmma; candle_thrust::inclusive_scan(candle_thrust::hip::par.on(s), a); candle_cub::BlockScan<int, 8>\n");
    }

    #[test]
    fn macro_bodies_are_renamed_too() {
        let (out, _) = run(apply, "#define F(x) __half2float(__nv_cvt_fp8_to_halfraw(x.__x, __NV_E4M3))\n").unwrap();
        assert_eq!(out, "#define F(x) __half2float(candle_cvt_fp8_to_halfraw(x.__x, CANDLE_FP8_E4M3_INTERP))\n");
    }

    #[test]
    fn the_runtime_api_hip_has_is_renamed_from_hipifys_table() {
        let (out, n) = run(apply, "cudaMemset(p, 0, n); cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d); cudaMemcpyToSymbol(s, p, n);\n").unwrap();
        assert_eq!(out, "hipMemset(p, 0, n); hipDeviceGetAttribute(&v, hipDeviceAttributeMultiprocessorCount, d); hipMemcpyToSymbol(s, p, n);\n");
        assert_eq!(n, 4);
        // our own rows win over the table's
        assert_eq!(run(apply, "cudaFuncSetAttribute(f, a, v);\n").unwrap().0, "candle_func_set_attribute(f, a, v);\n");
        // HIPIFY's runtime table whole: its 920 rows at commit 014177bc
        assert_eq!(hipify_rows(HIP_RUNTIME_NAMES).count(), 920);
    }

    #[test]
    fn hipify_spellings_converge_on_the_same_names() {
        let (out, _) = run(apply, "__hip_bfloat16 a; __nv_bfloat16 b;\n").unwrap();
        assert_eq!(out, "candle_bf16 a; candle_bf16 b;\n");
    }
}
