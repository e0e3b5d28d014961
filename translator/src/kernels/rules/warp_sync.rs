//! Rule `warp-sync-intrinsics`: CUDA's `*_sync` warp intrinsics to HIP.
//!
//! A full mask is dropped. A partial one (a name or expression the file does not
//! define as all ones) is dropped from shuffles, whose lane reads the lane it
//! names, and passed to the `_in` compat function of a vote, match or reduction,
//! which counts the mask's lanes only (column [`PartialMask`]). The shuffle
//! width is spelled out: CUDA's implicit width is its warp size, 32,
//! while HIP's default is the wavefront size, 64 on CDNA. A logical warp is
//! thus 32 lanes on every AMD arch, matching the `WARP_SIZE 32` index math
//! upstream, and results are identical on wave32 and wave64.

use super::tokens::{matching_paren, next_significant, split_args, text_of, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{PartialMask, WarpArgs, LOGICAL_WARP_WIDTH, WARP_SYNC_INTRINSICS};
use crate::lexer::{line_views, Token, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut i = 0;
    while i < unit.tokens.len() {
        let t = &unit.tokens[i];
        let Some(&(cuda, hip, takes, partial)) = WARP_SYNC_INTRINSICS.iter().find(|(c, _, _, _)| t.kind == TokenKind::Ident && t.text == *c) else {
            i += 1;
            continue;
        };
        let at = t.line;
        let fail = |reason: &str| TranslateError::unsupported(&unit.path, at, cuda, reason);
        let open = next_significant(&unit.tokens, i + 1).filter(|&o| unit.tokens[o].is_punct("(")).ok_or_else(|| fail("not called"))?;
        let close = matching_paren(&unit.tokens, open).ok_or_else(|| fail("unbalanced call"))?;
        let args: Vec<String> = split_args(&unit.tokens, open, close).into_iter().map(|r| text_of(&unit.tokens[r])).collect();
        let (mask, rest) = args.split_first().ok_or_else(|| fail("missing mask argument"))?;
        let mut new_args = rest.to_vec();
        let expected = match takes {
            WarpArgs::Width => 2..=3,
            WarpArgs::Exactly(n) => n..=n,
        };
        if !expected.contains(&new_args.len()) {
            return Err(fail("unexpected number of arguments"));
        }
        if takes == WarpArgs::Width && new_args.len() == 2 {
            new_args.push(LOGICAL_WARP_WIDTH.to_string());
        }
        let hip = match partial {
            PartialMask::PassedTo(masked) if !is_full_mask(mask, &unit.tokens) => {
                new_args.insert(0, mask.clone());
                masked
            }
            _ => hip,
        };
        let replacement = tokens_from(&format!("{hip}({})", new_args.join(", ")), at);
        let len = replacement.len();
        unit.tokens.splice(i..=close, replacement);
        i += len;
        count += 1;
    }
    Ok(count)
}

/// Whether `mask` names every lane: all ones in any spelling (`0xffffffff`, `~0u`, `-1`,
/// `uint32_t(-1)`, `(unsigned)-1`, `static_cast<uint64_t>(-1)`, a 64-bit all-ones), or a
/// name the file defines as one (`#define FULL_MASK 0xffffffff`, `constexpr unsigned
/// FULL_MASK = 0xffffffffu;`).
fn is_full_mask(mask: &str, tokens: &[Token]) -> bool {
    is_full_mask_depth(mask, tokens, 0)
}

fn is_full_mask_depth(mask: &str, tokens: &[Token], depth: usize) -> bool {
    let m: String = mask.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
    let m = strip_integer_cast(&m);
    let literal = m.trim_start_matches('(').trim_end_matches(')').trim_end_matches(['u', 'l']);
    if matches!(literal, "0xffffffff" | "0xffffffffffffffff" | "~0" | "-1" | "~0x0") {
        return true;
    }
    if depth < 4 && m.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
        if let Some(value) = definition_of(mask.trim(), tokens) {
            return is_full_mask_depth(&value, tokens, depth + 1);
        }
    }
    false
}

/// `T(x)`, `(T)x`, `static_cast<T>(x)` for an unsigned or signed integer type `T` → `x`.
fn strip_integer_cast(m: &str) -> String {
    const TYPES: &[&str] = &["uint32_t", "uint64_t", "unsigned", "unsignedint", "unsignedlong", "unsignedlonglong", "int", "int32_t", "int64_t", "size_t"];
    for t in TYPES {
        for (open, close) in [(format!("static_cast<{t}>("), ")"), (format!("{t}("), ")")] {
            if let Some(inner) = m.strip_prefix(open.as_str()).and_then(|r| r.strip_suffix(close)) {
                return inner.to_string();
            }
        }
        if let Some(inner) = m.strip_prefix(format!("({t})").as_str()) {
            return inner.to_string();
        }
    }
    m.to_string()
}

