//! Small helpers for editing token vectors.

use crate::lexer::{self, Token, TokenKind};

/// Index of the next non-trivia token at or after `i`.
pub fn next_significant(tokens: &[Token], mut i: usize) -> Option<usize> {
    while i < tokens.len() {
        if !tokens[i].is_trivia() {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Index of the previous non-trivia token before `i`.
pub fn prev_significant(tokens: &[Token], i: usize) -> Option<usize> {
    (0..i).rev().find(|&j| !tokens[j].is_trivia())
}

/// Index of the `)` matching the `(` at `open`.
pub fn matching_paren(tokens: &[Token], open: usize) -> Option<usize> {
    matching_close(tokens, open).filter(|&j| tokens[j].is_punct(")"))
}

/// Index of the bracket (`)`, `]` or `}`) that closes the one at `open`.
pub fn matching_close(tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        if t.kind != TokenKind::Punct {
            continue;
        }
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits the tokens strictly between `open` and `close` at top-level commas.
pub fn split_args(tokens: &[Token], open: usize, close: usize) -> Vec<std::ops::Range<usize>> {
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut start = open + 1;
    for j in open + 1..close {
        let t = &tokens[j];
        if t.kind != TokenKind::Punct {
            continue;
        }
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth = depth.saturating_sub(1),
            "," if depth == 0 => {
                args.push(start..j);
                start = j + 1;
            }
            _ => {}
        }
    }
    if start < close || !args.is_empty() {
        args.push(start..close);
    }
    args
}

/// The text of `tokens`, trimmed of leading and trailing whitespace.
pub fn text_of(tokens: &[Token]) -> String {
    lexer::render(tokens).trim().to_string()
}

/// The significant tokens' text (no spaces, newlines, comments or a macro's line
/// continuations), joined by single spaces.
pub fn spaced(tokens: &[Token]) -> String {
    tokens.iter().filter(|t| !t.is_trivia()).map(|t| t.text.as_str()).collect::<Vec<_>>().join(" ")
}

/// Lexes `text` into tokens that all carry `line`.
pub fn tokens_from(text: &str, line: u32) -> Vec<Token> {
    lexer::lex(text).tokens.into_iter().map(|mut t| {
        t.line = line;
        t
    }).collect()
}
