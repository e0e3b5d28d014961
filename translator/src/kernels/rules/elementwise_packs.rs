//! Rule `elementwise-packs`: the contiguous loops of Candle's elementwise kernels
//! (unary, affine, binary, cast) move 16-byte packs instead of one element per thread
//! and iteration ([`ELEMENTWISE_PACK_EDITS`], applied by the [`FunctionEdit`] matcher of
//! rule `wave-rows`). Each loop becomes a call of the compat header's `candle_ew_map1` /
//! `candle_ew_map2` with upstream's expression as a lambda of one element, so every
//! element gets the same arithmetic and conversions; strided layouts keep upstream's
//! loops.

use super::{wave_rows, TreeFacts, Unit};
use crate::kernels::mapping::{ELEMENTWISE_PACK_EDITS, ELEMENTWISE_UPSTREAM_VECTOR_LOOPS};
#[cfg(doc)]
use crate::kernels::mapping::FunctionEdit;
use crate::TranslateError;

/// Rows of a function the file does not define are skipped: releases before 0.11 have no
/// `cast_bf16_f32` vector path. Several rows may name one function, one per form releases gave
/// its loop (0.9's AFFINE_OP wrote `x * mul + add` itself): a function the file defines must
/// match at least one of its rows exactly, else the first row's error names it; and each of
/// its definitions must then call a pack map, unless its macro keeps upstream's own vector
/// loop ([`ELEMENTWISE_UPSTREAM_VECTOR_LOOPS`]): a changed loop in one macro is an error, not
/// hidden by the rows the function's other macros match.
pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut unmatched: Vec<(&'static str, TranslateError)> = Vec::new();
    let mut matched: Vec<&'static str> = Vec::new();
    let path = unit.path.clone();
    for row in ELEMENTWISE_PACK_EDITS.iter().filter(|r| r.file == path) {
        if wave_rows::function_body(&unit.tokens, row.function, 0).is_none() {
            continue;
        }
        let mut trial = unit.clone();
        match wave_rows::rewrite(&mut trial, std::slice::from_ref(row), "elementwise-packs", "ELEMENTWISE_PACK_EDITS") {
            Ok(n) => {
                *unit = trial;
                count += n;
                matched.push(row.function);
            }
            Err(e) => unmatched.push((row.function, e)),
        }
    }
    if let Some((_, e)) = unmatched.into_iter().find(|(f, _)| !matched.contains(f)) {
        return Err(e);
    }
    every_definition_packed(unit, &matched)?;
    Ok(count)
}

/// The name of the `#define` whose body holds token `at`: the last `# define NAME` before it
/// (a function definition inside a macro continues that directive's line).
fn enclosing_macro(tokens: &[crate::lexer::Token], at: usize) -> Option<&str> {
    let mut i = at;
    while i > 0 {
        i -= 1;
        if tokens[i].is_ident("define") && super::tokens::prev_significant(tokens, i).is_some_and(|p| tokens[p].is_punct("#")) {
            let name = super::tokens::next_significant(tokens, i + 1)?;
            return Some(tokens[name].text.as_str());
        }
        if tokens[i].kind == crate::lexer::TokenKind::Newline {
            // a newline outside a macro body (not escaped by a continuation) ends the search
            return None;
        }
    }
    None
}

