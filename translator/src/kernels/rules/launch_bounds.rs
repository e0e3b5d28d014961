//! Rule `launch-bounds`: a kernel launched with fewer threads than the 1024 hipcc assumes
//! gets `__launch_bounds__` for the block its launches use ([`LAUNCH_BOUNDS`]), so that
//! the compiler gives its waves the registers that block size leaves them instead of
//! spilling at the 1024-thread cap.
//!
//! The bound goes before the kernel's name in each `__global__` definition the row names
//! (`extern "C" __global__ void __launch_bounds__(128) mul_mat_q4_0(...)`). A row must
//! match exactly `count` definitions, none of which may carry a bound already: anything
//! else is an error naming the file and the row (upstream changed: check the launches).
//!
//! CUDA's own bounds: one or two arguments are kept as written (HIP reads the second as
//! the minimum waves per execution unit where CUDA reads blocks per multiprocessor: an
//! occupancy hint either way, no effect on results); a third, CUDA 12's maximum blocks
//! per thread-block cluster, goes (AMD GPUs have no clusters; hipcc takes two).

use hip_build::plan::wildcard_match;

use super::tokens::{matching_paren, next_significant, prev_significant, split_args, text_of, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{LaunchBound, LAUNCH_BOUNDS};
use crate::lexer::Token;
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    Ok(without_cluster_bounds(unit)? + rewrite(unit, LAUNCH_BOUNDS)?)
}

/// `__launch_bounds__(threads, blocks, cluster_blocks)` → `__launch_bounds__(threads, blocks)`.
fn without_cluster_bounds(unit: &mut Unit) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut i = 0;
    while i < unit.tokens.len() {
        if !unit.tokens[i].is_ident("__launch_bounds__") {
            i += 1;
            continue;
        }
        let line = unit.tokens[i].line;
        let Some(open) = next_significant(&unit.tokens, i + 1).filter(|&o| unit.tokens[o].is_punct("(")) else {
            i += 1;
            continue;
        };
        let close = matching_paren(&unit.tokens, open).ok_or_else(|| TranslateError::unsupported(&unit.path, line, "__launch_bounds__(", "unbalanced parentheses"))?;
        let args = split_args(&unit.tokens, open, close);
        if args.len() == 3 {
            let kept: Vec<String> = args[..2].iter().map(|r| text_of(&unit.tokens[r.clone()])).collect();
            let replacement = tokens_from(&format!("__launch_bounds__({})", kept.join(", ")), line);
            let n = replacement.len();
            unit.tokens.splice(i..=close, replacement);
            count += 1;
            i += n;
        } else {
            i = close + 1;
        }
    }
    Ok(count)
}

fn rewrite(unit: &mut Unit, rows: &[LaunchBound]) -> Result<usize, TranslateError> {
    let rows: Vec<&LaunchBound> = rows.iter().filter(|r| r.file == unit.path).collect();
    if rows.is_empty() {
        return Ok(0);
    }
    let mut found = vec![0usize; rows.len()];
    let mut i = 0;
    while i < unit.tokens.len() {
        if !unit.tokens[i].is_ident("__global__") {
            i += 1;
            continue;
        }
        let Some((start, name, bounded)) = kernel_name(&unit.tokens, i) else {
            i += 1;
            continue;
        };
        if let Some(r) = rows.iter().position(|r| wildcard_match(r.kernel, &name)) {
            if bounded {
                return Err(TranslateError::unsupported(&unit.path, unit.tokens[i].line, format!("__global__ {name}"), "rule launch-bounds: upstream bounds this kernel already (remove its row in kernels::mapping::LAUNCH_BOUNDS)"));
            }
            let bound = tokens_from(&format!("__launch_bounds__({}) ", rows[r].threads), unit.tokens[start].line);
            let n = bound.len();
            unit.tokens.splice(start..start, bound);
            found[r] += 1;
            i = start + n;
        }
        i += 1;
    }
    for (row, n) in rows.iter().zip(&found) {
        if *n != row.count {
            return Err(TranslateError::unsupported(&unit.path, 0, format!("__global__ {}", row.kernel), format!("rule launch-bounds: {n} definitions, expected {} (upstream changed: check its launches and the row in kernels::mapping::LAUNCH_BOUNDS)", row.count)));
        }
    }
    Ok(found.iter().sum())
}

