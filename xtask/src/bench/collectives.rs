//! BENCHMARKS.md's collectives section, from the two files bench/collectives/run.sh writes on
//! the GPU machine per world size N: the all-reduce sweep through our HIP layer's RCCL module
//! and through NCCL directly (`collectives-worldN-h100.tsv`), and the tensor-parallel model's
//! tokens/s on one and N GPUs (`tensor-parallel-speed-worldN-h100.tsv`); each world measured
//! is shown, smallest first.

use super::table::{markdown_table, notes};
use super::results::Table;
use anyhow::{Context, Result};
use std::fmt::Write;
use std::path::{Path, PathBuf};

const COMMAND: &str = "the GPU machine: bench/collectives/run.sh (built by cargo xtask gpu-program collectives)";
/// Result files `{prefix}{N}{SUFFIX}`, one per world size N.
const SWEEP: &str = "collectives-world";
const SPEED: &str = "tensor-parallel-speed-world";
const SUFFIX: &str = "-h100.tsv";

/// The result files of `prefix` in `results`, by world size.
fn per_world(results: &Path, prefix: &str) -> Result<Vec<(u32, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(results)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(world) = name.strip_prefix(prefix).and_then(|rest| rest.strip_suffix(SUFFIX)) {
            let world = world.parse::<u32>().map_err(|_| anyhow::anyhow!("{}: `{world}` is not a world size", results.join(&name).display()))?;
            found.push((world, results.join(&name)));
        }
    }
    found.sort();
    Ok(found)
}

pub fn section(md: &mut String, results: &Path) -> Result<()> {
    md.push_str("## Collectives: all-reduce bandwidth and tensor-parallel tokens/s\n\n");
    for (prefix, render) in [(SWEEP, sweep as fn(&mut String, &str, &Table) -> Result<()>), (SPEED, speed)] {
        let files = per_world(results, prefix)?;
        if files.is_empty() {
            writeln!(md, "`{prefix}N{SUFFIX}`: not measured yet ({COMMAND}).\n")?;
        }
        for (_, path) in files {
            let file = path.file_name().expect("a file").to_string_lossy().into_owned();
            let table = super::provenance::read_for_report(&path)?.with_context(|| format!("{} vanished", path.display()))?;
            render(md, &file, &table)?;
        }
    }
    Ok(())
}

/// 8192 -> "8 KiB", 1073741824 -> "1 GiB" (other sizes in bytes).
fn size(bytes: &str) -> String {
    let Ok(b) = bytes.parse::<u64>() else { return bytes.to_string() };
    for (unit, scale) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if b >= scale && b % scale == 0 {
            return format!("{} {unit}", b / scale);
        }
    }
    format!("{b} B")
}

fn sweep(md: &mut String, file: &str, t: &Table) -> Result<()> {
    writeln!(md, "From `bench/results/{file}`, written by {COMMAND}. An out-of-place f32 sum all-reduce per message size, in the same processes (one per GPU) through two communicators: *layer*, our HIP layer's RCCL module (`candle_rocm_hip::nccl`, RCCL's C API in `librccl.so.1`, which hip-on-cuda forwards to NVIDIA's NCCL on this machine), and *NCCL*, cudarc's NCCL module on `libnccl.so.2` directly (what Candle's CUDA backend calls). Time per call in us; algbw = bytes / time and busbw = algbw x 2(n-1)/n in GB/s, as nccl-tests prints them; ratio = NCCL us / layer us (>= 1: the layer at least as fast).\n")?;
    notes(md, t)?;
    let idx = ["bytes", "iters", "layer_us", "nccl_us", "layer_algbw_gbs", "layer_busbw_gbs", "nccl_algbw_gbs", "nccl_busbw_gbs", "ratio"]
        .map(|c| t.column(c))
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            let mut cells: Vec<String> = idx.iter().map(|&i| r[i].clone()).collect();
            cells[0] = size(&cells[0]);
            cells
        })
        .collect();
    markdown_table(md, &["message", "iters", "layer us", "NCCL us", "layer algbw", "layer busbw", "NCCL algbw", "NCCL busbw", "ratio"], &rows)?;
    let ratios: Vec<f64> = t.numbers("ratio")?.into_iter().filter(|r| r.is_finite() && *r > 0.0).collect();
    if !ratios.is_empty() {
        let mean = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        writeln!(md, "Ratio over the {} sizes: geometric mean {mean:.3}, from {lo:.3} to {hi:.3}.\n", ratios.len())?;
    }
    Ok(())
}

