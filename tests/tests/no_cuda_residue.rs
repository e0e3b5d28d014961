//! Nothing CUDA-only is left in generated/kernels outside comments: the
//! strings the grep looks for, searched in the text with comments removed.

use candle_rocm_tests::{files_under, workspace_root};
use translator::lexer::{lex, TokenKind};

const CUDA_ONLY: &[&str] = &[
    "__nv_", "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "__CUDA_ARCH__", "_sync(", "asm(", "asm volatile", "nvcuda", "cudaStream_t", "__dp4a",
    "thrust::", "cub::", "__shfl_xor_sync", "__trap",
];

#[test]
fn generated_kernels_have_no_cuda_only_construct_outside_comments() {
    let all = files_under(&workspace_root().join("generated/kernels"), "");
    assert!(all.len() > 30);
    let mut found = Vec::new();
    for path in all {
        let text = std::fs::read_to_string(&path).unwrap();
        let code: String = lex(&text).tokens.iter().filter(|t| !matches!(t.kind, TokenKind::LineComment | TokenKind::BlockComment)).map(|t| t.text.as_str()).collect();
        for needle in CUDA_ONLY {
            // a whole token match: `candle_cub::` is ours, `cub::` is not
            for (at, _) in code.match_indices(needle) {
                let glued = code[..at].chars().last().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
                if !glued || needle.starts_with('_') && !needle.starts_with("__") {
                    found.push(format!("{}: {needle}", path.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "CUDA-only constructs left:\n{}", found.join("\n"));
}