/// After the `__global__` at `at`: the index of the kernel name's first token, the name
/// (its identifiers and `##` pastes, as written), and whether `__launch_bounds__` is
/// already among the declaration's tokens before it.
pub(super) fn kernel_name(tokens: &[Token], at: usize) -> Option<(usize, String, bool)> {
    let mut j = at + 1;
    // the `(` of the parameter list: the first one (a bound's own parenthesis comes after `__launch_bounds__`)
    let mut bounded = false;
    let open = loop {
        let k = next_significant(tokens, j)?;
        let t = &tokens[k];
        if t.is_ident("__launch_bounds__") {
            bounded = true;
            let paren = next_significant(tokens, k + 1)?;
            j = super::tokens::matching_paren(tokens, paren)? + 1;
            continue;
        }
        if t.is_punct("(") {
            break k;
        }
        if t.is_punct(";") || t.is_punct("{") || t.is_punct("}") {
            return None;
        }
        j = k + 1;
    };
    // the name: identifiers and `##` right before it
    let mut start = prev_significant(tokens, open)?;
    if !matches!(tokens[start].kind, crate::lexer::TokenKind::Ident) {
        return None;
    }
    while let Some(p) = prev_significant(tokens, start) {
        let joined = tokens[p].is_punct("##") || (matches!(tokens[p].kind, crate::lexer::TokenKind::Ident) && tokens[start].is_punct("##"));
        if !joined || p <= at {
            break;
        }
        start = p;
    }
    let name: String = (start..open).filter(|&k| !tokens[k].is_trivia()).map(|k| tokens[k].text.as_str()).collect();
    Some((start, name, bounded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer;

    const ROWS: &[LaunchBound] = &[
        LaunchBound { file: "q.cu", kernel: "mul_mat_vec_*_cuda1", threads: "128", count: 2, launched_by: "t" },
        LaunchBound { file: "q.cu", kernel: "entry_##tag##_cuda##n", threads: "32 * ((n) <= 4 ? 4 : 2)", count: 1, launched_by: "t" },
        LaunchBound { file: "q.cu", kernel: "fixup", threads: "W * N", count: 1, launched_by: "t" },
    ];

    fn run(src: &str) -> Result<(String, usize), TranslateError> {
        let mut unit = Unit { path: "q.cu".into(), tokens: lexer::lex(src).tokens };
        let n = rewrite(&mut unit, ROWS)?;
        Ok((lexer::render(&unit.tokens), n))
    }

    /// Before and after: extern "C" entries, a macro's pasted name, a template; a
    /// declaration's `;` and other kernels are left alone.
    #[test]
    fn bounds_go_before_the_named_kernels() {
        let src = "extern \"C\" __global__ void\n    mul_mat_vec_q4_0_cuda1(int x) {}\n\
                   extern \"C\" __global__ void mul_mat_vec_q8_0_cuda1(int x) {}\n\
                   extern \"C\" __global__ void mul_mat_vec_q8_0_cuda2(int x) {}\n\
                   #define E(tag, n) \\\n  extern \"C\" __global__ void \\\n      entry_##tag##_cuda##n(int x) { body(n); }\n\
                   template <int W> static __global__ void fixup(int x) {}\n";
        let (out, n) = run(src).unwrap();
        assert_eq!(n, 4);
        assert!(out.contains("extern \"C\" __global__ void\n    __launch_bounds__(128) mul_mat_vec_q4_0_cuda1(int x)"), "{out}");
        assert!(out.contains("__global__ void __launch_bounds__(128) mul_mat_vec_q8_0_cuda1("), "{out}");
        assert!(out.contains("__global__ void mul_mat_vec_q8_0_cuda2("), "{out}");
        assert!(out.contains("      __launch_bounds__(32 * ((n) <= 4 ? 4 : 2)) entry_##tag##_cuda##n(int x)"), "{out}");
        assert!(out.contains("static __global__ void __launch_bounds__(W * N) fixup(int x)"), "{out}");
    }

    #[test]
    fn a_changed_upstream_is_an_error_naming_the_row() {
        let err = run("extern \"C\" __global__ void mul_mat_vec_a_cuda1() {}\n").unwrap_err().to_string();
        assert!(err.contains("__global__ mul_mat_vec_*_cuda1") && err.contains("1 definitions, expected 2"), "{err}");
        let bounded = "extern \"C\" __global__ void __launch_bounds__(64) mul_mat_vec_a_cuda1() {}\n";
        let err = run(bounded).unwrap_err().to_string();
        assert!(err.starts_with("q.cu:1: __global__ mul_mat_vec_a_cuda1") && err.contains("bounds this kernel already"), "{err}");
    }

    /// The rows' patterns, through hip-build's matcher (the one static_library patterns use).
    #[test]
    fn patterns() {
        assert!(wildcard_match("mul_mat_q*", "mul_mat_q4_0") && !wildcard_match("mul_mat_q*", "mul_mat_vec_q4_0"));
        assert!(wildcard_match("a*b*c", "axxbyyc") && !wildcard_match("a*b*c", "axxcyyb"));
    }

    /// CUDA 12's third argument (cluster blocks) goes; one or two stay as written.
    #[test]
    fn cluster_bounds_go_and_the_rest_stay() {
        let src = "__global__ void __launch_bounds__(256, 2, 1) a(float *p) {}\n__global__ void __launch_bounds__(256, 2) b() {}\n__global__ void __launch_bounds__(N) c() {}\n";
        let (out, n) = crate::kernels::rules::test_support::run(apply, src).unwrap();
        assert_eq!(out, "__global__ void __launch_bounds__(256, 2) a(float *p) {}\n__global__ void __launch_bounds__(256, 2) b() {}\n__global__ void __launch_bounds__(N) c() {}\n");
        assert_eq!(n, 1);
    }
}
