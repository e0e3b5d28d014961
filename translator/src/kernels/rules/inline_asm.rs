//! Rule `inline-asm`: inline assembly with a known exact meaning becomes C++.
//!
//! PTX cannot run on AMD, and even AMD assembly is better left to the
//! compiler. Each `asm [volatile] ("template" : outputs : inputs);` statement
//! is matched against [`ASM_REWRITES`] by its template and rewritten with its
//! operand expressions. A template of several instructions that no row names whole
//! is taken instruction by instruction: each, its operands numbered in order
//! (`max.NaN.f32 %0, %0, 0fC5800000;` is `max.NaN.f32 %0, %1, %2;` with the
//! statement's operand 0 twice and the float immediate `0fC5800000`), must be a row,
//! and the rows' C++ follow one another. Anything else is an error naming the template.
//! (The NVIDIA matrix-core asm upstream sits in branches that
//! `fold-conditionals` has already removed.)

use super::tokens::{matching_paren, next_significant, text_of, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{NvidiaOnly, ASM_NVIDIA_ONLY, ASM_REWRITES};
use crate::lexer::{Token, TokenKind};
use crate::TranslateError;

const ASM_KEYWORDS: &[&str] = &["asm", "__asm", "__asm__"];
const QUALIFIERS: &[&str] = &["volatile", "__volatile__", "inline", "goto"];

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let mut i = 0;
    while i < unit.tokens.len() {
        let t = &unit.tokens[i];
        if t.kind != TokenKind::Ident || !ASM_KEYWORDS.contains(&t.text.as_str()) {
            i += 1;
            continue;
        }
        let at = t.line;
        let fail = |construct: String, reason: &str| TranslateError::unsupported(&unit.path, at, construct, reason);
        let mut open = next_significant(&unit.tokens, i + 1).ok_or_else(|| fail("asm".into(), "truncated asm statement"))?;
        while unit.tokens[open].kind == TokenKind::Ident && QUALIFIERS.contains(&unit.tokens[open].text.as_str()) {
            open = next_significant(&unit.tokens, open + 1).ok_or_else(|| fail("asm".into(), "truncated asm statement"))?;
        }
        if !unit.tokens[open].is_punct("(") {
            return Err(fail("asm".into(), "asm without an operand list"));
        }
        let close = matching_paren(&unit.tokens, open).ok_or_else(|| fail("asm(".into(), "unbalanced asm statement"))?;
        let stmt = parse(&unit.tokens[open + 1..close]).ok_or_else(|| fail("asm(...)".into(), "unparsable asm statement"))?;
        if let Some(row) = nvidia_only(&stmt.template) {
            return Err(TranslateError::nvidia_only(&unit.path, at, format!("asm(\"{}\")", stmt.template), row.cause, row.since_sm));
        }
        let text = if let Some(rewrite) = ASM_REWRITES.iter().find(|r| r.template == stmt.template) {
            fill(rewrite.replacement, &stmt.operands)
        } else if let Some(text) = instruction_by_instruction(&stmt) {
            text
        } else {
            return Err(fail(format!("asm(\"{}\")", stmt.template), "no exact C++ or HIP meaning known for this inline assembly (add a row to kernels::mapping::ASM_REWRITES)"));
        };
        // the statement's own `;` follows the `)`; the replacement carries one
        let end = next_significant(&unit.tokens, close + 1).filter(|&s| unit.tokens[s].is_punct(";")).unwrap_or(close);
        let replacement: Vec<Token> = tokens_from(&text, at);
        let len = replacement.len();
        unit.tokens.splice(i..=end, replacement);
        i += len;
        count += 1;
    }
    Ok(count)
}

/// A row's replacement with `{n}` the n-th operand expression.
fn fill(replacement: &str, operands: &[String]) -> String {
    let mut text = replacement.to_string();
    for (n, operand) in operands.iter().enumerate() {
        text = text.replace(&format!("{{{n}}}"), operand);
    }
    text
}

