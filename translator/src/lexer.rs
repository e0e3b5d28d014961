//! A small C++ lexer: enough of the language to rewrite CUDA sources safely.
//!
//! It understands comments, string and character literals (with prefixes and
//! raw strings), numbers, identifiers, punctuators, preprocessor lines and
//! backslash line continuations. It never fails: malformed input (an
//! unterminated comment or literal, a stray backslash) still becomes tokens,
//! and the problem is recorded in [`Lexed::problems`]. Concatenating the token
//! texts always gives back the input exactly.

use compact_str::CompactString;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Spaces and tabs (and form feeds); never a newline.
    Space,
    /// One `\n` (or `\r\n`).
    Newline,
    /// A backslash followed by a newline: the logical line goes on.
    Continuation,
    LineComment,
    BlockComment,
    Ident,
    Number,
    /// A string literal, including any prefix (`u8"..."`, `R"x(...)x"`).
    Str,
    /// A character literal, including any prefix.
    Char,
    Punct,
    /// A byte that starts no token (a stray backslash, `@`, `$`, ...).
    Other,
}

/// One token: its kind, its exact text and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    /// Inline (no allocation) up to 24 bytes: nearly every token. Tokens are cloned,
    /// moved and dropped many times per file, so this is where regen's kernel step
    /// spent most of its time with a `String`.
    pub text: CompactString,
    pub line: u32,
}

impl Token {
    pub fn new(kind: TokenKind, text: impl Into<CompactString>, line: u32) -> Self {
        Token { kind, text: text.into(), line }
    }

    /// Whitespace, newlines, continuations and comments: tokens a rewrite skips over.
    pub fn is_trivia(&self) -> bool {
        matches!(
            self.kind,
            TokenKind::Space | TokenKind::Newline | TokenKind::Continuation | TokenKind::LineComment | TokenKind::BlockComment
        )
    }

    pub fn is_ident(&self, name: &str) -> bool {
        self.kind == TokenKind::Ident && self.text == name
    }

    pub fn is_punct(&self, p: &str) -> bool {
        self.kind == TokenKind::Punct && self.text == p
    }
}

/// A problem found while lexing; the tokens are still complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexProblem {
    pub line: u32,
    pub what: &'static str,
}

#[derive(Debug, Clone, Default)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub problems: Vec<LexProblem>,
}

/// Punctuators, longest first so that the first match is the longest.
const PUNCTUATORS: &[&str] = &[
    "<<=", ">>=", "...", "->*", "<=>", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "##", ".*", "{", "}", "[", "]", "(", ")", ";", ":", "?", ".", "+", "-", "*", "/", "%", "^", "&", "|", "~",
    "!", "=", "<", ">", ",", "#",
];

/// Literal prefixes that may stand directly before a quote.
const LITERAL_PREFIXES: &[&str] = &["u8R", "uR", "UR", "LR", "R", "u8", "u", "U", "L"];

/// Lexes `src` into tokens. Total: never panics, whatever the input.
pub fn lex(src: &str) -> Lexed {
    Lexer { src, pos: 0, line: 1, out: Lexed::default() }.run()
}

