//! BENCHMARKS.md's flash-attention sections, from the four files bench/flash-attn/run.sh
//! writes on the GPU machine: each side's error table (`flash-attn-errors-{cuda,rocm}.tsv`:
//! max |flash - f32 CPU reference| per accuracy case) and speed table
//! (`flash-attn-speed-{cuda,rocm}.tsv`: candle-flash-attn and the unfused path per
//! configuration). cuda = stock candle-flash-attn (Dao's kernels), rocm = ours through
//! hip-on-cuda.

use super::results::{fmt3, Table};
use super::table::{markdown_table, notes};
use anyhow::Result;
use std::fmt::Write;
use std::path::Path;

const COMMAND: &str = "the GPU machine: bench/flash-attn/run.sh (built by cargo xtask gpu-program flash-attn)";
/// The bounds: our error within 1.5x Dao's; ours at least 2x the unfused path from 2k.
const ERROR_RATIO_TARGET: f64 = 1.5;
/// Our other builds (bench/flash-attn/run.sh VARIANTS), each a column of the error table when
/// its file `flash-attn-errors-rocm-VARIANT.tsv` is there: (variant, column heading).
const VARIANTS: &[(&str, &str)] = &[
    ("gfx1100", "ours, RDNA3 WMMA emulated"),
    ("gfx1201", "ours, RDNA4 WMMA emulated"),
    ("portable", "ours, portable tiles"),
];
const UNFUSED_SPEEDUP_TARGET: f64 = 2.0;

pub fn section(md: &mut String, results: &Path) -> Result<()> {
    md.push_str("## Flash attention: errors, ours and Dao's\n\n");
    let load = |name: &str| super::provenance::read_for_report(&results.join(name));
    match (load("flash-attn-errors-cuda.tsv")?, load("flash-attn-errors-rocm.tsv")?) {
        (Some(cuda), Some(rocm)) => {
            let mut variants = Vec::new();
            for (v, heading) in VARIANTS {
                if let Some(t) = load(&format!("flash-attn-errors-rocm-{v}.tsv"))? {
                    variants.push((*heading, t));
                }
            }
            errors(md, &cuda, &rocm, &variants)?
        }
        _ => writeln!(md, "Not measured yet ({COMMAND}).\n")?,
    }
    md.push_str("## Flash attention: speed, ours, Dao's and the unfused path\n\n");
    match (load("flash-attn-speed-cuda.tsv")?, load("flash-attn-speed-rocm.tsv")?) {
        (Some(cuda), Some(rocm)) => speed(md, &cuda, &rocm)?,
        _ => writeln!(md, "Not measured yet ({COMMAND}).\n")?,
    }
    Ok(())
}

/// Each side's note lines (GPU, backend, device).
fn side_notes(md: &mut String, cuda: &Table, rocm: &Table) -> Result<()> {
    md.push_str("Dao's side:\n");
    notes(md, cuda)?;
    md.push_str("Our side:\n");
    notes(md, rocm)
}

/// A number cell, NaN when empty or not a number.
fn num(s: &str) -> f64 {
    s.trim().parse().unwrap_or(f64::NAN)
}

fn errors(md: &mut String, cuda: &Table, rocm: &Table, variants: &[(&str, Table)]) -> Result<()> {
    writeln!(md, "From `bench/results/flash-attn-errors-{{cuda,rocm}}.tsv`, written by {COMMAND}. Every accuracy case of `bench/fixtures/src/attention.rs` (the ROCm-vs-CPU test's cases), the same inputs on both sides: max |flash attention - f32 reference| (the reference: Candle's unfused attention in f32 on the CPU). Dao = stock candle-flash-attn 0.11.1 on Candle's CUDA backend; ours = generated/candle-flash-attn over candle-rocm's `run_mha` through hip-on-cuda (candle_wmma's tiles on NVIDIA's tensor cores, `mma.sync`). Target: ours within {ERROR_RATIO_TARGET}x Dao's (where Dao's error is below the output's rounding, the ratio says little: the bound column is 4x half an ulp of the dtype). The other columns of ours, from `flash-attn-errors-rocm-VARIANT.tsv` (run.sh VARIANTS, the same cases on the same GPU): the kernels built as gfx1100 / gfx1201 (`hip-on-cuda/build-kernels.sh AMD_ARCH`: the RDNA3 / RDNA4 WMMA instructions and operand layouts, emulated on NVIDIA warps) and with candle_wmma's portable shuffles (`CANDLE_HIP_NO_WMMA_MATRIX_CORES`: the path of RDNA2 and HIP 5).\n")?;
    side_notes(md, cuda, rocm)?;
    let (case, err, bound, error) = (rocm.column("case")?, rocm.column("max_err")?, rocm.column("bound")?, rocm.column("error")?);
    let dao = CaseErrors::of(cuda)?;
    let others = variants.iter().map(|(_, t)| CaseErrors::of(t)).collect::<Result<Vec<_>>>()?;
    let cell = |v: f64, e: &str| if v.is_finite() { format!("{v:.2e}") } else if e.is_empty() { "NA".into() } else { format!("error: {e}") };
    let mut rows = Vec::new();
    let mut over = 0;
    let mut variants_over = vec![0; variants.len()];
    for r in &rocm.rows {
        let ours = num(&r[err]);
        let (theirs, their_error) = dao.at(&r[case]);
        let ratio = ours / theirs;
        if ratio > ERROR_RATIO_TARGET {
            over += 1;
        }
        let mut row = vec![r[case].clone(), cell(ours, &r[error]), cell(theirs, their_error), if ratio.is_finite() { fmt3(ratio) } else { "NA".into() }];
        for (other, n_over) in others.iter().zip(&mut variants_over) {
            let (value, value_error) = other.at(&r[case]);
            if !(value / theirs <= ERROR_RATIO_TARGET) {
                *n_over += 1;
            }
            row.push(cell(value, value_error));
        }
        row.push(r[bound].clone());
        rows.push(row);
    }
    write!(md, "{} cases; ours above {ERROR_RATIO_TARGET}x Dao's: {over}", rows.len())?;
    for ((heading, _), n) in variants.iter().zip(&variants_over) {
        write!(md, "; {heading}: {n} above (or missing)")?;
    }
    md.push_str(".\n\n");
    let mut header = vec!["case", "ours", "Dao", "ours / Dao"];
    header.extend(variants.iter().map(|(h, _)| *h));
    header.push("bound");
    markdown_table(md, &header, &rows)
}