/// A template of several plain instructions (no braces, no predicates), each a row
/// once its operands are numbered in order: the rows' C++, one after another.
fn instruction_by_instruction(stmt: &AsmStatement) -> Option<String> {
    if stmt.template.contains(['{', '}', '@']) {
        return None;
    }
    let instructions: Vec<&str> = stmt.template.split(';').map(str::trim).filter(|i| !i.is_empty()).collect();
    if instructions.len() < 2 {
        return None;
    }
    let mut out = Vec::new();
    for instruction in instructions {
        let (opcode, rest) = instruction.split_once(' ')?;
        let mut operands = Vec::new();
        let mut slots = Vec::new();
        for (n, operand) in rest.split(',').map(str::trim).enumerate() {
            slots.push(format!("%{n}"));
            operands.push(operand_expression(operand, &stmt.operands)?);
        }
        let template = format!("{opcode} {};", slots.join(", "));
        let row = ASM_REWRITES.iter().find(|r| r.template == template)?;
        out.push(fill(row.replacement, &operands));
    }
    Some(out.join(" "))
}

/// An instruction operand as C++: `%n` the statement's n-th operand, `0fXXXXXXXX` a
/// float given by its bits, a decimal or hex integer as written.
fn operand_expression(operand: &str, operands: &[String]) -> Option<String> {
    if let Some(n) = operand.strip_prefix('%') {
        return operands.get(n.parse::<usize>().ok()?).map(|o| format!("({o})"));
    }
    if let Some(bits) = operand.strip_prefix("0f").or_else(|| operand.strip_prefix("0F")) {
        return (bits.len() == 8 && bits.chars().all(|c| c.is_ascii_hexdigit())).then(|| format!("__uint_as_float(0x{bits}u)"));
    }
    let integer = operand.strip_prefix("0x").map_or_else(|| operand.chars().all(|c| c.is_ascii_digit()), |h| h.chars().all(|c| c.is_ascii_hexdigit()));
    (integer && !operand.is_empty()).then(|| operand.to_string())
}

/// The row of [`ASM_NVIDIA_ONLY`] naming an instruction of `template` (each statement's
/// first word, after any `@p` predicate).
fn nvidia_only(template: &str) -> Option<&'static NvidiaOnly> {
    template.split([';', '{', '}']).map(str::trim).find_map(|statement| {
        let word = statement.split_whitespace().find(|w| !w.starts_with('@'))?;
        ASM_NVIDIA_ONLY.iter().find(|row| word.starts_with(row.key))
    })
}

struct AsmStatement {
    template: String,
    operands: Vec<String>,
}

