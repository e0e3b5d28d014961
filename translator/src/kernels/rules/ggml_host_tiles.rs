//! Rule `ggml-host-tiles`: Candle's MMQ launchers choose tiles as ggml does.
//!
//! Upstream's `mmq_gguf/mmq_instance_*.cu` are Candle's own launchers around
//! ggml's kernels. They spell out NVIDIA's choices inline (`mmq_y = IS_NVIDIA
//! && >= VOLTA ? 128 : 64`, `nwarps = 256 / warp_size`) where ggml's host code
//! calls `get_mmq_y_host(cc)`, `mmq_get_nwarps_host(cc, warp_size)`, ...,
//! which know the AMD arches. Under ggml's HIP profile (rule
//! `ggml-amd-profile`) the device code takes ggml's AMD tiles, so the host
//! must too: each local of [`GGML_HOST_TILES`] gets ggml's function as its
//! initializer. On an NVIDIA compute capability every function returns
//! upstream's value, so the NVIDIA-hosted build is unchanged.
//!
//! `use_stream_k` stays upstream's (NVIDIA only), although ggml also takes
//! stream-k on CDNA: Candle's fixup buffer is sized for 256 multiprocessors
//! (`MAX_SMS` in fast_mmq.rs) and an MI300X has 304 compute units.
//!
//! An initializer that is not upstream's expected text is an error naming
//! file and line (upstream changed its launcher: check the row); so is an
//! instance file that lacks one of the locals.
//!
//! The launchers end their `switch (mmq_x_best)` with `default: break;`, so
//! when no tile fits the shared memory per block they launched nothing and
//! the output stayed unwritten, silently. That case becomes ggml's abort
//! ([`NO_TILE_ABORT`]), as in ggml's own launcher; a launcher without exactly
//! one such `default` is an error.

use super::tokens::{next_significant, spaced, tokens_from};
use super::{TreeFacts, Unit};
use crate::kernels::mapping::{GgmlHostTile, GGML_HOST_TILES, NO_TILE_ABORT};
use crate::lexer::Token;
use crate::TranslateError;

/// Upstream's launcher files.
const LAUNCHERS: &str = "mmq_gguf/mmq_instance_";

pub fn apply(unit: &mut Unit, _: &TreeFacts) -> Result<usize, TranslateError> {
    if !unit.path.starts_with(LAUNCHERS) {
        return Ok(0);
    }
    Ok(rewrite(unit, GGML_HOST_TILES)? + abort_without_tile(unit)?)
}

/// `default: break;` → `default:` [`NO_TILE_ABORT`]; exactly one per launcher.
fn abort_without_tile(unit: &mut Unit) -> Result<usize, TranslateError> {
    let mut found = Vec::new();
    for i in 0..unit.tokens.len() {
        if !unit.tokens[i].is_ident("default") {
            continue;
        }
        let colon = next_significant(&unit.tokens, i + 1).filter(|&j| unit.tokens[j].is_punct(":"));
        let brk = colon.and_then(|j| next_significant(&unit.tokens, j + 1)).filter(|&j| unit.tokens[j].is_ident("break"));
        if let Some((brk, semi)) = brk.and_then(|b| next_significant(&unit.tokens, b + 1).filter(|&j| unit.tokens[j].is_punct(";")).map(|j| (b, j))) {
            found.push((brk, semi));
        }
    }
    let [(start, semi)] = found[..] else {
        return Err(TranslateError::unsupported(
            &unit.path,
            0,
            "default: break;",
            format!("rule ggml-host-tiles: {} of these in the launcher, expected the one that ends the tile switch (upstream changed: check NO_TILE_ABORT)", found.len()),
        ));
    };
    let line = unit.tokens[start].line;
    unit.tokens.splice(start..=semi, tokens_from(NO_TILE_ABORT, line));
    Ok(1)
}

fn rewrite(unit: &mut Unit, rows: &[GgmlHostTile]) -> Result<usize, TranslateError> {
    let mut count = 0;
    for row in rows {
        let mut found = 0;
        let mut i = 0;
        while let Some((init_start, semicolon)) = find_initializer(&unit.tokens, row.local, i) {
            let line = unit.tokens[init_start].line;
            let upstream = spaced(&unit.tokens[init_start..semicolon]);
            if upstream != row.upstream {
                return Err(TranslateError::unsupported(
                    &unit.path,
                    line,
                    format!("const int {} = {upstream};", row.local),
                    "rule ggml-host-tiles: not the initializer this row expects (upstream changed its launcher: check the row in kernels::mapping::GGML_HOST_TILES)",
                ));
            }
            let replacement = tokens_from(row.ggml, line);
            let n = replacement.len();
            unit.tokens.splice(init_start..semicolon, replacement);
            i = init_start + n;
            found += 1;
        }
        if found == 0 {
            return Err(TranslateError::unsupported(&unit.path, 0, format!("const int {}", row.local), "rule ggml-host-tiles: this launcher does not declare the local (upstream changed: check the row)"));
        }
        count += found;
    }
    Ok(count)
}

