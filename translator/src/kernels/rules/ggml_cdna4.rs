//! Rule `ggml-cdna4-mma`: CDNA4 (gfx950) takes CDNA3's int8 and bf16 MFMA instructions in
//! upstream's copy of ggml's `mma` tiles, and CDNA2's f32 pair where CDNA3 has xf32
//! ([`GGML_CDNA4_MMA_EDITS`], applied by the [`FunctionEdit`] matcher of rule `wave-rows`):
//! as ggml itself since llama.cpp PR 21570.

use super::{wave_rows, TreeFacts, Unit};
use crate::kernels::mapping::GGML_CDNA4_MMA_EDITS;
#[cfg(doc)]
use crate::kernels::mapping::FunctionEdit;
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    wave_rows::rewrite(unit, GGML_CDNA4_MMA_EDITS, "ggml-cdna4-mma", "GGML_CDNA4_MMA_EDITS")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer;

    /// Before and after: the four branches of upstream's `mma` overloads.
    #[test]
    fn cdna4_takes_cdna3s_int8_and_bf16_and_cdna2s_f32() {
        let src = "struct T {\n    static __device__ void mma(int *D) {\n#if defined(CDNA3)\n        acc = xf32(a);\n#elif defined(CDNA2) || defined(CDNA1)\n        acc = f32x4(a);\n#endif\n    }\n\
                   static __device__ void mma(float *D) {\n#if defined(CDNA3) || defined(CDNA2)\n        acc = bf16_1k(a);\n#endif\n    }\n\
                   static __device__ void mma(long *D) {\n#if defined(CDNA3)\n        acc[0] = __builtin_amdgcn_mfma_i32_16x16x32_i8(a, b, acc[0], 0, 0, 0);\n#elif defined(CDNA2) || defined(CDNA)\n        acc[0] = x16(a);\n#endif\n    }\n\
                   static __device__ void mma(short *D) {\n#if defined(CDNA3)\n        acc[0] = __builtin_amdgcn_mfma_i32_32x32x16_i8(a, b, acc[0], 0, 0, 0);\n#endif\n    }\n};\n";
        let mut unit = Unit { path: "mmq_gguf/mmq_mma.cuh".into(), tokens: lexer::lex(src).tokens };
        assert_eq!(apply(&mut unit, &TreeFacts::default()).unwrap(), 4);
        let out = lexer::render(&unit.tokens);
        assert!(out.contains("#if defined(CDNA3)\n        acc = xf32(a);\n#elif defined(CDNA4) || defined(CDNA2) || defined(CDNA1)\n"), "{out}");
        assert!(out.contains("#if defined(CDNA4) || defined(CDNA3) || defined(CDNA2)\n        acc = bf16_1k(a);"), "{out}");
        assert!(out.contains("#if defined(CDNA4) || defined(CDNA3)\n        acc[0] = __builtin_amdgcn_mfma_i32_16x16x32_i8(a, b"), "{out}");
        assert!(out.contains("#if defined(CDNA4) || defined(CDNA3)\n        acc[0] = __builtin_amdgcn_mfma_i32_32x32x16_i8(a, b"), "{out}");
        assert!(out.contains("#elif defined(CDNA2) || defined(CDNA)\n"), "{out}");
        // another file: nothing
        let mut other = Unit { path: "mmq_gguf/mmq_gguf.cuh".into(), tokens: lexer::lex(src).tokens };
        assert_eq!(apply(&mut other, &TreeFacts::default()).unwrap(), 0);
    }
}
