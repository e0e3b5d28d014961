//! Numerics of the ROCm backend against Candle's CUDA backend: one Candle program, built
//! twice (stock crates.io candle 0.11.1 with `cuda`; generated/candle-core and
//! generated/candle-nn with `rocm`), run on the same GPU by bench/numerics/run.sh.
//!
//! Usage (`--cpu`: Candle's CPU backend instead of the GPU):
//!   numerics-{cuda,rocm} qmatmul [--cpu]                     quantized matmul error table (TSV)
//!   numerics-{cuda,rocm} greedy MODEL MODELS_DIR STEPS OUT [--cpu]
//!                                                            the reference token sequence
//!   numerics-{cuda,rocm} logits MODEL MODELS_DIR TOKENS OUT [--cpu]
//!                                                            teacher-forced logits per step
//!   numerics-{cuda,rocm} compare REF_LOGITS OTHER_LOGITS     one line: `ties-only` or
//!                                        `not-ties` (is every differing top-1 a tie within
//!                                        rounding?), the mean logits NMSE, the description
//! MODEL: q4k, q8_0 (MODELS_DIR/llama-MODEL.gguf), qwen3 (MODELS_DIR/qwen3/) or
//! llama-flash-attn (the f16 Llama of MODELS_DIR/hf-home; flash attention on a GPU, feature
//! `flash-attn`), the made-up models of bench/examples/make-models.

mod qmatmul;
mod teacher_forced;

use candle_core::Device;
use std::path::Path;
use std::process::ExitCode;

pub use candle_bench_fixtures::BACKEND;
use candle_bench_fixtures::gpu_device;

fn read_tokens(path: &Path) -> Result<Vec<u32>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.split_whitespace()
        .enumerate()
        .map(|(i, w)| w.parse().map_err(|_| format!("{}: token {i} is `{w}`, not a token id", path.display())))
        .collect()
}

fn run(args: &[String]) -> Result<(), String> {
    let cpu = args.iter().any(|a| a == "--cpu");
    let args: Vec<&str> = args.iter().map(String::as_str).filter(|a| *a != "--cpu").collect();
    let device = || if cpu { Ok(Device::Cpu) } else { gpu_device().map_err(|e| format!("no {BACKEND} device: {e}")) };
    let err = |e: candle_core::Error| e.to_string();
    match args.as_slice() {
        ["qmatmul"] => {
            let dev = device()?;
            qmatmul::run(if cpu { None } else { Some(&dev) }).map_err(err)
        }
        ["greedy", model, models, steps, out] => {
            let steps = steps.parse().map_err(|_| format!("STEPS `{steps}` is not a number"))?;
            let tokens = teacher_forced::greedy(model, Path::new(models), steps, &device()?).map_err(err)?;
            let text: Vec<String> = tokens.iter().map(u32::to_string).collect();
            std::fs::write(out, text.join(" ") + "\n").map_err(|e| format!("{out}: {e}"))
        }
        ["logits", model, models, tokens, out] => {
            let tokens = read_tokens(Path::new(tokens))?;
            let logits = teacher_forced::logits(model, Path::new(models), &tokens, &device()?).map_err(err)?;
            teacher_forced::write_logits(Path::new(out), &logits).map_err(|e| format!("{out}: {e}"))
        }
        ["compare", a, b] => {
            let a = teacher_forced::read_logits(Path::new(a))?;
            let b = teacher_forced::read_logits(Path::new(b))?;
            let r = teacher_forced::compare(&a, &b)?;
            println!("{}\t{:.3e}\t{}", if r.ties_only { "ties-only" } else { "not-ties" }, r.nmse_mean, r.line());
            Ok(())
        }
        _ => Err("usage: numerics qmatmul | greedy MODEL MODELS_DIR STEPS OUT | logits MODEL MODELS_DIR TOKENS OUT | compare A B  [--cpu]".into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