/// From `from`: the next `const int NAME =`; returns the index of the first
/// token of its initializer and of the `;` ending it.
fn find_initializer(tokens: &[Token], name: &str, from: usize) -> Option<(usize, usize)> {
    let mut i = from;
    while i < tokens.len() {
        if tokens[i].is_ident("const") {
            let int = next_significant(tokens, i + 1).filter(|&j| tokens[j].is_ident("int"));
            let local = int.and_then(|j| next_significant(tokens, j + 1)).filter(|&j| tokens[j].is_ident(name));
            let eq = local.and_then(|j| next_significant(tokens, j + 1)).filter(|&j| tokens[j].is_punct("="));
            if let Some(eq) = eq {
                let start = next_significant(tokens, eq + 1)?;
                let semicolon = (start..tokens.len()).find(|&j| tokens[j].is_punct(";"))?;
                return Some((start, semicolon));
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer;

    const ROWS: &[GgmlHostTile] = &[GgmlHostTile { local: "nwarps", upstream: "256 / warp_size_host", ggml: "f(cc, warp_size_host)", why: "t" }];

    fn run(path: &str, src: &str) -> Result<(String, usize), TranslateError> {
        let mut unit = Unit { path: path.into(), tokens: lexer::lex(src).tokens };
        let n = if path.starts_with(LAUNCHERS) { rewrite(&mut unit, ROWS)? + abort_without_tile(&mut unit)? } else { apply(&mut unit, &TreeFacts::default())? };
        Ok((lexer::render(&unit.tokens), n))
    }

    const SWITCH: &str = "switch (x) { case 8: f(); break;\n default: break; }\n";

    #[test]
    fn initializer_becomes_ggml_call() {
        let src = format!("void g() {{\n    const int nwarps = 256 / warp_size_host;\n    use(nwarps);\n}}\nvoid h() {{ const int nwarps = 256/warp_size_host; }}\n{SWITCH}");
        let (out, n) = run("mmq_gguf/mmq_instance_q4_0.cu", &src).unwrap();
        assert_eq!(n, 3);
        assert!(out.starts_with("void g() {\n    const int nwarps = f(cc, warp_size_host);\n    use(nwarps);\n}\nvoid h() { const int nwarps = f(cc, warp_size_host); }\n"), "{out}");
    }

    #[test]
    fn a_tile_switch_without_a_fitting_tile_aborts_as_ggml() {
        let src = format!("const int nwarps = 256 / warp_size_host;\n{SWITCH}");
        let (out, _) = run("mmq_gguf/mmq_instance_q4_0.cu", &src).unwrap();
        assert!(out.ends_with(&format!("default: {NO_TILE_ABORT} }}\n")), "{out}");
        let err = run("mmq_gguf/mmq_instance_q4_0.cu", "const int nwarps = 256 / warp_size_host;\n").unwrap_err().to_string();
        assert!(err.contains("0 of these in the launcher"), "{err}");
    }

    #[test]
    fn changed_upstream_initializer_is_an_error() {
        // (the switch is checked after the rows)
        let err = run("mmq_gguf/mmq_instance_q4_0.cu", "const int nwarps = 8;\n").unwrap_err().to_string();
        assert!(err.starts_with("mmq_gguf/mmq_instance_q4_0.cu:1: const int nwarps = 8;"), "{err}");
    }

    #[test]
    fn missing_local_is_an_error() {
        let err = run("mmq_gguf/mmq_instance_q4_0.cu", "int x;\n").unwrap_err().to_string();
        assert!(err.contains("const int nwarps"), "{err}");
    }

    #[test]
    fn other_files_are_untouched() {
        let src = "const int nwarps = 256 / warp_size_host;\n";
        assert_eq!(run("mmq_gguf/mmq_gguf.cuh", src).unwrap(), (src.to_string(), 0));
    }

    #[test]
    fn table_rows_are_spaced_like_the_matcher() {
        for row in GGML_HOST_TILES {
            let tokens = lexer::lex(row.upstream).tokens;
            assert_eq!(spaced(&tokens), row.upstream, "{}", row.local);
        }
    }
}
