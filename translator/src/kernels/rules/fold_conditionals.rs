//! Rule `fold-conditionals`: resolves preprocessor branches whose condition
//! is known on AMD, in the manner of `unifdef`.
//!
//! After `arch-guards` and `toolkit-version`, many conditions are constants
//! (`#if 0`, `#if 1 && 1`), and some macros (`TURING_MMA_AVAILABLE`, ...) are
//! only ever defined inside branches that are now dead. Dead branches (where
//! the NVIDIA-only code, inline PTX included, lives) are removed; live
//! constant branches lose their directives; branches that depend on anything
//! unknown (an AMD arch macro, a build flag) are kept exactly.

use std::collections::BTreeSet;

use super::pp_expr::{evaluate_known, Known};
use super::tokens::tokens_from;
use super::{TreeFacts, Unit};
use crate::lexer::{line_views, LineView, Token, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, facts: &TreeFacts) -> Result<usize, TranslateError> {
    let mut out = Vec::with_capacity(unit.tokens.len());
    let folded = fold(&unit.path, &unit.tokens, Known { undefined: &facts.never_defined, defined: &BTreeSet::new() }, |kept| match kept {
        Kept::Line(line) => out.extend_from_slice(line.tokens),
        Kept::New(tokens) => out.extend(tokens),
    })?;
    unit.tokens = out;
    Ok(folded)
}

/// Macros defined somewhere in the tree, but nowhere once every file is
/// folded: on AMD they are never defined. Computed to a fixpoint, since
/// folding with more knowledge can kill more definitions.
pub fn never_defined_macros(units: &[Unit]) -> BTreeSet<String> {
    let all_defined: BTreeSet<String> = units.iter().flat_map(|u| defined_macros(&u.tokens)).collect();
    let mut never = BTreeSet::new();
    loop {
        let mut live = BTreeSet::new();
        for u in units {
            let mut defined = Vec::new();
            let folded = fold(&u.path, &u.tokens, Known { undefined: &never, defined: &BTreeSet::new() }, |kept| {
                if let Kept::Line(line) = kept {
                    defined.extend(defined_name(line));
                }
            });
            match folded {
                Ok(_) => live.extend(defined),
                // a file whose conditionals are malformed keeps every definition
                Err(_) => live.extend(defined_macros(&u.tokens)),
            }
        }
        let next: BTreeSet<String> = all_defined.difference(&live).cloned().collect();
        if next == never {
            return never;
        }
        never = next;
    }
}

fn defined_macros(tokens: &[Token]) -> Vec<String> {
    line_views(tokens).filter_map(defined_name).collect()
}

/// The macro a `#define` line defines.
fn defined_name(line: LineView<'_>) -> Option<String> {
    if line.directive() != Some("define") {
        return None;
    }
    line.directive_body().iter().find(|t| !t.is_trivia()).filter(|t| t.kind == TokenKind::Ident).map(|t| t.text.to_string())
}

/// What [`fold`] keeps, in order: a line of the input as it is, or new tokens
/// (a retitled or added directive).
pub(super) enum Kept<'t> {
    Line(LineView<'t>),
    New(Vec<Token>),
}

/// One open `#if` group.
struct Group {
    /// The enclosing text is dead: everything in this group is dropped.
    outer_dead: bool,
    /// An `#if`/`#elif` line of this group was kept in the output.
    opened: bool,
    /// A branch known to be taken has been seen: later branches are dead.
    taken: bool,
    /// The current branch is live.
    live: bool,
}

