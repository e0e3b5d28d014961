//! Where each line of a translated file came from, for `cargo xtask review`: the source
//! lines its tokens were read from, and the rules that changed those source lines.
//!
//! Both translators keep every token's source line through their rules: the lexer's
//! `line` on the kernel side, syn's spans on the backend side (a token a rule makes
//! carries the line of the one it replaces; one made from nothing carries none). A
//! [`Trace`] snapshots a file's tokens after each rule, keyed by source line: a source
//! line whose tokens differ from the snapshot before was changed by that rule.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};

static RECORDING: AtomicBool = AtomicBool::new(false);

/// From now on, translations record their [`LineProvenance`] beside their output (what they
/// write is the same either way). Off by default: it costs time `regen` does not need.
pub fn record(on: bool) {
    RECORDING.store(on, Ordering::Relaxed);
}

/// Whether translations record their provenance ([`record`]).
pub fn recording() -> bool {
    RECORDING.load(Ordering::Relaxed)
}

/// One output file's provenance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineProvenance {
    /// Per output line (index 0 is line 1): the source lines its tokens came from, sorted.
    /// Empty: the translator's own text (a provenance comment, a line a rule made from nothing).
    pub sources: Vec<Vec<u32>>,
    /// Per source line: the rules that changed it, in the order they ran.
    pub rules: BTreeMap<u32, Vec<&'static str>>,
}

impl LineProvenance {
    /// A file copied as it is: output line N is source line N, no rule changed it.
    pub fn identity(text: &str) -> Self {
        LineProvenance { sources: (1..=line_count(text) as u32).map(|l| vec![l]).collect(), rules: BTreeMap::new() }
    }

    /// `self` with `n` lines of the translator's own text in front (a provenance comment).
    pub fn after_header(mut self, n: usize) -> Self {
        self.sources.splice(0..0, std::iter::repeat_with(Vec::new).take(n));
        self
    }

    /// The rules that changed any source line of output lines `lines` (1-based, inclusive
    /// range), with how many of those source lines each changed; in name order.
    pub fn rules_on(&self, lines: std::ops::RangeInclusive<usize>) -> BTreeMap<&'static str, usize> {
        let sources: BTreeSet<u32> = lines.filter_map(|l| self.sources.get(l.wrapping_sub(1))).flatten().copied().collect();
        let mut out = BTreeMap::new();
        for s in sources {
            for rule in self.rules.get(&s).into_iter().flatten() {
                *out.entry(*rule).or_default() += 1;
            }
        }
        out
    }
}

/// How many lines `text` has (a last line without its newline counts).
pub fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// A file's tokens after each rule, as one hash per source line; line 0 holds the tokens
/// with no source line.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    last: BTreeMap<u32, u64>,
    rules: BTreeMap<u32, Vec<&'static str>>,
}

impl Trace {
    /// The tokens as read: `(source line, text)` in order.
    pub fn new<'a>(tokens: impl IntoIterator<Item = (u32, &'a str)>) -> Self {
        Trace { last: by_line(tokens), rules: BTreeMap::new() }
    }

    /// The tokens after `rule` ran: each source line whose tokens changed is `rule`'s.
    pub fn after<'a>(&mut self, rule: &'static str, tokens: impl IntoIterator<Item = (u32, &'a str)>) {
        self.after_each(tokens, |_| vec![rule]);
    }

    /// As [`Trace::after`], naming the rules of each changed line with `rules_of(line)`.
    pub fn after_each<'a>(&mut self, tokens: impl IntoIterator<Item = (u32, &'a str)>, rules_of: impl Fn(u32) -> Vec<&'static str>) {
        let now = by_line(tokens);
        let changed: BTreeSet<u32> = now.iter().filter(|(l, h)| self.last.get(l) != Some(h)).map(|(l, _)| *l).chain(self.last.keys().filter(|l| !now.contains_key(l)).copied()).collect();
        for line in changed.into_iter().filter(|&l| l != 0) {
            let entry = self.rules.entry(line).or_default();
            for rule in rules_of(line) {
                if !entry.contains(&rule) {
                    entry.push(rule);
                }
            }
        }
        self.last = now;
    }

    /// The provenance of an output whose lines hold the source lines `sources`.
    pub fn finish(self, sources: Vec<Vec<u32>>) -> LineProvenance {
        LineProvenance { sources, rules: self.rules }
    }
}

fn by_line<'a>(tokens: impl IntoIterator<Item = (u32, &'a str)>) -> BTreeMap<u32, u64> {
    let mut hashers: BTreeMap<u32, DefaultHasher> = BTreeMap::new();
    for (line, text) in tokens {
        text.hash(hashers.entry(line).or_default());
    }
    hashers.into_iter().map(|(l, h)| (l, h.finish())).collect()
}

/// The source lines of each output line, for an output that is `tokens` rendered in order
/// (`(source line, text)`; source line 0: none). A token spanning several output lines
/// (a block comment) is on each of them.
pub fn output_lines<'a>(tokens: impl IntoIterator<Item = (u32, &'a str)>) -> Vec<Vec<u32>> {
    let mut lines: Vec<BTreeSet<u32>> = vec![BTreeSet::new()];
    for (source, text) in tokens {
        let pieces = text.split('\n').count();
        for (k, piece) in text.split('\n').enumerate() {
            if source != 0 && (!piece.is_empty() || k + 1 < pieces) {
                lines.last_mut().unwrap().insert(source);
            }
            if k + 1 < pieces {
                lines.push(BTreeSet::new());
            }
        }
    }
    // the empty piece after a last newline is no line
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines.into_iter().map(|s| s.into_iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_owns_the_source_lines_it_changed() {
        let read = [(1, "int"), (1, " a;"), (2, "__nv_bfloat16"), (2, " b;")];
        let mut trace = Trace::new(read);
        trace.after("names", [(1, "int"), (1, " a;"), (2, "candle_bf16"), (2, " b;")]);
        trace.after("unchanged", [(1, "int"), (1, " a;"), (2, "candle_bf16"), (2, " b;")]);
        trace.after("fold", [(2, "candle_bf16"), (2, " b;")]);
        let p = trace.finish(vec![vec![2]]);
        assert_eq!(p.rules, BTreeMap::from([(1, vec!["fold"]), (2, vec!["names"])]));
        assert_eq!(p.rules_on(1..=1), BTreeMap::from([("names", 1)]));
    }

    #[test]
    fn output_lines_follow_newlines_inside_tokens() {
        let tokens = [(3, "a"), (3, "\n"), (0, "made"), (0, "\n"), (5, "/* x\n y */"), (6, "b"), (6, "\n")];
        assert_eq!(output_lines(tokens), vec![vec![3], vec![], vec![5], vec![5, 6]]);
    }

    #[test]
    fn a_header_shifts_the_lines() {
        let p = LineProvenance::identity("a\nb\n").after_header(1);
        assert_eq!(p.sources, vec![vec![], vec![1], vec![2]]);
    }
}
