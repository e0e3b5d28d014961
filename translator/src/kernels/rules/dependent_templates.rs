//! Rule `dependent-member-templates`: `template` before a member template of a dependent type.
//!
//! Inside a template, `vec_cast<T, U>::cast<N>(dst, src)` names the member template `cast`
//! of a type that depends on the template's parameters. C++ wants it spelled
//! `vec_cast<T, U>::template cast<N>(...)`; nvcc's front end accepts it without, clang
//! (hipcc) does not ("reference to overloaded function could not be resolved"). The rule
//! adds the keyword where the shape is unambiguous: `Name<args>::member<args>(` inside the
//! body of a template whose parameters the first argument list names.

use super::tokens::{matching_close, next_significant, prev_significant};
use super::{TreeFacts, Unit};
use crate::lexer::{Token, TokenKind};
use crate::TranslateError;

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    let scopes = template_scopes(&unit.tokens);
    let mut inserts = Vec::new();
    for (i, t) in unit.tokens.iter().enumerate() {
        if t.kind != TokenKind::Ident || !next_significant(&unit.tokens, i + 1).is_some_and(|o| unit.tokens[o].is_punct("<")) {
            continue;
        }
        let params: Vec<&str> = scopes.iter().filter(|s| s.body.contains(&i)).flat_map(|s| s.params.iter().map(String::as_str)).collect();
        if params.is_empty() {
            continue;
        }
        if let Some(member) = dependent_member_template_call(&unit.tokens, i, &params) {
            inserts.push(member);
        }
    }
    for &at in inserts.iter().rev() {
        let line = unit.tokens[at].line;
        unit.tokens.splice(at..at, [Token { kind: TokenKind::Ident, text: "template".into(), line }, Token { kind: TokenKind::Space, text: " ".into(), line }]);
    }
    Ok(inserts.len())
}

/// A template's parameter names and the token range of its declaration's body.
struct TemplateScope {
    params: Vec<String>,
    body: std::ops::Range<usize>,
}

/// Every `template <...>` header followed by a declaration with a `{ ... }` body.
fn template_scopes(tokens: &[Token]) -> Vec<TemplateScope> {
    let mut scopes = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if !t.is_ident("template") {
            continue;
        }
        let Some(open) = next_significant(tokens, i + 1).filter(|&o| tokens[o].is_punct("<")) else { continue };
        let Some(close) = matching_angle(tokens, open) else { continue };
        let params = parameter_names(&tokens[open + 1..close]);
        // the declaration's body: the first `{` before any `;` (parentheses skipped)
        let mut j = close + 1;
        let body = loop {
            let Some(k) = next_significant(tokens, j) else { break None };
            let t = &tokens[k];
            if t.is_punct(";") || t.is_punct("}") {
                break None;
            }
            if t.is_punct("(") || t.is_punct("[") {
                j = matching_close(tokens, k).map_or(tokens.len(), |c| c + 1);
                continue;
            }
            if t.is_punct("{") {
                break matching_close(tokens, k).map(|c| k..c);
            }
            j = k + 1;
        };
        if let (Some(body), false) = (body, params.is_empty()) {
            scopes.push(TemplateScope { params, body });
        }
    }
    scopes
}

/// The names a template parameter list declares: in each top-level comma-separated
/// parameter (a default value cut off), its last identifier unless that is a keyword.
fn parameter_names(tokens: &[Token]) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0i32;
    let mut last: Option<&str> = None;
    let mut in_default = false;
    for t in tokens.iter().filter(|t| !t.is_trivia()) {
        match t.text.as_str() {
            "<" | "(" | "[" | "{" => depth += 1,
            ">" | ")" | "]" | "}" => depth -= 1,
            ">>" => depth -= 2,
            "," if depth == 0 => {
                names.extend(last.take().map(String::from));
                in_default = false;
                continue;
            }
            "=" if depth == 0 => in_default = true,
            _ => {}
        }
        if depth == 0 && !in_default && t.kind == TokenKind::Ident && !matches!(t.text.as_str(), "typename" | "class" | "template" | "const" | "unsigned" | "int" | "size_t" | "bool") {
            last = Some(t.text.as_str());
        }
    }
    names.extend(last.map(String::from));
    names
}

