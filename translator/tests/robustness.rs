//! Property tests: the lexer and the kernel rules never panic, whatever the
//! input (random text, truncated real code, unterminated comments and
//! literals, stray backslashes, non-UTF-8 bytes), and lexing is lossless.

use proptest::prelude::*;
use translator::kernels::{translate_tree, KernelContext};
use translator::lexer::{lex, render};
use translator::TreeFile;

/// Fragments of real CUDA that exercise every rule, to splice and truncate.
const FRAGMENTS: &[&str] = &[
    "#if __CUDA_ARCH__ >= 800\n",
    "#elif defined(__CUDA_ARCH__)\n",
    "#else\n",
    "#endif\n",
    "#ifdef TURING_MMA_AVAILABLE\n",
    "#define TURING_MMA_AVAILABLE\n",
    "#include \"cuda_fp16.h\"\n",
    "#include <cub/cub.cuh>\n",
    "asm volatile(\"cvt.rn.f16.f32 %0, %1;\\n\" : \"=h\"(x) : \"f\"(f));\n",
    "x += __shfl_xor_sync(0xffffffff, x, mask, 32);\n",
    "__nv_bfloat16 y = __float2bfloat16(1.0f);\n",
    "m = min(a, blockDim.x);\n",
    "using namespace nvcuda::wmma;\n",
    "/* comment __nv_fp8_e4m3 */",
    "// line comment \\\n continued\n",
    "\"str\\\"ing\"",
    "'c'",
    "R\"d(raw)d\"",
    "\\",
    "\r\n",
    "extern \"C\" __global__ void k(float *p) { p[threadIdx.x] = 0; }\n",
];

fn spliced() -> impl Strategy<Value = String> {
    (prop::collection::vec(0..FRAGMENTS.len(), 0..24), any::<usize>())
        .prop_map(|(idx, cut)| {
            let s: String = idx.into_iter().map(|i| FRAGMENTS[i]).collect();
            let mut cut = if s.is_empty() { 0 } else { cut % (s.len() + 1) };
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s[..cut].to_string()
        })
}

fn translate(bytes: Vec<u8>) -> Result<Vec<TreeFile>, translator::TranslateError> {
    let ctx = KernelContext::new("fuzz 0.0.0");
    translate_tree(&[TreeFile { rel_path: "f.cu".into(), contents: bytes }], &ctx).map(|o| o.files)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn lexing_is_lossless(src in ".*") {
        prop_assert_eq!(render(&lex(&src).tokens), src);
    }

    #[test]
    fn lexing_spliced_cuda_is_lossless(src in spliced()) {
        prop_assert_eq!(render(&lex(&src).tokens), src);
    }

    #[test]
    fn valid_input_relexes_to_the_same_tokens(src in spliced()) {
        let first = lex(&src);
        if first.problems.is_empty() {
            let again = lex(&render(&first.tokens));
            prop_assert_eq!(first.tokens, again.tokens);
        }
    }

    #[test]
    fn translation_never_panics_on_spliced_cuda(src in spliced()) {
        let _ = translate(src.into_bytes());
    }

    #[test]
    fn translation_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = translate(bytes);
    }

    #[test]
    fn translated_output_relexes_cleanly(src in spliced()) {
        if let Ok(files) = translate(src.into_bytes()) {
            let text = String::from_utf8(files.iter().find(|f| f.rel_path == "f.hip").unwrap().contents.clone()).unwrap();
            prop_assert!(lex(&text).problems.is_empty());
        }
    }
}

#[test]
fn non_utf8_input_is_a_clear_error() {
    let err = translate(b"int a;\nint \xff b;\n".to_vec()).unwrap_err();
    assert_eq!(err.to_string(), "f.cu:2: input is not valid UTF-8");
}

#[test]
fn unterminated_comment_is_a_clear_error() {
    let err = translate(b"int a;\n/* open\n".to_vec()).unwrap_err();
    assert_eq!(err.to_string(), "f.cu:2: unterminated block comment");
}
