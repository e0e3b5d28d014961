//! BENCHMARKS.md's numerics sections, from the two files bench/numerics/run.sh writes on the
//! GPU machine: the quantized-matmul error table (`qmatmul-h100.tsv`) and the teacher-forced
//! logits of the examples harness's made-up LLMs (`teacher-forced-h100.tsv`).

use super::table::{markdown_table, notes};
use super::results::Table;
use anyhow::Result;
use std::fmt::Write;
use std::path::Path;

const COMMAND: &str = "the GPU machine: bench/numerics/run.sh (built by cargo xtask gpu-program numerics)";
const QMATMUL: &str = "qmatmul-h100.tsv";
const TEACHER_FORCED: &str = "teacher-forced-h100.tsv";
const AMD_EMULATED: &str = "qmatmul-amd-emulated-h100.tsv";
const AMD_EMULATED_COMMAND: &str = "the GPU machine: bench/numerics/run-amd-emulated.sh (numerics-rocm of cargo xtask gpu-program numerics)";
/// The row counts of the emulated table: MMQ only (1-8 rows take MMVQ, which has no AMD path).
const AMD_EMULATED_ROWS: &[&str] = &["12", "128"];
/// The row counts shown (the file has more): 1 and 8 rows take the matrix-vector kernels
/// (MMVQ), 12 (the examples' prompt) and 128 the tiled MMQ kernels.
const SHOWN_ROWS: &[&str] = &["1", "8", "12", "128"];

pub fn section(md: &mut String, results: &Path) -> Result<()> {
    md.push_str("## Numerics: quantized matmul error, ROCm and CUDA\n\n");
    match super::provenance::read_for_report(&results.join(QMATMUL))? {
        Some(t) => qmatmul(md, &t)?,
        None => writeln!(md, "Not measured yet ({COMMAND}).\n")?,
    }
    md.push_str("## Numerics: ggml's AMD MMQ paths under emulation, H100\n\n");
    match super::provenance::read_for_report(&results.join(AMD_EMULATED))? {
        Some(t) => amd_emulated(md, &t)?,
        None => writeln!(md, "Not measured yet ({AMD_EMULATED_COMMAND}).\n")?,
    }
    md.push_str("## Numerics: teacher-forced logits of the made-up LLMs\n\n");
    match super::provenance::read_for_report(&results.join(TEACHER_FORCED))? {
        Some(t) => teacher_forced(md, &t)?,
        None => writeln!(md, "Not measured yet ({COMMAND}).\n")?,
    }
    Ok(())
}

/// Per type and row count: each side's NMSE against the exact product and against the two
/// models of 8-bit activations (float scale `q8f`, f16 scale `q8h`).
fn qmatmul(md: &mut String, t: &Table) -> Result<()> {
    writeln!(md, "From `bench/results/{QMATMUL}`, written by {COMMAND}. `QMatMul::forward` of weights quantized on the CPU (the same blocks on every side; K = 1024, N = 512), NMSE = sum((y - ref)^2) / sum(ref^2) against f64 references from the dequantized weights: *exact* (f32 activations), *q8f* (activations quantized per 32 with a float scale: MMQ's `D4` layout) and *q8h* (the scale rounded to f16: `block_q8_1`, MMVQ and MMQ's `DS4` layout). A path lands at about 1e-14 from the reference that models its own arithmetic. 1-8 rows: MMVQ; more: MMQ (tensor-core tiles on CUDA, the dp4a tiles on ROCm). Shown: {} rows; the file has 1, 4, 8, 9, 12, 32, 128.\n", SHOWN_ROWS.join(", "))?;
    notes(md, t)?;
    let c = |n: &str| t.column(n);
    let (backend, dtype, rows, path) = (c("backend")?, c("dtype")?, c("rows")?, c("path")?);
    let (exact, q8f, q8h) = (c("vs_exact")?, c("vs_q8f")?, c("vs_q8h")?);
    let find = |b: &str, d: &str, r: &str| t.rows.iter().find(|x| x[backend] == b && x[dtype] == d && x[rows] == r);
    let three = |x: Option<&Vec<String>>| x.map_or("NA".to_string(), |x| format!("{} / {} / {}", x[exact], x[q8f], x[q8h]));
    let mut out = Vec::new();
    let mut dtypes: Vec<&str> = Vec::new();
    for r in &t.rows {
        if !dtypes.contains(&r[dtype].as_str()) {
            dtypes.push(&r[dtype]);
        }
    }
    for d in dtypes {
        for r in SHOWN_ROWS {
            let Some(cuda) = find("cuda", d, r) else { continue };
            out.push(vec![
                d.to_string(),
                r.to_string(),
                cuda[path].clone(),
                three(Some(cuda)),
                three(find("rocm", d, r)),
                find("cpu", d, r).map_or("NA".into(), |x| x[exact].clone()),
            ]);
        }
    }
    markdown_table(md, &["type", "rows", "path", "CUDA: exact / q8f / q8h", "ROCm: exact / q8f / q8h", "CPU: exact"], &out)
}