/// Joins tokens back into text.
pub fn render(tokens: &[Token]) -> String {
    tokens.iter().map(|t| t.text.as_str()).collect()
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: u32,
    out: Lexed,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn push(&mut self, kind: TokenKind, len: usize) {
        let text = &self.src[self.pos..self.pos + len];
        let line = self.line;
        self.line += text.matches('\n').count() as u32;
        self.pos += len;
        self.out.tokens.push(Token::new(kind, text, line));
    }

    fn problem(&mut self, what: &'static str) {
        self.out.problems.push(LexProblem { line: self.line, what });
    }

    fn run(mut self) -> Lexed {
        while self.pos < self.src.len() {
            let rest = self.rest();
            let c = rest.chars().next().unwrap_or('\0');
            if rest.starts_with("\r\n") {
                self.push(TokenKind::Newline, 2);
            } else if c == '\n' {
                self.push(TokenKind::Newline, 1);
            } else if is_space_at(rest, 0) {
                let mut len = 0;
                while is_space_at(rest, len) {
                    len += 1;
                }
                self.push(TokenKind::Space, len);
            } else if c == '\\' {
                if rest[1..].starts_with('\n') {
                    self.push(TokenKind::Continuation, 2);
                } else if rest[1..].starts_with("\r\n") {
                    self.push(TokenKind::Continuation, 3);
                } else {
                    self.problem("stray backslash");
                    self.push(TokenKind::Other, 1);
                }
            } else if rest.starts_with("//") {
                self.push(TokenKind::LineComment, line_comment_len(rest));
            } else if rest.starts_with("/*") {
                match rest[2..].find("*/") {
                    Some(i) => self.push(TokenKind::BlockComment, i + 4),
                    None => {
                        self.problem("unterminated block comment");
                        self.push(TokenKind::BlockComment, rest.len());
                    }
                }
            } else if let Some((kind, len)) = self.literal(rest) {
                self.push(kind, len);
            } else if c.is_ascii_digit() || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit())) {
                self.push(TokenKind::Number, number_len(rest));
            } else if c == '_' || c.is_alphabetic() {
                let len = rest.find(|ch: char| !(ch == '_' || ch.is_alphanumeric())).unwrap_or(rest.len());
                self.push(TokenKind::Ident, len);
            } else if let Some(p) = PUNCTUATORS.iter().find(|p| rest.starts_with(**p)) {
                self.push(TokenKind::Punct, p.len());
            } else {
                self.push(TokenKind::Other, c.len_utf8());
            }
        }
        self.out
    }

    /// A string or character literal starting here, with any prefix.
    fn literal(&mut self, rest: &str) -> Option<(TokenKind, usize)> {
        let prefix = LITERAL_PREFIXES.iter().find(|p| rest.starts_with(**p) && rest[p.len()..].starts_with(['"', '\''])).copied();
        // an identifier that merely ends in a prefix letter (e.g. `uR`) is matched as a whole here only when the quote follows
        let plen = prefix.map_or(0, str::len);
        let body = &rest[plen..];
        let quote = body.chars().next()?;
        if quote != '"' && quote != '\'' {
            return None;
        }
        if prefix.is_some_and(|p| p.ends_with('R')) && quote == '"' {
            return Some((TokenKind::Str, plen + self.raw_string_len(body)));
        }
        let kind = if quote == '"' { TokenKind::Str } else { TokenKind::Char };
        let mut chars = body.char_indices().skip(1);
        while let Some((i, ch)) = chars.next() {
            match ch {
                '\\' => {
                    chars.next();
                }
                '\n' => {
                    self.problem(if quote == '"' { "unterminated string literal" } else { "unterminated character literal" });
                    return Some((kind, plen + i));
                }
                c if c == quote => return Some((kind, plen + i + 1)),
                _ => {}
            }
        }
        self.problem(if quote == '"' { "unterminated string literal" } else { "unterminated character literal" });
        Some((kind, rest.len()))
    }

    /// Length of `"delim( ... )delim"` starting at the quote.
    fn raw_string_len(&mut self, body: &str) -> usize {
        let open = body[1..].find('(').map(|i| i + 1);
        let Some(open) = open.filter(|&o| o - 1 <= 16 && !body[1..o].contains(['\n', ')', '\\', ' '])) else {
            self.problem("malformed raw string literal");
            return line_comment_len(body).max(1);
        };
        let delim = &body[1..open];
        let close = format!("){delim}\"");
        match body[open..].find(&close) {
            Some(i) => open + i + close.len(),
            None => {
                self.problem("unterminated raw string literal");
                body.len()
            }
        }
    }
}

/// Spaces, tabs, form feeds and a `\r` that does not start a `\r\n`.
fn is_space_at(rest: &str, i: usize) -> bool {
    let b = rest.as_bytes();
    match b.get(i) {
        Some(b' ' | b'\t' | b'\x0b' | b'\x0c') => true,
        Some(b'\r') => b.get(i + 1) != Some(&b'\n'),
        _ => false,
    }
}

/// A `//` comment runs to the end of the logical line: continuations extend it.
fn line_comment_len(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\n' {
            let mut j = i;
            if j > 0 && bytes[j - 1] == b'\r' {
                j -= 1;
            }
            if j > 0 && bytes[j - 1] == b'\\' {
                i += 1;
                continue;
            }
            return j;
        }
        i += 1;
    }
    bytes.len()
}

/// A pp-number: digits, letters, `_`, `.`, `'` separators and exponent signs.
fn number_len(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
            i += 1;
        } else if b == b'\'' && i + 1 < bytes.len() && bytes[i + 1].is_ascii_alphanumeric() {
            i += 2;
        } else if (b == b'+' || b == b'-') && matches!(bytes[i - 1], b'e' | b'E' | b'p' | b'P') {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// A logical source line: tokens from the start of a line up to and including
/// its newline, continuations included. Directives are lines whose first
/// non-space token is `#`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogicalLine {
    pub tokens: Vec<Token>,
}

impl LogicalLine {
    /// The line as a borrowed view (where its methods live).
    pub fn view(&self) -> LineView<'_> {
        LineView { tokens: &self.tokens }
    }
    /// See [`LineView::significant`].
    pub fn significant(&self) -> impl Iterator<Item = &Token> {
        self.view().significant()
    }
    /// See [`LineView::directive`].
    pub fn directive(&self) -> Option<&str> {
        self.view().directive()
    }
    /// See [`LineView::directive_body`].
    pub fn directive_body(&self) -> &[Token] {
        self.view().directive_body()
    }
    pub fn line(&self) -> u32 {
        self.view().line()
    }
}

