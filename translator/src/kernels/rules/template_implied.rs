//! Rule `template-implied-arguments`: a kernel parameter whose value every launch derives
//! from a template argument becomes a constant of each instance ([`TEMPLATE_IMPLIED_ARGUMENTS`]).
//!
//! Inside the kernel's body every use of the parameter reads `candle_<parameter>`, a
//! `constexpr` the rule puts first in the body, on the line of its `{` (so the file's line
//! numbers do not move): the row's value for the instance's template argument, so a
//! `switch` or `if` on it folds to the instance's own branch. The parameter stays in the
//! signature (launches and the ABI are unchanged).
//!
//! The row is checked against the file's launches: under each `<launch_condition> == N`
//! branch the kernel must be launched with the type whose value is N and passed
//! `<launch_condition>` as that parameter; every type of the row must be launched and no
//! launch may use a type the row lacks. Anything else (upstream changed its launches, or
//! the kernel) is an error naming the file, the line and the row.

use super::launch_bounds::kernel_name;
use super::tokens::{matching_close, matching_paren, next_significant, spaced, split_args, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{TemplateImpliedArgument, TEMPLATE_IMPLIED_ARGUMENTS};
use crate::lexer::{Token, TokenKind};
use crate::TranslateError;

const RULE: &str = "rule template-implied-arguments";

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let mut count = 0;
    let path = unit.path.clone();
    for row in TEMPLATE_IMPLIED_ARGUMENTS.iter().filter(|r| r.file == path) {
        let def = definition(unit, row)?;
        let param = check_launches(unit, row, &def)?;
        rewrite_definition(unit, row, &def, param)?;
        count += 1;
    }
    Ok(count)
}

fn error(unit: &Unit, line: u32, construct: impl Into<String>, what: impl std::fmt::Display) -> TranslateError {
    TranslateError::unsupported(&unit.path, line, construct, format!("{RULE}: {what} (check the row in kernels::mapping::TEMPLATE_IMPLIED_ARGUMENTS)"))
}

/// Where a kernel's definition is: token indices of its `__global__`, its parameter list's
/// `(` and `)`, its body's `{` and `}`.
struct Definition {
    global: usize,
    open: usize,
    close: usize,
    brace: usize,
    end: usize,
}

fn definition(unit: &Unit, row: &TemplateImpliedArgument) -> Result<Definition, TranslateError> {
    let tokens = &unit.tokens;
    for at in (0..tokens.len()).filter(|&i| tokens[i].is_ident("__global__")) {
        let Some((start, name, _)) = kernel_name(tokens, at) else { continue };
        if name != row.kernel {
            continue;
        }
        let bad = |what: &str| error(unit, tokens[start].line, format!("__global__ {}", row.kernel), what);
        let open = next_significant(tokens, start + 1).ok_or_else(|| bad("no parameter list"))?;
        let close = matching_paren(tokens, open).ok_or_else(|| bad("unbalanced parameter list"))?;
        let brace = next_significant(tokens, close + 1).ok_or_else(|| bad("no body"))?;
        if !tokens[brace].is_punct("{") {
            continue; // a declaration
        }
        let end = matching_close(tokens, brace).ok_or_else(|| bad("unbalanced body"))?;
        let template = (0..at).rev().find(|&i| tokens[i].is_ident("template")).filter(|&i| !tokens[i..at].iter().any(|t| t.is_punct(";") || t.is_punct("}")));
        if !template.is_some_and(|t| tokens[t..at].iter().any(|t| t.is_ident(row.template_parameter))) {
            return Err(bad(&format!("the kernel has no template parameter `{}`", row.template_parameter)));
        }
        return Ok(Definition { global: at, open, close, brace, end });
    }
    Err(error(unit, 0, format!("__global__ {}", row.kernel), "no definition of the kernel"))
}

