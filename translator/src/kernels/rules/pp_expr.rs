//! Partial evaluation of `#if` expressions.
//!
//! Values are known integers or unknown (a macro we cannot see: a compiler
//! flag, an arch macro, a macro defined elsewhere). Unknowns propagate except
//! where the known side decides (`0 && x`, `1 || x`).

use std::collections::BTreeSet;

use crate::lexer::{Token, TokenKind};

/// Evaluates a condition; `None` when it depends on something unknown or
/// cannot be parsed (then the condition is simply kept).
#[cfg(test)]
pub fn evaluate(tokens: &[Token], never_defined: &BTreeSet<String>) -> Option<i64> {
    evaluate_known(tokens, Known { undefined: never_defined, defined: &BTreeSet::new() })
}

/// What is known of macros: those never defined, and those defined (as `1`).
#[derive(Debug, Clone, Copy)]
pub struct Known<'a> {
    pub undefined: &'a BTreeSet<String>,
    pub defined: &'a BTreeSet<String>,
}

/// [`evaluate`] with macros known to be defined as well.
pub fn evaluate_known(tokens: &[Token], known: Known<'_>) -> Option<i64> {
    let toks: Vec<&Token> = tokens.iter().filter(|t| !t.is_trivia()).collect();
    let mut p = Parser { toks, pos: 0, known };
    let v = p.ternary().ok()?;
    if p.pos != p.toks.len() {
        return None;
    }
    v
}

type Val = Option<i64>;

struct Parser<'a> {
    toks: Vec<&'a Token>,
    pos: usize,
    known: Known<'a>,
}

/// Binary operators by precedence level, lowest first.
const LEVELS: &[&[&str]] = &[&["||"], &["&&"], &["|"], &["^"], &["&"], &["==", "!="], &["<", ">", "<=", ">="], &["<<", ">>"], &["+", "-"], &["*", "/", "%"]];

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a Token> {
        self.toks.get(self.pos).copied()
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_punct(p)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn ternary(&mut self) -> Result<Val, ()> {
        let c = self.binary(0)?;
        if !self.eat("?") {
            return Ok(c);
        }
        let a = self.ternary()?;
        if !self.eat(":") {
            return Err(());
        }
        let b = self.ternary()?;
        Ok(match c {
            Some(0) => b,
            Some(_) => a,
            None => None,
        })
    }

    fn binary(&mut self, level: usize) -> Result<Val, ()> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        while let Some(op) = self.peek().filter(|t| t.kind == TokenKind::Punct && LEVELS[level].contains(&t.text.as_str())) {
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = apply_binary(&op.text, lhs, rhs);
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Val, ()> {
        let t = self.peek().ok_or(())?;
        if t.kind == TokenKind::Punct && matches!(t.text.as_str(), "!" | "-" | "+" | "~") {
            self.pos += 1;
            let v = self.unary()?;
            return Ok(v.map(|v| match t.text.as_str() {
                "!" => (v == 0) as i64,
                "-" => v.wrapping_neg(),
                "~" => !v,
                _ => v,
            }));
        }
        self.primary()
    }

    /// `defined(name)`: 0 or 1 where known.
    fn value_of_defined(&self, name: &str) -> Val {
        if self.known.undefined.contains(name) {
            Some(0)
        } else if self.known.defined.contains(name) {
            Some(1)
        } else {
            None
        }
    }

    fn primary(&mut self) -> Result<Val, ()> {
        let t = self.peek().ok_or(())?;
        self.pos += 1;
        match t.kind {
            TokenKind::Number => Ok(parse_int(&t.text)),
            TokenKind::Punct if t.text == "(" => {
                let v = self.ternary()?;
                if self.eat(")") {
                    Ok(v)
                } else {
                    Err(())
                }
            }
            TokenKind::Ident if t.text == "defined" => {
                let paren = self.eat("(");
                let name = self.peek().filter(|t| t.kind == TokenKind::Ident).ok_or(())?;
                self.pos += 1;
                if paren && !self.eat(")") {
                    return Err(());
                }
                Ok(self.value_of_defined(&name.text))
            }
            TokenKind::Ident if t.text == "true" => Ok(Some(1)),
            TokenKind::Ident if t.text == "false" => Ok(Some(0)),
            TokenKind::Ident => {
                // a function-like macro call: skip its arguments, value unknown
                if self.peek().is_some_and(|n| n.is_punct("(")) {
                    let mut depth = 0;
                    while let Some(n) = self.peek() {
                        self.pos += 1;
                        if n.is_punct("(") {
                            depth += 1;
                        } else if n.is_punct(")") {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                    }
                }
                Ok(if self.known.undefined.contains(t.text.as_str()) {
                    Some(0)
                } else if self.known.defined.contains(t.text.as_str()) {
                    Some(1)
                } else {
                    None
                })
            }
            _ => Err(()),
        }
    }
}

fn apply_binary(op: &str, a: Val, b: Val) -> Val {
    match (op, a, b) {
        ("&&", Some(0), _) | ("&&", _, Some(0)) => Some(0),
        ("||", Some(x), _) | ("||", _, Some(x)) if x != 0 => Some(1),
        (_, Some(a), Some(b)) => Some(match op {
            "||" => (a != 0 || b != 0) as i64,
            "&&" => (a != 0 && b != 0) as i64,
            "|" => a | b,
            "^" => a ^ b,
            "&" => a & b,
            "==" => (a == b) as i64,
            "!=" => (a != b) as i64,
            "<" => (a < b) as i64,
            ">" => (a > b) as i64,
            "<=" => (a <= b) as i64,
            ">=" => (a >= b) as i64,
            "<<" => a.checked_shl(b as u32)?,
            ">>" => a.checked_shr(b as u32)?,
            "+" => a.wrapping_add(b),
            "-" => a.wrapping_sub(b),
            "*" => a.wrapping_mul(b),
            "/" => a.checked_div(b)?,
            "%" => a.checked_rem(b)?,
            _ => return None,
        }),
        _ => None,
    }
}

fn parse_int(text: &str) -> Val {
    let t = text.trim_end_matches(['u', 'U', 'l', 'L']).replace('\'', "");
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') && t.chars().all(|c| c.is_ascii_digit()) {
        i64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;

    fn eval(src: &str, undefined: &[&str]) -> Val {
        let set = undefined.iter().map(|s| s.to_string()).collect();
        evaluate(&lex(src).tokens, &set)
    }

    #[test]
    fn constants_and_short_circuits() {
        assert_eq!(eval("0 >= 11080", &[]), Some(0));
        assert_eq!(eval("1 && (2 + 3 * 4 == 14)", &[]), Some(1));
        assert_eq!(eval("0 && UNKNOWN", &[]), Some(0));
        assert_eq!(eval("UNKNOWN || 1", &[]), Some(1));
        assert_eq!(eval("UNKNOWN && 1", &[]), None);
        assert_eq!(eval("defined(RDNA3)", &[]), None);
        assert_eq!(eval("defined(TURING) || defined X", &["TURING", "X"]), Some(0));
        assert_eq!(eval("!defined(TURING)", &["TURING"]), Some(1));
        assert_eq!(eval("0x10 == 16 ? 2 : 3", &[]), Some(2));
    }

    #[test]
    fn malformed_is_unknown() {
        assert_eq!(eval("(1", &[]), None);
        assert_eq!(eval("1 1", &[]), None);
        assert_eq!(eval("1 / 0", &[]), None);
    }
}
