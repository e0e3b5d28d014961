//! Reads two runs of one example (its stdout; A then B: the CUDA build then the ROCm build, or
//! a CPU run then a GPU run) and says whether they agree, and how fast each ran, from what
//! the unchanged examples print:
//!
//! - `tokens`: the generated words (`t0000`.. and the special words; see tokenizer.rs), in
//!   order; agreement = identical sequences (the first `skip` words of each run are the echoed
//!   prompt: `A:B` when only the first run echoes it, as the one-process `llama` on the CPU
//!   beside `llama_multiprocess`, which prints the generated words only).
//! - `tensor`: the first tensor the example prints (candle's Display: 4 decimals); agreement
//!   = same shape and every value within `atol` (the printed rounding, 5e-5 a side, plus
//!   the dtype's own tolerance). `last-tensor`: the same for the last tensor it prints (a
//!   custom op's output, printed after its input).
//! - `top5`: the `class: 12.34%` lines; agreement = same classes in the same order and every
//!   probability within `atol` percentage points.
//!
//! Speeds: `N tokens generated ... X token/s` (the generation rate, prompt excluded), else
//! the median of the `Took D` lines (ms), else none (the run script's wall time remains).

use anyhow::{bail, Context, Result};

use crate::tokenizer::SPECIALS;

pub struct Outcome {
    pub agree: bool,
    pub agreement: String,
}

fn words(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    'scan: while i < b.len() {
        for s in SPECIALS {
            if text[i..].starts_with(s) {
                out.push(s.to_string());
                i += s.len();
                continue 'scan;
            }
        }
        if b[i] == b't' && i + 5 <= b.len() && b[i + 1..i + 5].iter().all(u8::is_ascii_digit) {
            out.push(text[i..i + 5].to_string());
            i += 5;
            continue;
        }
        i += 1;
    }
    out
}

/// `SKIP` (both runs) or `A:B` (A words of the first run, B of the second).
pub fn skips(param: Option<&str>) -> Result<(usize, usize)> {
    let Some(p) = param else { return Ok((0, 0)) };
    let parse = |s: &str| s.parse::<usize>().with_context(|| format!("SKIP {p:?}: a number or A:B"));
    match p.split_once(':') {
        Some((a, b)) => Ok((parse(a)?, parse(b)?)),
        None => parse(p).map(|n| (n, n)),
    }
}

pub fn tokens(cuda: &str, rocm: &str, (skip_a, skip_b): (usize, usize)) -> Result<Outcome> {
    let (c, r) = (words(cuda), words(rocm));
    let (c, r) = (&c[skip_a.min(c.len())..], &r[skip_b.min(r.len())..]);
    if c.is_empty() {
        bail!("the first run generated no word");
    }
    let same = c.iter().zip(r).take_while(|(a, b)| a == b).count();
    let agree = same == c.len() && c.len() == r.len();
    let agreement = if agree {
        format!("{}/{} generated tokens identical", same, c.len())
    } else {
        format!(
            "first {} of {}/{} generated tokens identical; first difference at {}: {} vs {}",
            same, c.len(), r.len(), same,
            c.get(same).map_or("(end)", |s| s.as_str()),
            r.get(same).map_or("(end)", |s| s.as_str())
        )
    };
    Ok(Outcome { agree, agreement })
}

/// The numbers and the shape line of the first printed tensor, or of the last.
fn printed_tensor(text: &str, last: bool) -> Result<(Vec<f64>, String)> {
    // a tensor's first line starts with `[`, its others with ` [`
    let before = if last { &text[..text.rfind("Tensor[").context("no `Tensor[...]` line")?] } else { text };
    let at_line_start = |i: usize| i + 1;
    let start = if last {
        before.rfind("\n[").map(at_line_start).or_else(|| text.starts_with('[').then_some(0))
    } else {
        text.starts_with('[').then_some(0).or_else(|| before.find("\n[").map(at_line_start))
    }
    .context("no printed tensor")?;
    let rest = &text[start..];
    let end = rest.find("Tensor[").context("no `Tensor[...]` line after the printed values")?;
    // `Tensor[[1, 6, 128], f32, cuda:0]`: shape and dtype, not the device (cuda:0 / rocm:0)
    let shape_line = rest[end..].lines().next().unwrap_or("");
    let inner = shape_line.trim_start_matches("Tensor[").trim_end().trim_end_matches(']');
    let shape = inner.split(", cuda").next().unwrap_or("").split(", rocm").next().unwrap_or("").to_string();
    let vals = rest[..end]
        .split(|c: char| c == ',' || c == '[' || c == ']' || c.is_whitespace())
        .filter(|s| !s.is_empty() && *s != "...")
        .map(|s| s.parse::<f64>().with_context(|| format!("not a number: {s:?}")))
        .collect::<Result<Vec<_>>>()?;
    Ok((vals, shape))
}