/// Resolves the known conditionals of `tokens`, handing what is kept to `keep`
/// in order; returns how many conditions were resolved.
pub(super) fn fold<'t>(
    path: &str,
    tokens: &'t [Token],
    known: Known<'_>,
    mut keep: impl FnMut(Kept<'t>),
) -> Result<usize, TranslateError> {
    let mut stack: Vec<Group> = Vec::new();
    let mut folded = 0;
    // the line of the last token kept: where an unterminated `#if` is reported
    let mut last_line = 1;
    let live = |stack: &Vec<Group>| stack.last().is_none_or(|g| g.live);
    for line in line_views(tokens) {
        let at = line.line();
        let mut out = |kept: Kept<'t>| {
            let last = match &kept {
                Kept::Line(l) => l.tokens.last(),
                Kept::New(t) => t.last(),
            };
            last_line = last.map_or(last_line, |t| t.line);
            keep(kept)
        };
        match line.directive() {
            Some(d @ ("if" | "ifdef" | "ifndef")) => {
                let outer_dead = !live(&stack);
                let value = if outer_dead { Some(0) } else { condition(d, line, known) };
                let mut g = Group { outer_dead, opened: false, taken: false, live: false };
                match value {
                    _ if outer_dead => {}
                    Some(0) => folded += 1,
                    Some(_) => {
                        g.taken = true;
                        g.live = true;
                        folded += 1;
                    }
                    None => {
                        g.opened = true;
                        g.live = true;
                        out(Kept::Line(line));
                    }
                }
                stack.push(g);
            }
            Some("elif") => {
                let g = stack.last_mut().ok_or_else(|| unbalanced(path, at, "#elif"))?;
                g.live = false;
                if g.outer_dead || g.taken {
                    continue;
                }
                match condition("if", line, known) {
                    Some(0) => folded += 1,
                    Some(_) => {
                        g.taken = true;
                        g.live = true;
                        folded += 1;
                        if g.opened {
                            out(Kept::New(tokens_from("#else\n", at)));
                        }
                    }
                    None => {
                        g.live = true;
                        if g.opened {
                            out(Kept::Line(line));
                        } else {
                            g.opened = true;
                            out(Kept::New(retitle(line, "if")));
                        }
                    }
                }
            }
            Some("else") => {
                let g = stack.last_mut().ok_or_else(|| unbalanced(path, at, "#else"))?;
                g.live = !g.outer_dead && !g.taken;
                if g.live && g.opened {
                    out(Kept::Line(line));
                }
                g.taken = true;
            }
            Some("endif") => {
                let g = stack.pop().ok_or_else(|| unbalanced(path, at, "#endif"))?;
                if g.opened && !g.outer_dead {
                    out(Kept::Line(line));
                }
            }
            _ => {
                if live(&stack) {
                    out(Kept::Line(line));
                }
            }
        }
    }
    if !stack.is_empty() {
        return Err(unbalanced(path, last_line, "#if without #endif"));
    }
    Ok(folded)
}

fn condition(directive: &str, line: LineView<'_>, known: Known<'_>) -> Option<i64> {
    let body = line.directive_body();
    match directive {
        "ifdef" | "ifndef" => {
            let name = body.iter().find(|t| !t.is_trivia())?;
            let defined = if known.undefined.contains(name.text.as_str()) {
                false
            } else if known.defined.contains(name.text.as_str()) {
                true
            } else {
                return None;
            };
            Some((defined == (directive == "ifdef")) as i64)
        }
        _ => evaluate_known(body, known),
    }
}

/// The same directive line with its name replaced (`#elif X` → `#if X`).
fn retitle(line: LineView<'_>, name: &str) -> Vec<Token> {
    let mut toks = line.tokens.to_vec();
    if let Some(t) = toks.iter_mut().filter(|t| !t.is_trivia()).nth(1) {
        t.text = name.into();
    }
    toks
}

fn unbalanced(path: &str, line: u32, what: &str) -> TranslateError {
    TranslateError::unsupported(path, line, what, "unbalanced preprocessor conditional")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::{run, run_with};
    use crate::lexer::lex;

    #[test]
    fn constant_branches_are_resolved() {
        let src = "a\n#if 1\nb\n#else\nc\n#endif\n#if 0\nd\n#elif X\ne\n#elif 1\nf\n#else\ng\n#endif\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(out, "a\nb\n#if X\ne\n#else\nf\n#endif\n");
        assert_eq!(n, 3);
    }

    #[test]
    fn unknown_conditions_are_kept_exactly() {
        let src = "#if defined(RDNA3) // c\nx\n#elif FOO\ny\n#else\nz\n#endif\n";
        assert_eq!(run(apply, src).unwrap().0, src);
    }

    #[test]
    fn nested_groups_inside_dead_branches_vanish() {
        let src = "#if 0\n#ifdef A\nx\n#else\ny\n#endif\n#endif\nz\n";
        assert_eq!(run(apply, src).unwrap().0, "z\n");
    }

    #[test]
    fn never_defined_macros_fold_ifdefs() {
        let facts = TreeFacts { never_defined: ["MMA".to_string()].into(), ..Default::default() };
        let src = "#ifdef MMA\nasm(\"x\");\n#else\nok();\n#endif\n";
        assert_eq!(run_with(apply, src, &facts).unwrap().0, "ok();\n");
    }

    #[test]
    fn macros_defined_only_in_dead_branches_are_never_defined() {
        let units = vec![
            Unit { path: "a.cuh".into(), tokens: lex("#if 0\n#define MMA\n#endif\n#if 1\n#define FP16\n#endif\n#define LDM_FROM_MMA\n").tokens },
            Unit { path: "b.cu".into(), tokens: lex("#ifdef MMA\n#define DEEP\n#endif\n").tokens },
        ];
        let never = never_defined_macros(&units);
        assert_eq!(never.into_iter().collect::<Vec<_>>(), ["DEEP", "MMA"]);
    }

    #[test]
    fn unbalanced_conditionals_are_errors() {
        assert!(run(apply, "#endif\n").is_err());
        assert!(run(apply, "#if X\n").is_err());
    }
}
