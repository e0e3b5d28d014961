//! The backend side of [`crate::provenance`]: a parsed file's tokens with the source lines
//! their spans carry, and the source lines of each line `prettyplease` prints.
//!
//! A token read from the source keeps its span through the passes (a renamed identifier
//! takes the span of the one it replaces); one a pass makes has the call site's span, or
//! one in a text of its own (`syn::parse_str`), and no source line. `prettyplease` prints no spans, so the printed
//! text is lexed again and its tokens are matched, in order, to the tokens it was printed
//! from (they are the same tokens, but for the few the printer adds or drops).

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use similar::{capture_diff_slices, Algorithm, DiffOp};

/// A span of the source a file was parsed from (its first token's), to tell its tokens from
/// those a pass made; `None` for a file with no tokens.
pub fn source_anchor(file: &syn::File) -> Option<Span> {
    file.to_token_stream().into_iter().next().map(|t| t.span())
}

/// `(source line, text)` of every token of `file`, delimiters included, in order; 0 for a
/// token that is not from the text `anchor` ([`source_anchor`]) is from.
pub fn tokens_of(file: &syn::File, anchor: Option<Span>) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    flatten(file.to_token_stream(), anchor, &mut out);
    out
}

fn line_of(span: Span, anchor: Option<Span>) -> u32 {
    // spans of two texts do not join
    match anchor {
        Some(a) if !span.byte_range().is_empty() && span.join(a).is_some() => span.start().line as u32,
        _ => 0,
    }
}

fn flatten(stream: TokenStream, anchor: Option<Span>, out: &mut Vec<(u32, String)>) {
    for tree in stream {
        match tree {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                    proc_macro2::Delimiter::Brace => ("{", "}"),
                    proc_macro2::Delimiter::Bracket => ("[", "]"),
                    proc_macro2::Delimiter::None => ("", ""),
                };
                if !open.is_empty() {
                    out.push((line_of(g.span_open(), anchor), open.to_string()));
                }
                flatten(g.stream(), anchor, out);
                if !close.is_empty() {
                    out.push((line_of(g.span_close(), anchor), close.to_string()));
                }
            }
            other => out.push((line_of(other.span(), anchor), other.to_string())),
        }
    }
}

/// The source lines of each line of `printed`, the text `prettyplease` printed from a file
/// whose tokens were `tokens` ([`tokens_of`]).
pub fn printed_lines(tokens: &[(u32, String)], printed: &str) -> Vec<Vec<u32>> {
    let mut lines: Vec<std::collections::BTreeSet<u32>> = vec![Default::default(); crate::provenance::line_count(printed)];
    let Ok(stream) = printed.parse::<TokenStream>() else {
        return vec![Vec::new(); lines.len()];
    };
    let mut again = Vec::new();
    let anchor = stream.clone().into_iter().next().map(|t| t.span());
    flatten(stream, anchor, &mut again);
    let before: Vec<&str> = tokens.iter().map(|(_, t)| t.as_str()).collect();
    let after: Vec<&str> = again.iter().map(|(_, t)| t.as_str()).collect();
    for op in capture_diff_slices(Algorithm::Myers, &before, &after) {
        if let DiffOp::Equal { old_index, new_index, len } = op {
            for k in 0..len {
                let (source, _) = tokens[old_index + k];
                let (printed_line, _) = again[new_index + k];
                if source != 0 {
                    if let Some(l) = lines.get_mut((printed_line as usize).wrapping_sub(1)) {
                        l.insert(source);
                    }
                }
            }
        }
    }
    lines.into_iter().map(|s| s.into_iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_lines_name_the_lines_their_tokens_were_read_from() {
        let source = "fn a() {}\n\n\nfn b(x: u32) -> u32 { x + 1 }\n";
        let mut file = syn::parse_file(source).unwrap();
        let anchor = source_anchor(&file);
        // tokens a pass makes: no source line
        file.items.push(syn::parse_quote! { fn made() {} });
        file.items.push(syn::parse_str("fn parsed() {}").unwrap());
        let tokens = tokens_of(&file, anchor);
        let printed = prettyplease::unparse(&file);
        let lines = printed_lines(&tokens, &printed);
        let of = |needle: &str| printed.lines().position(|l| l.contains(needle)).map(|i| lines[i].clone()).unwrap();
        assert_eq!(of("fn a()"), vec![1]);
        assert_eq!(of("fn b("), vec![4]);
        assert_eq!(of("x + 1"), vec![4]);
        assert_eq!(of("fn made()"), Vec::<u32>::new());
        assert_eq!(of("fn parsed()"), Vec::<u32>::new());
    }
}