/// The text a file gives `name`: `#define name VALUE`, or `name = VALUE;` in a declaration.
fn definition_of(name: &str, tokens: &[Token]) -> Option<String> {
    for line in line_views(tokens) {
        let body: Vec<&Token> = line.directive_body().iter().filter(|t| !t.is_trivia()).collect();
        if line.directive() == Some("define") && body.first().is_some_and(|t| t.is_ident(name)) && !body.get(1).is_some_and(|t| t.is_punct("(")) {
            return Some(body[1..].iter().map(|t| t.text.as_str()).collect());
        }
    }
    let significant: Vec<&Token> = tokens.iter().filter(|t| !t.is_trivia()).collect();
    for (i, t) in significant.iter().enumerate() {
        let declared = i > 0 && matches!(significant[i - 1].kind, TokenKind::Ident) && !significant[i - 1].is_ident("return");
        if t.is_ident(name) && declared && significant.get(i + 1).is_some_and(|n| n.is_punct("=")) {
            let value: Vec<&str> = significant[i + 2..].iter().take_while(|t| !t.is_punct(";")).map(|t| t.text.as_str()).collect();
            return Some(value.concat());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn implicit_width_becomes_explicit_32() {
        let (out, n) = run(apply, "s += __shfl_xor_sync(0xffffffff, s, offset);\n").unwrap();
        assert_eq!(out, "s += candle_shfl_xor(s, offset, 32);\n");
        assert_eq!(n, 1);
    }

    #[test]
    fn explicit_width_is_kept() {
        let (out, _) = run(apply, "x = max(x, __shfl_xor_sync(0xFFFFFFFF, x, off, width));\n").unwrap();
        assert_eq!(out, "x = max(x, candle_shfl_xor(x, off, width));\n");
    }

    #[test]
    fn broadcast_and_reductions() {
        let (out, _) = run(apply, "d = __shfl_sync(0xFFFFFFFF, d, 0); r = __reduce_add_sync(0xffffffff, x);\n").unwrap();
        assert_eq!(out, "d = candle_shfl(d, 0, 32); r = candle_reduce_add_w32(x);\n");
    }

    #[test]
    fn full_masks_in_any_spelling() {
        for mask in ["uint32_t(-1)", "(unsigned)-1", "static_cast<uint64_t>(-1)", "uint64_t(-1)", "~0u", "0xffffffffffffffffull", "FULL_MASK", "kMask"] {
            let src = format!("#define FULL_MASK 0xffffffff\nconstexpr unsigned kMask = 0xffffffffu;\nv = __shfl_xor_sync({mask}, v, 1);\n");
            let (out, n) = run(apply, &src).unwrap();
            assert!(out.ends_with("v = candle_shfl_xor(v, 1, 32);\n"), "{mask}: {out}");
            assert_eq!(n, 1);
        }
        // a name defined as a partial mask is partial
        let (out, _) = run(apply, "#define HALF 0xffff\nb = __ballot_sync(HALF, p);\n").unwrap();
        assert!(out.ends_with("b = candle_ballot_w32_in(HALF, p);\n"), "{out}");
    }

    /// Every row of the table, with the arguments it takes.
    #[test]
    fn every_row_translates() {
        for &(cuda, hip, takes, partial) in WARP_SYNC_INTRINSICS {
            let (args, expected) = match takes {
                WarpArgs::Width => ("v, 1".to_string(), "v, 1, 32".to_string()),
                WarpArgs::Exactly(n) => {
                    let a = (0..n).map(|i| format!("a{i}")).collect::<Vec<_>>().join(", ");
                    (a.clone(), a)
                }
            };
            let (out, n) = run(apply, &format!("r = {cuda}(0xffffffff, {args});\n")).unwrap();
            assert_eq!(out, format!("r = {hip}({expected});\n"), "{cuda}");
            assert_eq!(n, 1);
            let (out, _) = run(apply, &format!("r = {cuda}(group_mask, {args});\n")).unwrap();
            let partial = match partial {
                PartialMask::Dropped => format!("r = {hip}({expected});\n"),
                PartialMask::PassedTo(masked) => format!("r = {masked}(group_mask, {expected});\n"),
            };
            assert_eq!(out, partial, "{cuda} with a partial mask");
        }
        let (out, _) = run(apply, "m = __match_all_sync(~0u, key, &same);\n").unwrap();
        assert_eq!(out, "m = candle_match_all_w32(key, &same);\n");
        let err = run(apply, "m = __match_all_sync(~0u, key);\n").unwrap_err();
        assert!(err.to_string().contains("__match_all_sync") && err.to_string().contains("number of arguments"), "{err}");
    }

    /// vLLM's grouped shuffles: the mask names the lanes of a group, the xor stays inside it.
    #[test]
    fn partial_masks_leave_shuffles_and_reach_votes() {
        let src = "unsigned group_mask = 0xffu << (lane & ~7);\nv += __shfl_xor_sync(group_mask, v, 4, 8);\nok = __all_sync(0x0000ffff, v > 0);\nm = __match_all_sync(__activemask(), key, &same);\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(n, 3);
        assert!(out.contains("v += candle_shfl_xor(v, 4, 8);"), "{out}");
        assert!(out.contains("ok = candle_all_w32_in(0x0000ffff, v > 0);"), "{out}");
        assert!(out.contains("m = candle_match_all_w32_in(__activemask(), key, &same);"), "{out}");
    }

    #[test]
    fn idempotent_on_its_output() {
        let (once, _) = run(apply, "__shfl_xor_sync(0xffffffff, v, 1);\n").unwrap();
        assert_eq!(run(apply, &once).unwrap(), (once, 0));
    }
}