/// Index of the `>` that closes the `<` at `open` (nested `<>`, `>>` as two; stops at `;`,
/// `{`, `}` or an unbalanced parenthesis).
fn matching_angle(tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut j = open;
    while j < tokens.len() {
        let t = &tokens[j];
        if t.kind == TokenKind::Punct {
            match t.text.as_str() {
                "<" => depth += 1,
                ">" => depth -= 1,
                ">>" => depth -= 2,
                "(" | "[" => {
                    j = matching_close(tokens, j)?;
                }
                ";" | "{" | "}" | ")" | "]" => return None,
                _ => {}
            }
            if depth <= 0 {
                return (depth == 0).then_some(j);
            }
        }
        j += 1;
    }
    None
}

/// For `Name<args>::member<args>(` starting at `name`, where `args` names one of `params`
/// and `template` is not already there: the index of `member`.
fn dependent_member_template_call(tokens: &[Token], name: usize, params: &[&str]) -> Option<usize> {
    if prev_significant(tokens, name).is_some_and(|p| tokens[p].is_punct("::") || tokens[p].is_punct(".") || tokens[p].is_punct("->")) {
        return None;
    }
    let open = next_significant(tokens, name + 1).filter(|&o| tokens[o].is_punct("<"))?;
    let close = matching_angle(tokens, open)?;
    if !tokens[open + 1..close].iter().any(|t| t.kind == TokenKind::Ident && params.contains(&t.text.as_str())) {
        return None;
    }
    let scope = next_significant(tokens, close + 1).filter(|&s| tokens[s].is_punct("::"))?;
    let member = next_significant(tokens, scope + 1).filter(|&m| tokens[m].kind == TokenKind::Ident && !tokens[m].is_ident("template"))?;
    let member_open = next_significant(tokens, member + 1).filter(|&o| tokens[o].is_punct("<"))?;
    let member_close = matching_angle(tokens, member_open)?;
    next_significant(tokens, member_close + 1).filter(|&p| tokens[p].is_punct("("))?;
    Some(member)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::rules::test_support::run;

    /// flashinfer's vec_dtypes.cuh
    #[test]
    fn member_template_of_a_dependent_type_gets_the_keyword() {
        let src = "template <typename src_float_t, typename tgt_float_t, size_t vec_size>\n\
                   __device__ void cast_from_impl(vec_t<tgt_float_t, vec_size>& dst) {\n  vec_cast<tgt_float_t, src_float_t>::cast<vec_size>(dst.ptr());\n}\n";
        let (out, n) = run(apply, src).unwrap();
        assert_eq!(n, 1);
        assert!(out.contains("  vec_cast<tgt_float_t, src_float_t>::template cast<vec_size>(dst.ptr());"), "{out}");
        // idempotent
        assert_eq!(run(apply, &out).unwrap(), (out.clone(), 0));
    }

    #[test]
    fn other_shapes_are_left_alone() {
        for src in [
            // not dependent: the arguments name no template parameter
            "template <typename T> void f() { vec_cast<float, half>::cast<4>(p); }\n",
            // not a template
            "void f() { vec_cast<float, half>::cast<4>(p); }\n",
            // a comparison, not a member template call
            "template <int N> void f() { bool b = Limits<N>::value < 3; }\n",
            // a static member function that is not a template
            "template <typename T> void f() { Traits<T>::init(p); }\n",
            // already spelled out
            "template <typename T> void f() { X<T>::template g<1>(p); }\n",
        ] {
            let (out, n) = run(apply, src).unwrap();
            assert_eq!((out.as_str(), n), (src, 0));
        }
    }

    #[test]
    fn parameter_names_are_read_off_the_header() {
        let tokens = crate::lexer::lex("typename T = float, size_t N, template <typename> class TT, typename... Rest").tokens;
        assert_eq!(parameter_names(&tokens), ["T", "N", "TT", "Rest"]);
    }
}