/// Each definition of a function some row rewrote must now call a pack map (the first
/// identifier of a row's replacement): one whose loop no row matches any more (upstream
/// changed one macro of several that define `FN_NAME`, as 0.11's `UNARY_OP_BF16_VEC` beside
/// `UNARY_OP`) would otherwise keep upstream's loop unnoticed.
fn every_definition_packed(unit: &Unit, matched: &[&'static str]) -> Result<(), TranslateError> {
    let mut maps: Vec<String> = ELEMENTWISE_PACK_EDITS
        .iter()
        .filter(|r| r.file == unit.path)
        .filter_map(|r| crate::lexer::lex(r.rocm).tokens.into_iter().find(|t| t.kind == crate::lexer::TokenKind::Ident).map(|t| t.text.to_string()))
        .collect();
    maps.sort();
    maps.dedup();
    let mut functions = matched.to_vec();
    functions.sort();
    functions.dedup();
    for function in functions {
        let mut from = 0;
        while let Some((open, close)) = wave_rows::function_body(&unit.tokens, function, from) {
            let packed = unit.tokens[open..close].iter().any(|t| maps.iter().any(|m| t.is_ident(m)));
            let macro_name = enclosing_macro(&unit.tokens, open);
            let kept = macro_name.is_some_and(|m| ELEMENTWISE_UPSTREAM_VECTOR_LOOPS.iter().any(|&(file, name, _)| file == unit.path && name == m));
            if !packed && !kept {
                return Err(TranslateError::unsupported(
                    &unit.path,
                    unit.tokens[open].line,
                    function,
                    format!(
                        "rule elementwise-packs: this definition (in macro {}) calls none of {} (no row of kernels::mapping::ELEMENTWISE_PACK_EDITS matches its loop, nor is the macro in ELEMENTWISE_UPSTREAM_VECTOR_LOOPS: upstream changed it)",
                        macro_name.unwrap_or("none"),
                        maps.join(", ")
                    ),
                ));
            }
            from = close + 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer;

    fn run(path: &str, src: &str) -> Result<(String, usize), TranslateError> {
        let mut unit = Unit { path: path.into(), tokens: lexer::lex(src).tokens };
        let n = apply(&mut unit, &TreeFacts::default())?;
        Ok((lexer::render(&unit.tokens), n))
    }

    /// Before and after: upstream's AFFINE_OP, a macro (its continuations kept); the
    /// strided loop is left as it is.
    #[test]
    fn the_contiguous_loop_becomes_a_pack_map_and_the_strided_one_stays() {
        let src = "#define AFFINE_OP(TYPENAME, FN_NAME, AFFINE) \\\n\
                   extern \"C\" __global__ void FN_NAME(const size_t numel, const TYPENAME *inp, TYPENAME *out) { \\\n\
                   \x20   if (c) { \\\n\
                   \x20       for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += blockDim.x * gridDim.x) { \\\n\
                   \x20           TYPENAME x = inp ? inp[i] : out[i]; \\\n\
                   \x20           out[i] = AFFINE; \\\n\
                   \x20       } \\\n\
                   \x20   } else { \\\n\
                   \x20       for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += blockDim.x * gridDim.x) { \\\n\
                   \x20           unsigned strided_i = get_strided_index(i, num_dims, dims, strides); \\\n\
                   \x20           TYPENAME x = inp ? inp[strided_i] : out[i]; \\\n\
                   \x20           out[i] = AFFINE; \\\n\
                   \x20       } \\\n\
                   \x20   } \\\n\
                   }\n";
        let (out, n) = run("affine.cu", src).unwrap();
        assert_eq!(n, 1);
        assert!(out.contains("if (c) { \\\n        candle_ew_map1(numel, inp ? inp : out, out, [&](TYPENAME x) { return AFFINE; }); \\\n    } else"), "{out}");
        assert!(out.contains("TYPENAME x = inp ? inp[strided_i] : out[i];"), "{out}");
        // the replacement stays on the macro's logical lines
        assert_eq!(lexer::logical_lines(lexer::lex(&out).tokens).iter().filter(|l| l.directive() == Some("define")).count(), 1);
    }

    #[test]
    fn a_changed_loop_is_an_error_naming_the_file_and_the_table() {
        let src = "template <typename S, typename T> __device__ void cast_(const size_t numel, const S *inp, T *out) {\n\
                   \x20   for (size_t i = 0; i < numel; i++) { out[i] = inp[i]; }\n}\n";
        let err = run("cast.cu", src).unwrap_err().to_string();
        assert!(err.contains("cast.cu") && err.contains("cast_") && err.contains("ELEMENTWISE_PACK_EDITS"), "{err}");
    }

    /// A release without a row's function (0.10's cast.cu has no cast_bf16_f32) is translated.
    #[test]
    fn a_function_the_release_lacks_is_skipped() {
        let src = "template <typename S, typename T> __device__ void cast_(const size_t numel, const S *inp, T *out) {\n\
                   \x20   for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += blockDim.x * gridDim.x) {\n\
                   \x20       out[i] = inp[i];\n    }\n}\n";
        let (out, n) = run("cast.cu", src).unwrap();
        assert_eq!(n, 1);
        assert!(out.contains("candle_ew_map1(numel, inp, out, [](S x) { return x; });"), "{out}");
    }

    /// 0.9's AFFINE_OP writes its expression in the macro: the second affine row takes it.
    #[test]
    fn an_older_form_of_a_loop_takes_its_own_row() {
        let src = "#define AFFINE_OP(TYPENAME, FN_NAME) \\\n\
                   extern \"C\" __global__ void FN_NAME(const size_t numel, const TYPENAME *inp, TYPENAME *out, TYPENAME mul, TYPENAME add) { \\\n\
                   \x20   for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += blockDim.x * gridDim.x) { \\\n\
                   \x20       TYPENAME x = inp ? inp[i] : out[i]; \\\n\
                   \x20       out[i] = x * mul + add; \\\n\
                   \x20   } \\\n\
                   }\n";
        let (out, n) = run("affine.cu", src).unwrap();
        assert_eq!(n, 1);
        assert!(out.contains("candle_ew_map1(numel, inp ? inp : out, out, [&](TYPENAME x) { return x * mul + add; });"), "{out}");
    }

    /// Before and after: 0.11's UNARY_OP_BF16_VEC (silu, sigmoid), whose own 8-wide loop
    /// writes its float4 through a bf16 pointer; the pack map takes the contiguous branch whole,
    /// with the same float arithmetic per element, and the strided loop stays.
    #[test]
    fn upstreams_bf16_vector_loop_becomes_a_pack_map() {
        let src = "#define UNARY_OP_BF16_VEC(FN_NAME, FLOAT_FUNC) \\\n\
                   extern \"C\" __global__ void FN_NAME(const size_t numel, const size_t num_dims, const size_t *info, const __nv_bfloat16 *inp, __nv_bfloat16 *out) { \\\n\
                   \x20   if (info == nullptr || is_contiguous(num_dims, dims, strides)) { \\\n\
                   \x20       if (numel >= 8 && is_aligned_16(inp) && is_aligned_16(out)) { \\\n\
                   \x20           const size_t vec_numel = numel / 8; \\\n\
                   \x20           const float4 *inp4 = reinterpret_cast<const float4*>(inp); \\\n\
                   \x20           float4 *out4 = reinterpret_cast<float4*>(out); \\\n\
                   \x20           for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < vec_numel; i += blockDim.x * gridDim.x) { \\\n\
                   \x20               float4 v = inp4[i]; \\\n\
                   \x20               __nv_bfloat16 *vp = reinterpret_cast<__nv_bfloat16*>(&v); \\\n\
                   \x20               _Pragma(\"unroll\") \\\n\
                   \x20               for (int j = 0; j < 8; j++) { \\\n\
                   \x20                   float xf = __bfloat162float(vp[j]); \\\n\
                   \x20                   vp[j] = __float2bfloat16(FLOAT_FUNC); \\\n\
                   \x20               } \\\n\
                   \x20               out4[i] = v; \\\n\
                   \x20           } \\\n\
                   \x20           const size_t tail_start = vec_numel * 8; \\\n\
                   \x20           for (unsigned int i = tail_start + blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += blockDim.x * gridDim.x) { \\\n\
                   \x20               float xf = __bfloat162float(inp ? inp[i] : out[i]); \\\n\
                   \x20               out[i] = __float2bfloat16(FLOAT_FUNC); \\\n\
                   \x20           } \\\n\
                   \x20       } else { \\\n\
                   \x20           for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += blockDim.x * gridDim.x) { \\\n\
                   \x20               float xf = __bfloat162float(inp ? inp[i] : out[i]); \\\n\
                   \x20               out[i] = __float2bfloat16(FLOAT_FUNC); \\\n\
                   \x20           } \\\n\
                   \x20       } \\\n\
                   \x20   } else { \\\n\
                   \x20       for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += blockDim.x * gridDim.x) { \\\n\
                   \x20           unsigned strided_i = get_strided_index(i, num_dims, dims, strides); \\\n\
                   \x20           float xf = __bfloat162float(inp ? inp[strided_i] : out[i]); \\\n\
                   \x20           out[i] = __float2bfloat16(FLOAT_FUNC); \\\n\
                   \x20       } \\\n\
                   \x20   } \\\n\
                   }\n";
        let (out, n) = run("unary.cu", src).unwrap();
        assert_eq!(n, 1);
        assert!(
            out.contains("strides)) { \\\n        candle_ew_map1(numel, inp ? inp : out, out, [&](__nv_bfloat16 x) { float xf = __bfloat162float(x); return __float2bfloat16(FLOAT_FUNC); }); \\\n    } else"),
            "{out}"
        );
        assert!(!out.contains("float4"), "{out}");
        assert!(out.contains("float xf = __bfloat162float(inp ? inp[strided_i] : out[i]);"), "{out}");
    }

    /// Several macros define `FN_NAME`: when one of them changes its loop so that no row
    /// matches it, the rows the others match do not hide it; a macro listed as keeping
    /// upstream's own vector loop passes.
    #[test]
    fn a_definition_no_row_matches_is_an_error_naming_its_macro() {
        let plain = |name: &str| {
            format!(
                "#define {name}(TYPENAME, FN_NAME, FUNC) \\\n\
                 extern \"C\" __global__ void FN_NAME(const size_t numel, const TYPENAME *inp, TYPENAME *out) {{ \\\n\
                 \x20   for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += blockDim.x * gridDim.x) {{ TYPENAME x = inp ? inp[i] : out[i]; out[i] = FUNC; }} \\\n\
                 }}\n"
            )
        };
        let changed = "#define UNARY_OP_BF16_VEC(FN_NAME, FLOAT_FUNC) \\\n\
                       extern \"C\" __global__ void FN_NAME(const size_t numel, const __nv_bfloat16 *inp, __nv_bfloat16 *out) { \\\n\
                       \x20   for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < numel / 8; i += blockDim.x * gridDim.x) { vec8(inp, out, i); } \\\n\
                       }\n";
        let two = format!("{}{}", plain("UNARY_OP"), plain("UNARY_OP1"));
        assert_eq!(run("unary.cu", &two).unwrap().1, 2);
        let err = run("unary.cu", &format!("{two}{changed}")).unwrap_err().to_string();
        assert!(err.starts_with("unary.cu:10: FN_NAME") && err.contains("(in macro UNARY_OP_BF16_VEC) calls none of candle_ew_map1 ("), "{err}");
        // binary_op_macros.cuh's own vector loops are listed: kept there, not in another file
        let binary = changed.replace("UNARY_OP_BF16_VEC", "BINARY_OP_F32_VEC");
        let unit = |path: &str| Unit { path: path.into(), tokens: lexer::lex(&binary).tokens };
        every_definition_packed(&unit("binary_op_macros.cuh"), &["FN_NAME"]).unwrap();
        let err = every_definition_packed(&unit("unary.cu"), &["FN_NAME"]).unwrap_err().to_string();
        assert!(err.contains("(in macro BINARY_OP_F32_VEC) calls none of"), "{err}");
    }

    #[test]
    fn rows_lex_and_each_names_a_loop_of_upstream_shape() {
        for row in ELEMENTWISE_PACK_EDITS {
            assert!(row.upstream.starts_with("for ( unsigned int i =") || row.upstream.starts_with("if ( numel >= 8"), "{}", row.function);
            assert!(row.rocm.starts_with("candle_ew_map"), "{}", row.function);
            assert!(!row.rocm.contains('\n'), "a replacement inside a macro must stay on its line: {}", row.function);
        }
    }
}