/// One error table's columns, looked up once: each case's max error and error message.
struct CaseErrors<'a> {
    table: &'a Table,
    case: usize,
    err: usize,
    error: usize,
}

impl<'a> CaseErrors<'a> {
    fn of(table: &'a Table) -> Result<Self> {
        Ok(Self { table, case: table.column("case")?, err: table.column("max_err")?, error: table.column("error")? })
    }

    /// The case's max error (NaN where the table has no such case) and error message.
    fn at(&self, case: &str) -> (f64, &'a str) {
        match self.table.rows.iter().find(|r| r[self.case] == case) {
            Some(r) => (num(&r[self.err]), r[self.error].as_str()),
            None => (f64::NAN, ""),
        }
    }
}

fn speed(md: &mut String, cuda: &Table, rocm: &Table) -> Result<()> {
    writeln!(md, "From `bench/results/flash-attn-speed-{{cuda,rocm}}.tsv`, written by {COMMAND}. Forward time (median call, each followed by a synchronize), f16, h 32, h_k 8; prefill: seqlen_q = seqlen_k; decode: one query per sequence over paged K/V (blocks of 256). Dao = stock candle-flash-attn on Candle's CUDA backend (tensor cores); ours = our `run_mha` through hip-on-cuda (candle_wmma's tiles on NVIDIA's tensor cores, `mma.sync`, as AMD's take MFMA / WMMA); unfused = matmul, softmax, matmul through the generated ROCm backend (rocBLAS forwarded to cuBLAS). Working set: the tensors alive at the path's peak, computed from the shapes (not measured). Targets: ours at least {UNFUSED_SPEEDUP_TARGET}x the unfused path from 2k; flash attention runs where the unfused path does not (out of memory, or past 2^31 elements in its score tensor).\n")?;
    side_notes(md, cuda, rocm)?;
    let cell = |t: &Table, config: &str, path: &str, column: &str| -> Result<String> {
        let (c, p, v, e) = (t.column("config")?, t.column("path")?, t.column(column)?, t.column("error")?);
        Ok(match t.rows.iter().find(|r| r[c] == config && r[p] == path) {
            Some(r) if !r[v].is_empty() => r[v].clone(),
            Some(r) if !r[e].is_empty() => if r[e].to_lowercase().contains("out of memory") { "out of memory".into() } else { format!("error: {}", r[e].chars().take(48).collect::<String>()) },
            _ => "NA".into(),
        })
    };
    let config = rocm.column("config")?;
    let mut configs: Vec<&str> = Vec::new();
    for r in &rocm.rows {
        if !configs.contains(&r[config].as_str()) {
            configs.push(&r[config]);
        }
    }
    let mut rows = Vec::new();
    let (mut from_2k, mut at_target) = (0, 0);
    for c in configs {
        let (ours, dao, unfused) = (cell(rocm, c, "flash", "ms")?, cell(cuda, c, "flash", "ms")?, cell(rocm, c, "unfused", "ms")?);
        let ratio = |a: &str, b: &str| {
            let r = num(a) / num(b);
            if r.is_finite() { fmt3(r) } else { "NA".into() }
        };
        // prefill from 2k keys: ours against the unfused path (a failed unfused run counts for ours)
        if c.starts_with("prefill") && !c.contains(" k512 ") {
            from_2k += 1;
            if num(&ours).is_finite() && (num(&unfused) / num(&ours) >= UNFUSED_SPEEDUP_TARGET || !num(&unfused).is_finite()) {
                at_target += 1;
            }
        }
        rows.push(vec![
            c.to_string(),
            ours.clone(),
            cell(rocm, c, "flash", "tflops")?,
            dao.clone(),
            unfused.clone(),
            ratio(&unfused, &ours),
            ratio(&dao, &ours),
            format!("{} / {}", cell(rocm, c, "flash", "working_mib")?, cell(rocm, c, "unfused", "working_mib")?),
        ]);
    }
    writeln!(md, "Prefill from 2k keys: ours at least {UNFUSED_SPEEDUP_TARGET}x the unfused path (or running where it fails) in {at_target} of {from_2k} configurations.\n")?;
    markdown_table(md, &["config", "ours ms", "ours TFLOP/s", "Dao ms", "unfused ms", "unfused / ours", "Dao / ours", "working set MiB (flash / unfused)"], &rows)
}