/// Parses the inside of `asm( ... )`: template strings, then `:`-separated
/// operand groups of `"constraint"(expr)`.
fn parse(toks: &[Token]) -> Option<AsmStatement> {
    let sig: Vec<usize> = (0..toks.len()).filter(|&j| !toks[j].is_trivia()).collect();
    let mut k = 0;
    let mut template = String::new();
    while k < sig.len() && toks[sig[k]].kind == TokenKind::Str {
        let lit = &toks[sig[k]].text;
        template.push_str(lit.get(1..lit.len() - 1)?);
        k += 1;
    }
    if template.is_empty() {
        return None;
    }
    let template = template.replace("\\n", " ").replace("\\t", " ").split_whitespace().collect::<Vec<_>>().join(" ");
    let mut operands = Vec::new();
    let mut group = 0;
    while k < sig.len() {
        let t = &toks[sig[k]];
        if t.is_punct(":") || t.is_punct("::") {
            group += if t.text == "::" { 2 } else { 1 };
            k += 1;
            continue;
        }
        if t.is_punct(",") {
            k += 1;
            continue;
        }
        if group > 2 {
            k += 1; // clobbers
            continue;
        }
        if t.kind != TokenKind::Str || k + 1 >= sig.len() || !toks[sig[k + 1]].is_punct("(") {
            return None;
        }
        let open = sig[k + 1];
        let close = matching_paren(toks, open)?;
        operands.push(text_of(&toks[open + 1..close]));
        k = sig.iter().position(|&j| j > close).unwrap_or(sig.len());
    }
    Some(AsmStatement { template, operands })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    #[test]
    fn ptx_float_to_half_becomes_cxx() {
        let src = "  asm volatile(\"cvt.rn.f16.f32 %0, %1;\\n\" : \"=h\"(tmp.u16[0]) : \"f\"(f));\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(out, "  tmp.u16[0] = __half_as_ushort(__float2half_rn(f));\n");
        assert_eq!(n, 1);
    }

    #[test]
    fn unknown_asm_is_an_error_naming_the_template() {
        let err = run(apply, "asm(\"bfind.u32 %0, %1;\" : \"=r\"(x) : \"r\"(y));\n").unwrap_err();
        assert!(err.to_string().starts_with("t.cu:1: asm(\"bfind.u32 %0, %1;\"): no exact"), "{err}");
    }

    /// vLLM's fused qk-norm/rope kernel clamps two floats with NaN-propagating min/max
    /// and float immediates: four instructions, each a row
    #[test]
    fn a_sequence_of_known_instructions_is_taken_one_by_one() {
        let src = "asm volatile(\"max.NaN.f32 %0, %0, 0fC5800000; min.NaN.f32 %0, %0, 0f45800000;\" : \"+f\"(x.a));\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(out, "(x.a) = candle_fmax_nan_ptx((x.a), __uint_as_float(0xC5800000u)); (x.a) = candle_fmin_nan_ptx((x.a), __uint_as_float(0x45800000u));\n");
        assert_eq!(n, 1);
        // one unknown instruction: the whole template is named
        let err = run(apply, "asm(\"max.NaN.f32 %0, %0, %1; bfind.u32 %0, %1;\" : \"+f\"(a) : \"f\"(b));\n").unwrap_err();
        assert!(err.to_string().contains("asm(\"max.NaN.f32 %0, %0, %1; bfind.u32 %0, %1;\")"), "{err}");
    }

    #[test]
    fn words_containing_asm_are_untouched() {
        let src = "int plasma = asm_count; // asm(\"x\")\n";
        assert_eq!(run(apply, src).unwrap(), (src.to_string(), 0));
    }

    #[test]
    fn every_row_rewrites_its_template_with_its_operands() {
        for row in ASM_REWRITES {
            let operands = (0..10).take_while(|n| row.template.contains(&format!("%{n}"))).count();
            let args: Vec<String> = (0..operands).map(|n| format!("\"r\"(x{n})")).collect();
            let src = format!("asm volatile(\"{}\\n\" : : {});\n", row.template.replace('"', "\\\""), args.join(", "));
            let (out, n) = run(apply, &src).unwrap_or_else(|e| panic!("{}: {e}", row.template));
            assert_eq!(n, 1, "{}", row.template);
            assert!(!out.contains("asm") && !out.contains('{') || row.replacement.contains('{') && !out.contains("{0}"), "{}: {out}", row.template);
            for k in 0..operands {
                assert!(!row.replacement.contains(&format!("{{{k}}}")) || out.contains(&format!("x{k}")), "{}: {out}", row.template);
            }
        }
    }

    #[test]
    fn nvidia_only_instructions_are_refused_with_their_cause() {
        let src = "asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %0, 0; @p cp.async.cg.shared.global [%1], [%2], %3; }\" :: \"r\"(a), \"r\"(b), \"l\"(c), \"n\"(16));\n";
        let err = run(apply, src).unwrap_err();
        assert!(matches!(err, TranslateError::NvidiaOnly { .. }), "{err}");
        assert!(err.to_string().contains("NVIDIA-only: sm_80 asynchronous"), "{err}");
        let err = run(apply, "asm volatile(\"elect.sync %0|%1, %2;\" : \"=r\"(a), \"=r\"(b) : \"r\"(m));\n").unwrap_err();
        assert!(err.to_string().contains("warp leader election"), "{err}");
        // unknown but not listed: no rule
        let err = run(apply, "asm(\"bfind.u32 %0, %1;\" : \"=r\"(a) : \"r\"(b));\n").unwrap_err();
        assert!(matches!(err, TranslateError::Unsupported { .. }), "{err}");
    }
}