fn speed(md: &mut String, file: &str, t: &Table) -> Result<()> {
    writeln!(md, "From `bench/results/{file}`, written by {COMMAND}. The tensor-parallel program of `tests/tensor-parallel` (generated candle-core and candle-nn with `rocm` and `rccl`) with N ranks over RCCL against one process without a communicator; *speed-up* = N ranks / one process; *all-reduce* = rank 0's GPU time in all-reduces per generated token (waiting for the other ranks included), its share of the step time, and rank 0's host time inside the all-reduce calls per token.\n")?;
    notes(md, t)?;
    let columns = ["shape", "dtype", "prompt", "steps", "world", "tokens_per_s", "single_tokens_per_s", "all_reduce_ms_per_token", "all_reduce_pct", "all_reduce_host_ms_per_token"];
    let idx = columns.map(|c| t.column(c)).into_iter().collect::<Result<Vec<_>>>()?;
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            let cell = |i: usize| r[idx[i]].clone();
            let speedup = match (cell(5).parse::<f64>(), cell(6).parse::<f64>()) {
                (Ok(m), Ok(s)) if s > 0.0 => format!("{:.2}x", m / s),
                _ => "NA".to_string(),
            };
            let share = if cell(8) == "NA" { "NA".to_string() } else { format!("{}%", cell(8)) };
            vec![cell(0), cell(1), cell(2), cell(3), cell(4), cell(5), cell(6), speedup, cell(7), share, cell(9)]
        })
        .collect();
    let header = ["shape", "dtype", "prompt", "steps", "world", "tokens/s, N ranks", "tokens/s, one process", "speed-up", "all-reduce GPU ms/token", "GPU share", "all-reduce host ms/token"];
    markdown_table(md, &header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_say_how_to_measure() {
        let dir = std::env::temp_dir().join(format!("collectives-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut md = String::new();
        section(&mut md, &dir).unwrap();
        assert!(md.contains(&format!("`{SWEEP}N{SUFFIX}`: not measured yet ({COMMAND})")), "{md}");
        assert!(md.contains(&format!("`{SPEED}N{SUFFIX}`: not measured yet")), "{md}");
        std::fs::write(
            dir.join(format!("{SPEED}2{SUFFIX}")),
            "shape\tdtype\tprompt\tsteps\tworld\ttokens_per_s\tsingle_tokens_per_s\tall_reduce_ms_per_token\tall_reduce_pct\tall_reduce_host_ms_per_token\n\
             tiny\tf32\t8\t32\t2\t300.0\t150.0\t0.500\t15.0\t0.100\n\
             llama-7b\tbf16\t2048\t16\t2\tfailed\t140.0\tNA\tNA\tNA\n",
        )
        .unwrap();
        let mut md = String::new();
        section(&mut md, &dir).unwrap();
        assert!(md.contains("| tiny | f32 | 8 | 32 | 2 | 300.0 | 150.0 | 2.00x | 0.500 | 15.0% | 0.100 |"), "{md}");
        assert!(md.contains("| llama-7b | bf16 | 2048 | 16 | 2 | failed | 140.0 | NA | NA | NA | NA |"), "{md}");
        assert!(md.contains(&format!("`{SWEEP}N{SUFFIX}`: not measured yet")), "{md}");
        assert!(md.contains(&format!("From `bench/results/{SPEED}2{SUFFIX}`")), "{md}");
        std::fs::write(dir.join(format!("{SPEED}x{SUFFIX}")), "shape\n").unwrap();
        let err = section(&mut String::new(), &dir).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("`x` is not a world size"), "{err}");
    }

    #[test]
    fn the_sweep_shows_sizes_bandwidths_and_the_ratio() {
        let t = Table::parse(
            "# gpu: NVIDIA H100\n\
             bytes\titers\tlayer_us\tnccl_us\tlayer_algbw_gbs\tlayer_busbw_gbs\tnccl_algbw_gbs\tnccl_busbw_gbs\tratio\n\
             8192\t20000\t10.00\t5.00\t0.819\t1.229\t1.638\t2.458\t0.500\n\
             1073741824\t40\t5000.00\t10000.00\t214.748\t322.123\t107.374\t161.061\t2.000\n",
        )
        .unwrap();
        let mut md = String::new();
        sweep(&mut md, "collectives-world2-h100.tsv", &t).unwrap();
        assert!(md.contains("- gpu: NVIDIA H100"), "{md}");
        assert!(md.contains("| 8 KiB | 20000 | 10.00 | 5.00 | 0.819 | 1.229 | 1.638 | 2.458 | 0.500 |"), "{md}");
        assert!(md.contains("| 1 GiB | 40 | 5000.00 | 10000.00 | 214.748 | 322.123 | 107.374 | 161.061 | 2.000 |"), "{md}");
        assert!(md.contains("geometric mean 1.000, from 0.500 to 2.000"), "{md}");
        assert_eq!((size("8192"), size("3145728"), size("1000")), ("8 KiB".into(), "3 MiB".into(), "1000 B".into()));
    }
}