/// Checks every launch of the kernel in the file; returns the parameter's tokens in the definition.
fn check_launches(unit: &Unit, row: &TemplateImpliedArgument, def: &Definition) -> Result<std::ops::Range<usize>, TranslateError> {
    let at = def.global;
    let tokens = &unit.tokens;
    let params = split_args(tokens, def.open, def.close);
    let index = params
        .iter()
        .position(|r| r.clone().rev().find(|&k| !tokens[k].is_trivia()).is_some_and(|k| tokens[k].is_ident(row.parameter)))
        .ok_or_else(|| error(unit, tokens[at].line, format!("__global__ {}", row.kernel), format!("no parameter `{}`", row.parameter)))?;

    let mut branch: Option<&str> = None;
    let mut launched = vec![false; row.values.len()];
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.is_ident(row.launch_condition) {
            let eq = next_significant(tokens, i + 1);
            let n = eq.filter(|&e| tokens[e].is_punct("==")).and_then(|e| next_significant(tokens, e + 1));
            if let Some(n) = n.filter(|&n| tokens[n].kind == TokenKind::Number) {
                branch = Some(tokens[n].text.as_str());
                i = n + 1;
                continue;
            }
        }
        let lt = next_significant(tokens, i + 1).filter(|&l| tokens[l].is_punct("<"));
        if !(t.is_ident(row.kernel) && i != at) || lt.is_none() {
            i += 1;
            continue;
        }
        // a launch: kernel<...><<<...>>>(args)
        let lt = lt.unwrap();
        let gt = (lt + 1..tokens.len()).find(|&k| tokens[k].kind == TokenKind::Punct && tokens[k].text.starts_with('>'));
        let construct = format!("{}<{}>", row.kernel, gt.map(|g| spaced(&tokens[lt + 1..g]).replace(" ,", ",")).unwrap_or_default());
        let bad = |what: String| error(unit, t.line, construct.clone(), what);
        let gt = gt.ok_or_else(|| bad("no end to the template arguments".into()))?;
        let types: Vec<usize> = row.values.iter().enumerate().filter(|(_, (ty, _))| tokens[lt + 1..gt].iter().any(|k| k.is_ident(ty))).map(|(v, _)| v).collect();
        let [v] = types[..] else {
            return Err(bad(format!("a launch with {} of the row's types, not one", types.len())));
        };
        let (ty, value) = row.values[v];
        if branch != Some(value) {
            return Err(bad(format!("launched with `{ty}` under `{} == {}`, the row gives it {value}", row.launch_condition, branch.unwrap_or("?"))));
        }
        let call = (gt..tokens.len()).find(|&k| tokens[k].is_punct("(")).ok_or_else(|| bad("no call arguments".into()))?;
        let call_close = matching_paren(tokens, call).ok_or_else(|| bad("unbalanced call arguments".into()))?;
        let passed = split_args(tokens, call, call_close).get(index).map(|r| spaced(&tokens[r.clone()]));
        if passed.as_deref() != Some(row.launch_condition) {
            return Err(bad(format!("passes `{}` as `{}`, not `{}`", passed.unwrap_or_default(), row.parameter, row.launch_condition)));
        }
        launched[v] = true;
        i = call_close + 1;
    }
    if let Some(v) = launched.iter().position(|l| !l) {
        return Err(error(unit, 0, format!("{}<{}>", row.kernel, row.values[v].0), "never launched in the file"));
    }
    Ok(params[index].clone())
}