/// Per type and MMQ row count: the sm_90 build (the portable dp4a tiles) beside each AMD arch
/// whose ggml profile ran on the H100 by emulation, each against the three references.
fn amd_emulated(md: &mut String, t: &Table) -> Result<()> {
    writeln!(md, "From `bench/results/{AMD_EMULATED}`, written by {AMD_EMULATED_COMMAND}. The same `numerics qmatmul` as above, ROCm side only: *rocm* is the kernels' nvcc build for sm_90 (the portable dp4a tiles); *rocm-emulated-ARCH* is the same generated code built as that AMD arch (`hip-on-cuda/build-kernels.sh` with `AMD_ARCH`: `candle_ggml_hip_arch.h` selects the arch's ggml profile, the AMD builtins run on `tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h`) and run with `HIP_ON_CUDA_GCN_ARCH_NAME=ARCH`, so the launchers pick that arch's tiles: WMMA tiles on RDNA3 (gfx1100) and RDNA4 (gfx1201), ggml's HIP dp4a tiles (128 rows) on RDNA2 (gfx1030). Numbers only: emulated runs have no meaningful speed. Cells: NMSE against exact / q8f / q8h.\n")?;
    notes(md, t)?;
    let c = |n: &str| t.column(n);
    let (backend, dtype, rows) = (c("backend")?, c("dtype")?, c("rows")?);
    let (exact, q8f, q8h) = (c("vs_exact")?, c("vs_q8f")?, c("vs_q8h")?);
    let mut backends: Vec<&str> = Vec::new();
    let mut dtypes: Vec<&str> = Vec::new();
    for r in &t.rows {
        if !backends.contains(&r[backend].as_str()) {
            backends.push(&r[backend]);
        }
        if !dtypes.contains(&r[dtype].as_str()) {
            dtypes.push(&r[dtype]);
        }
    }
    let mut out = Vec::new();
    for d in dtypes {
        for n in AMD_EMULATED_ROWS {
            let mut row = vec![d.to_string(), n.to_string()];
            for b in &backends {
                row.push(t.rows.iter().find(|x| x[backend] == *b && x[dtype] == d && x[rows] == *n).map_or("NA".to_string(), |x| format!("{} / {} / {}", x[exact], x[q8f], x[q8h])));
            }
            out.push(row);
        }
    }
    let mut header = vec!["type", "rows"];
    header.extend(backends.iter().copied());
    markdown_table(md, &header, &out)
}

fn teacher_forced(md: &mut String, t: &Table) -> Result<()> {
    writeln!(md, "From `bench/results/{TEACHER_FORCED}`, written by {COMMAND}. The made-up models of the examples harness (bench/examples/make-models), each run teacher-forced on the CPU's greedy 100-token continuation of a 12-token prompt: step 0 is the prompt in one call (12 rows: MMQ for quantized weights), then one token per step, every side fed the same tokens. *agree*: every step where ROCm's top-1 token differs from CUDA's is a tie within rounding (CUDA's two best logits closer than the largest logit difference of that step), and ROCm's logits are no further from CUDA's (mean NMSE) than those of Candle's own CPU backend are. Both builds have feature `flash-attn`: on the GPU sides qwen3 (bf16) and llama-flash-attn (f16) take candle-flash-attn, Dao's kernels on CUDA against our `run_mha` on ROCm; the CPU reference takes Candle's unfused attention.\n")?;
    notes(md, t)?;
    let idx = ["model", "dtype", "agree", "rocm_vs_cuda", "cuda_vs_cpu", "rocm_vs_cpu"].map(|c| t.column(c)).into_iter().collect::<Result<Vec<_>>>()?;
    let rows: Vec<Vec<String>> = t.rows.iter().map(|r| idx.iter().map(|&i| r[i].replace('|', "\\|")).collect()).collect();
    markdown_table(md, &["model", "dtype", "agree", "ROCm vs CUDA", "CPU vs CUDA", "CPU vs ROCm"], &rows)?;
    let agreeing = t.rows.iter().filter(|r| r[idx[2]] == "yes").count();
    writeln!(md, "{agreeing} of {} models agree.\n", t.rows.len())?;
    Ok(())
}