/// One logical line of a token slice, borrowed: for rules that only read.
#[derive(Debug, Clone, Copy)]
pub struct LineView<'a> {
    pub tokens: &'a [Token],
}

impl<'a> LineView<'a> {
    /// The significant (non-trivia) tokens.
    pub fn significant(&self) -> impl Iterator<Item = &'a Token> {
        self.tokens.iter().filter(|t| !t.is_trivia())
    }

    /// `Some("if")` for `#if ...`, `Some("")` for a null directive, `None` for code.
    pub fn directive(&self) -> Option<&'a str> {
        let mut sig = self.significant();
        let first = sig.next()?;
        if !first.is_punct("#") {
            return None;
        }
        Some(sig.next().filter(|t| t.kind == TokenKind::Ident).map_or("", |t| t.text.as_str()))
    }

    /// The tokens after the directive name (for `#if X`, the `X` part), trivia included.
    pub fn directive_body(&self) -> &'a [Token] {
        let mut seen = 0;
        for (i, t) in self.tokens.iter().enumerate() {
            if !t.is_trivia() {
                seen += 1;
                if seen == 2 {
                    return &self.tokens[i + 1..];
                }
            }
        }
        &[]
    }

    pub fn line(&self) -> u32 {
        self.tokens.first().map_or(0, |t| t.line)
    }
}

/// The logical lines of `tokens`, borrowed (a continuation does not end a line).
pub fn line_views(tokens: &[Token]) -> impl Iterator<Item = LineView<'_>> {
    tokens.split_inclusive(|t| t.kind == TokenKind::Newline).map(|tokens| LineView { tokens })
}

/// Groups tokens into logical lines (a continuation does not end a line).
/// Each line's vector is allocated once, at its final size.
pub fn logical_lines(tokens: Vec<Token>) -> Vec<LogicalLine> {
    let lengths: Vec<usize> = line_views(&tokens).map(|l| l.tokens.len()).collect();
    let mut rest = tokens.into_iter();
    lengths.into_iter().map(|n| LogicalLine { tokens: rest.by_ref().take(n).collect() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, String)> {
        lex(src).tokens.into_iter().filter(|t| !t.is_trivia() || t.kind == TokenKind::LineComment).map(|t| (t.kind, t.text.into_string())).collect()
    }

    #[test]
    fn round_trips_exactly() {
        let src = "#include <a.h>\r\nint x = 0x1f'ffu; // c \\\n still comment\n/* b */ s = u8\"q\\\"\" R\"d(a)\"b)d\";\n";
        assert_eq!(render(&lex(src).tokens), src);
        assert!(lex(src).problems.is_empty());
    }

    #[test]
    fn identifiers_inside_comments_and_strings_are_not_identifiers() {
        let toks = kinds("a /* __CUDA_ARCH__ */ \"__nv_bfloat16\" 'x' b");
        assert_eq!(toks.iter().filter(|(k, _)| *k == TokenKind::Ident).count(), 2);
    }

    #[test]
    fn numbers_and_punctuators() {
        let toks = kinds("x<<=1.5e-3f;a->b::c");
        let texts: Vec<_> = toks.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, ["x", "<<=", "1.5e-3f", ";", "a", "->", "b", "::", "c"]);
    }

    #[test]
    fn malformed_input_is_reported_not_fatal() {
        for (src, what) in [
            ("/* open", "unterminated block comment"),
            ("\"open\n", "unterminated string literal"),
            ("'o", "unterminated character literal"),
            ("a \\ b", "stray backslash"),
        ] {
            let lexed = lex(src);
            assert_eq!(render(&lexed.tokens), src);
            assert_eq!(lexed.problems[0].what, what, "{src}");
        }
    }

    #[test]
    fn borrowed_and_owned_lines_agree() {
        let src = "#define A(x) \\\n  (x)\nint y;\n\n#if B\nz";
        let owned: Vec<Vec<Token>> = logical_lines(lex(src).tokens).into_iter().map(|l| l.tokens).collect();
        let tokens = lex(src).tokens;
        let borrowed: Vec<Vec<Token>> = line_views(&tokens).map(|l| l.tokens.to_vec()).collect();
        assert_eq!(owned, borrowed);
        assert_eq!(owned.len(), 5, "the last line has no newline");
        assert!(line_views(&[]).next().is_none());
    }

    #[test]
    fn logical_lines_follow_continuations() {
        let lines = logical_lines(lex("#define A(x) \\\n  (x)\nint y;\n").tokens);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].directive(), Some("define"));
        assert_eq!(lines[1].directive(), None);
        assert_eq!(lines[1].line(), 3);
    }
}