/// Inserts the constant on the body's `{` line and renames the parameter's uses in the body
/// (`def` is from before the insertion: nothing before the body moves).
fn rewrite_definition(unit: &mut Unit, row: &TemplateImpliedArgument, def: &Definition, param: std::ops::Range<usize>) -> Result<(), TranslateError> {
    let Definition { brace, end, .. } = *def;
    let constant = format!("candle_{}", row.parameter);
    let ty: Vec<&str> = param.filter(|&k| !unit.tokens[k].is_trivia()).map(|k| unit.tokens[k].text.as_str()).filter(|t| *t != "const").collect();
    let ty = ty[..ty.len() - 1].join(" ");
    let mut uses = 0;
    for t in &mut unit.tokens[brace + 1..end] {
        if t.is_ident(row.parameter) {
            *t = Token::new(TokenKind::Ident, constant.as_str(), t.line);
            uses += 1;
        }
    }
    if uses == 0 {
        return Err(error(unit, unit.tokens[brace].line, format!("__global__ {}", row.kernel), format!("the body no longer reads `{}`", row.parameter)));
    }
    let choice: String = row.values.iter().map(|(t, v)| format!("std::is_same<{}, {t}>::value ? {v} : ", row.template_parameter)).collect();
    // on the `{` line: the file's lines stay where they were (compiler messages, the warning records)
    let text = format!(
        " constexpr {ty} {constant} = {choice}-1; static_assert({constant} != -1, \"{RULE}: a {} the row does not name\"); // {RULE}: {} is the value of {} at every launch; {}",
        row.template_parameter, row.parameter, row.template_parameter, row.why
    );
    let line = unit.tokens[brace].line;
    unit.tokens.splice(brace + 1..brace + 1, tokens_from(&text, line));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    const KERNEL: &str = "template <typename T, typename B>\n__global__ void k(const T* x, const int kind) {\n    decode(x, kind);\n}\n";

    fn launches(pairs: &[(&str, &str)]) -> String {
        let mut s = String::from("#define LAUNCH(T) \\\n");
        for (i, (n, ty)) in pairs.iter().enumerate() {
            let kw = if i == 0 { "if" } else { "} else if" };
            s += &format!("    {kw} (type == {n}) {{ \\\n        k<T, {ty}><<<grid, block, 0, stream>>>(x, type); \\\n");
        }
        s + "    }\n"
    }

    /// Before and after: the body reads the instance's constant; the signature is kept.
    #[test]
    fn the_parameter_becomes_the_instance_constant() {
        let src = format!("{KERNEL}{}", launches(&[("0", "block_a"), ("1", "block_b")]));
        let (out, n) = run(apply, &src).unwrap();
        assert_eq!(n, 1);
        let body = "__global__ void k(const T* x, const int kind) { constexpr int candle_kind = std::is_same<B, block_a>::value ? 0 : std::is_same<B, block_b>::value ? 1 : -1; \
                    static_assert(candle_kind != -1, \"rule template-implied-arguments: a B the row does not name\"); \
                    // rule template-implied-arguments: kind is the value of B at every launch; test row\n    decode(x, candle_kind);\n}";
        assert!(out.contains(body), "{out}");
        assert_eq!(out.lines().count(), src.lines().count(), "no line moves");
        assert!(out.contains("k<T, block_b><<<grid, block, 0, stream>>>(x, type);"), "{out}");
    }

    #[test]
    fn a_launch_that_pairs_another_value_is_an_error() {
        let src = format!("{KERNEL}{}", launches(&[("0", "block_a"), ("2", "block_b")]));
        let err = run(apply, &src).unwrap_err().to_string();
        assert!(err.contains("k<T, block_b>") && err.contains("under `type == 2`, the row gives it 1"), "{err}");
        assert!(err.starts_with("t.cu:"), "{err}");
    }

    #[test]
    fn a_type_never_launched_or_unknown_is_an_error() {
        let err = run(apply, &format!("{KERNEL}{}", launches(&[("0", "block_a")]))).unwrap_err().to_string();
        assert!(err.contains("k<block_b>") && err.contains("never launched"), "{err}");
        let src = format!("{KERNEL}{}", launches(&[("0", "block_a"), ("1", "block_b"), ("2", "block_c")]));
        let err = run(apply, &src).unwrap_err().to_string();
        assert!(err.contains("k<T, block_c>") && err.contains("0 of the row's types"), "{err}");
    }

    #[test]
    fn a_launch_passing_something_else_is_an_error() {
        let src = format!("{KERNEL}{}", launches(&[("0", "block_a"), ("1", "block_b")])).replace("(x, type); \\\n    }", "(x, 1); \\\n    }");
        let err = run(apply, &src).unwrap_err().to_string();
        assert!(err.contains("passes `1` as `kind`, not `type`"), "{err}");
    }

    #[test]
    fn a_changed_kernel_is_an_error() {
        let err = run(apply, "int x;\n").unwrap_err().to_string();
        assert!(err.starts_with("t.cu:0: __global__ k:") && err.contains("no definition"), "{err}");
        let unused = format!("{}{}", KERNEL.replace("decode(x, kind)", "decode(x)"), launches(&[("0", "block_a"), ("1", "block_b")]));
        let err = run(apply, &unused).unwrap_err().to_string();
        assert!(err.contains("no longer reads `kind`"), "{err}");
    }
}