/// `last`: the last printed tensor instead of the first.
pub fn tensor(cuda: &str, rocm: &str, atol: f64, last: bool) -> Result<Outcome> {
    let (c, cs) = printed_tensor(cuda, last).context("first run")?;
    let (r, rs) = printed_tensor(rocm, last).context("second run")?;
    if cs != rs || c.len() != r.len() {
        return Ok(Outcome { agree: false, agreement: format!("shapes differ: {cs} ({} values) vs {rs} ({} values)", c.len(), r.len()) });
    }
    let max_abs = c.iter().zip(&r).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let scale = c.iter().map(|a| a.abs()).fold(0.0, f64::max);
    let agree = max_abs <= atol;
    Ok(Outcome {
        agree,
        agreement: format!("{} values ({}): max abs diff {:.1e} (largest abs value {:.3}, tolerance {:.0e})",
            c.len(), cs, max_abs, scale, atol),
    })
}

fn classes(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_end();
            let pct = l.strip_suffix('%')?;
            let (name, p) = pct.rsplit_once(": ")?;
            Some((name.trim().to_string(), p.trim().parse().ok()?))
        })
        .collect()
}

pub fn top5(cuda: &str, rocm: &str, atol: f64) -> Result<Outcome> {
    let (c, r) = (classes(cuda), classes(rocm));
    if c.is_empty() {
        bail!("the first run printed no `class: p%` line");
    }
    let same_order = c.len() == r.len() && c.iter().zip(&r).all(|(a, b)| a.0 == b.0);
    let max_abs = c.iter().zip(&r).map(|(a, b)| (a.1 - b.1).abs()).fold(0.0, f64::max);
    let agree = same_order && max_abs <= atol;
    let top = c.first().map(|(n, p)| format!("{} {p:.2}%", n.split(',').next().unwrap_or(n))).unwrap_or_default();
    Ok(Outcome {
        agree,
        agreement: format!("top-{} classes {} order, probabilities max abs diff {:.2} points (top: {top})",
            c.len(), if same_order { "in the same" } else { "NOT in the same" }, max_abs),
    })
}

/// (value, unit) of a run's own speed report.
pub fn speed(text: &str) -> Option<(f64, &'static str)> {
    for l in text.lines() {
        if let Some(i) = l.find(" tokens generated") {
            let rate = l[i..].split(|c: char| !(c.is_ascii_digit() || c == '.')).find(|s| !s.is_empty())?;
            return Some((rate.parse().ok()?, "tokens/s"));
        }
    }
    let mut took: Vec<f64> = text.lines().filter_map(|l| l.strip_prefix("Took ")).filter_map(duration_ms).collect();
    if took.is_empty() {
        return None;
    }
    took.sort_by(f64::total_cmp);
    Some((took[took.len() / 2], "ms"))
}

/// Rust's Debug of a Duration: 12.3ms, 1.02s, 950.1µs, 800ns.
fn duration_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    for (unit, f) in [("ms", 1.0), ("µs", 1e-3), ("ns", 1e-6), ("s", 1e3)] {
        if let Some(v) = s.strip_suffix(unit) {
            return v.parse::<f64>().ok().map(|v| v * f);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_spaced_and_unspaced_text() {
        assert_eq!(words("t0001 t0002t0003</s>x t12"), ["t0001", "t0002", "t0003", "</s>"]);
    }

    #[test]
    fn tensors_compare_within_tolerance() {
        let a = "x\n[[ 0.1000, -0.2000],\n [ 1.0000, 2.0000]]\nTensor[[2, 2], f32, cuda:0]\n";
        let b = "x\n[[ 0.1001, -0.2000],\n [ 1.0000, 2.0000]]\nTensor[[2, 2], f32, rocm:0]\n";
        assert!(tensor(a, b, 2e-4, false).unwrap().agree);
        assert!(!tensor(a, b, 5e-5, false).unwrap().agree);
    }

    #[test]
    fn the_last_tensor_is_a_custom_ops_output() {
        let input = "[[0., 1.],\n [2., 3.]]\nTensor[[2, 2], f32, cuda:0]\n";
        let a = format!("{input}[[0.0000, 1.4142],\n [0.7845, 1.1767]]\nTensor[[2, 2], f32, cuda:0]\n");
        let b = format!("{input}[[0.0000, 1.4142],\n [0.7845, 1.1768]]\nTensor[[2, 2], f32, rocm:0]\n");
        assert!(tensor(&a, &b, 2e-4, true).unwrap().agree);
        assert!(!tensor(&a, &b, 5e-5, true).unwrap().agree);
        // the first tensor, the input, is the same on both
        assert!(tensor(&a, &b, 5e-5, false).unwrap().agree);
    }

    #[test]
    fn speeds() {
        assert_eq!(speed(" 99 tokens generated: 12.50 token/s"), Some((12.5, "tokens/s")));
        assert_eq!(speed("\n7 tokens generated (3.25 token/s)"), Some((3.25, "tokens/s")));
        assert_eq!(speed("Took 2ms\nTook 1.5ms\nTook 900µs"), Some((1.5, "ms")));
    }
}
