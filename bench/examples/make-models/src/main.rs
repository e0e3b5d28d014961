//! make-models: the made-up models and the output check of the candle-examples parity run
//! (bench/examples/run-examples.sh).
//!
//!   make-models models DIR [SEED]     writes every model, the tokenizer and the image into DIR
//!   make-models mistralrs DIR [SEED]  writes the models of the mistral.rs run (bench/mistralrs/run.sh) into DIR
//!   make-models mistralrs-speed DIR [SEED]  the same models, 0.73B weights (its speed runs)
//!   make-models prompt N              prints the N-word prompt the runs use
//!   make-models compare KIND CUDA_LOG ROCM_LOG [SKIP|ATOL]
//!       KIND tokens (SKIP: words of the echoed prompt, or A:B), tensor or top5 (ATOL); prints one
//!       TSV fragment: agree (yes/no), agreement, cuda speed, rocm speed, unit; exits 0
//!       when the runs agree, 3 when they do not.

mod compare;
mod gguf;
mod hub;
mod image;
mod models;
mod rng;
mod tokenizer;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The repository id of the made-up BERT in the hub cache (`bert --model-id`).
const BERT_REPO: &str = "candle-rocm/made-up-bert";
/// The repository id of the made-up Llama in the hub cache (`llama --model-id`).
const LLAMA_REPO: &str = "candle-rocm/made-up-llama";

fn make_models(dir: &Path, seed: u64) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let tok = dir.join("tokenizer.json");
    tokenizer::write(&tok)?;
    let step = |what: &str, start: std::time::Instant| {
        println!("{what:<34} {:>6.2} s", start.elapsed().as_secs_f64())
    };
    let t = std::time::Instant::now();
    gguf::write(&dir.join("llama-q4k.gguf"), candle_core::quantized::GgmlDType::Q4K, seed, models::LLAMA_SMALL)?;
    step("llama-q4k.gguf", t);
    let t = std::time::Instant::now();
    gguf::write(&dir.join("llama-q8_0.gguf"), candle_core::quantized::GgmlDType::Q8_0, seed, models::LLAMA_SMALL)?;
    step("llama-q8_0.gguf", t);
    for (name, make) in [
        ("qwen3", models::qwen3 as fn(&Path, u64) -> Result<()>),
        ("t5", models::t5),
        ("mamba", models::mamba),
    ] {
        let t = std::time::Instant::now();
        let d = dir.join(name);
        std::fs::create_dir_all(&d)?;
        make(&d, seed)?;
        std::fs::copy(&tok, d.join("tokenizer.json"))?;
        step(name, t);
    }
    let t = std::time::Instant::now();
    let snap = hub::snapshot_dir(&dir.join("hf-home"), BERT_REPO)?;
    models::bert(&snap, seed)?;
    std::fs::copy(&tok, snap.join("tokenizer.json"))?;
    step(&format!("hf-home: {BERT_REPO}"), t);
    let t = std::time::Instant::now();
    let snap = hub::snapshot_dir(&dir.join("hf-home"), LLAMA_REPO)?;
    models::llama(&snap, seed)?;
    std::fs::copy(&tok, snap.join("tokenizer.json"))?;
    step(&format!("hf-home: {LLAMA_REPO}"), t);
    let t = std::time::Instant::now();
    let input = image::write(&dir.join("image.png"))?;
    models::resnet18(dir, "resnet18.safetensors", seed, &input)?;
    step("resnet18.safetensors, image.png", t);
    Ok(())
}

/// A mistral.rs run's models: a made-up Llama of `shape` as a local model folder (`llama/`,
/// with its tokenizer) and as GGUF Q4_K (`llama-q4k.gguf`, the same tokenizer taken from
/// `llama/`).
fn make_mistralrs_models(dir: &Path, seed: u64, shape: models::LlamaShape) -> Result<()> {
    let llama = dir.join("llama");
    std::fs::create_dir_all(&llama)?;
    tokenizer::write_byte_fallback(&llama.join("tokenizer.json"))?;
    models::llama_mistralrs(&llama, seed, shape, MISTRALRS_NEW_TOKENS)?;
    gguf::write(&dir.join("llama-q4k.gguf"), candle_core::quantized::GgmlDType::Q4K, seed, shape)?;
    Ok(())
}

/// The tokens each mistral.rs run generates (generation_config.json's max_new_tokens).
const MISTRALRS_NEW_TOKENS: usize = 128;

fn read(p: &str) -> Result<String> {
    std::fs::read_to_string(p).with_context(|| format!("reading {p}"))
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        ["models", dir, rest @ ..] => {
            let seed = rest.first().map_or(Ok(299792458), |s| s.parse()).context("SEED")?;
            make_models(&PathBuf::from(dir), seed)
        }
        [size @ ("mistralrs" | "mistralrs-speed"), dir, rest @ ..] => {
            let seed = rest.first().map_or(Ok(299792458), |s| s.parse()).context("SEED")?;
            let shape = if *size == "mistralrs" { models::LLAMA_SMALL } else { models::LLAMA_SPEED };
            make_mistralrs_models(&PathBuf::from(dir), seed, shape)
        }
        ["prompt", n] => {
            println!("{}", tokenizer::prompt(n.parse()?));
            Ok(())
        }
        ["compare", kind, cuda_log, rocm_log, rest @ ..] => {
            let (c, r) = (read(cuda_log)?, read(rocm_log)?);
            let param = rest.first().copied();
            let outcome = match *kind {
                "tokens" => compare::tokens(&c, &r, compare::skips(param)?)?,
                "tensor" | "last-tensor" => compare::tensor(&c, &r, param.map_or(Ok(1e-3), str::parse)?, *kind == "last-tensor")?,
                "top5" => compare::top5(&c, &r, param.map_or(Ok(0.02), str::parse)?)?,
                k => bail!("unknown KIND {k:?}: tokens, tensor, last-tensor or top5"),
            };
            let (cs, rs) = (compare::speed(&c), compare::speed(&r));
            let fmt = |s: Option<(f64, &str)>| s.map_or("NA".to_string(), |(v, _)| format!("{v:.2}"));
            let unit = cs.or(rs).map_or("NA", |(_, u)| u);
            println!(
                "{}\t{}\t{}\t{}\t{}",
                if outcome.agree { "yes" } else { "no" },
                outcome.agreement,
                fmt(cs),
                fmt(rs),
                unit
            );
            if !outcome.agree {
                std::process::exit(3);
            }
            Ok(())
        }
        _ => bail!("usage: make-models models DIR [SEED] | mistralrs|mistralrs-speed DIR [SEED] | prompt N | compare tokens|tensor|top5 CUDA_LOG ROCM_LOG [SKIP|A:B|ATOL]"),
    }
}
