//! `greedy` / `logits` / `compare`: the made-up LLMs of the candle-examples harness
//! (bench/examples/make-models: `llama-q4k.gguf`, `llama-q8_0.gguf`, `qwen3/`, the f16
//! Llama of its hub cache, with flash attention on a GPU when built with `flash-attn`), run
//! teacher-forced, so that the two backends are compared step by step on the same tokens.
//!
//! Greedy decoding of a random-weight model is chaotic: once one token differs, every later
//! step differs, and a token flips wherever the two best logits are closer than the backends'
//! rounding differences. With 8-bit activations (quantized matmuls) or bf16 activations every
//! last-bit difference upstream can move a value by a whole quantization step, so two correct
//! backends whose arithmetic differs (NVIDIA's tensor-core MMQ tiles against the dp4a tiles
//! AMD runs, a different reduction order) part after some tens of tokens. Teacher forcing
//! feeds every side the same token sequence (the CPU's greedy continuation), so each step
//! compares the logits of one and the same context:
//!
//! * `greedy`: the reference sequence: a fixed 12-token prompt, then `--steps` greedy tokens;
//! * `logits`: every step's logits for that sequence: the prompt in one call (12 rows: the
//!   batched kernels, MMQ for quantized weights), then one token at a time;
//! * `compare A B`: per step, the top-1 token of each side, the logits' NMSE, and where the
//!   top-1 differs, the reference's margin between its two best logits against the largest
//!   logit difference: a flip at a margin below that difference is a tie within rounding.

use candle_core::quantized::gguf_file;
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::{llama, quantized_llama, qwen3};
use std::path::Path;

pub const PROMPT_LEN: usize = 12;

/// The prompt: 12 ordinary (non-special) token ids, the same on every side.
fn prompt() -> Vec<u32> {
    (0..PROMPT_LEN as u32).map(|i| 8 + (i * 389 + 17) % 1000).collect()
}

enum Model {
    Quantized(quantized_llama::ModelWeights),
    Qwen3(qwen3::ModelForCausalLM),
    Llama(llama::Llama, llama::Cache),
}

/// The made-up Llama's snapshot in make-models' hub cache (`llama --model-id`).
fn llama_snapshot(models: &Path) -> Result<std::path::PathBuf> {
    let snapshots = models.join("hf-home/hub/models--candle-rocm--made-up-llama/snapshots");
    let read = std::fs::read_dir(&snapshots).map_err(|e| candle_core::Error::Msg(format!("{}: {e}", snapshots.display())))?;
    let mut dirs: Vec<_> = read.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    dirs.sort();
    match dirs.as_slice() {
        [one] => Ok(one.clone()),
        _ => candle_core::bail!("{}: {} snapshots, make-models writes one", snapshots.display(), dirs.len()),
    }
}

impl Model {
    /// `kind`: `q4k`, `q8_0` (llama-KIND.gguf, computed in f32 with quantized matmuls),
    /// `qwen3` (qwen3/, bf16) or `llama-flash-attn` (the hub cache's Llama in f16: its
    /// attention through candle-flash-attn on a GPU, which needs the `flash-attn` feature;
    /// Candle's unfused attention on the CPU, the reference).
    fn load(kind: &str, models: &Path, dev: &Device) -> Result<Self> {
        match kind {
            "q4k" | "q8_0" => {
                let path = models.join(format!("llama-{kind}.gguf"));
                let mut file = std::fs::File::open(&path)
                    .map_err(|e| candle_core::Error::Msg(format!("{}: {e}", path.display())))?;
                let content = gguf_file::Content::read(&mut file).map_err(|e| e.with_path(&path))?;
                Ok(Self::Quantized(quantized_llama::ModelWeights::from_gguf(content, &mut file, dev)?))
            }
            "qwen3" => {
                let dir = models.join("qwen3");
                let config = std::fs::read_to_string(dir.join("config.json"))
                    .map_err(|e| candle_core::Error::Msg(format!("{}: {e}", dir.join("config.json").display())))?;
                let cfg: qwen3::Config = serde_json::from_str(&config)
                    .map_err(|e| candle_core::Error::Msg(format!("qwen3/config.json: {e}")))?;
                let vb = unsafe {
                    VarBuilder::from_mmaped_safetensors(&[dir.join("model.safetensors")], DType::BF16, dev)?
                };
                Ok(Self::Qwen3(qwen3::ModelForCausalLM::new(&cfg, vb)?))
            }
            "llama-flash-attn" => {
                let flash = !dev.is_cpu();
                if flash && !cfg!(feature = "flash-attn") {
                    candle_core::bail!("llama-flash-attn on a GPU needs this program built with the flash-attn feature")
                }
                let dir = llama_snapshot(models)?;
                let config = std::fs::read_to_string(dir.join("config.json"))
                    .map_err(|e| candle_core::Error::Msg(format!("{}: {e}", dir.join("config.json").display())))?;
                let cfg: llama::LlamaConfig = serde_json::from_str(&config)
                    .map_err(|e| candle_core::Error::Msg(format!("llama config.json: {e}")))?;
                let cfg = cfg.into_config(flash);
                let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[dir.join("model.safetensors")], DType::F16, dev)? };
                let model = llama::Llama::load(vb, &cfg)?;
                Ok(Self::Llama(model, llama::Cache::new(true, DType::F16, &cfg, dev)?))
            }
            other => candle_core::bail!("unknown model `{other}`: q4k, q8_0, qwen3 or llama-flash-attn"),
        }
    }

    /// The logits (f32, on the host) after `tokens`, which start at position `pos`.
    fn step(&mut self, tokens: &[u32], pos: usize, dev: &Device) -> Result<Vec<f32>> {
        let input = Tensor::new(tokens, dev)?.unsqueeze(0)?;
        let logits = match self {
            Self::Quantized(m) => m.forward(&input, pos)?,
            Self::Qwen3(m) => m.forward(&input, pos)?,
            Self::Llama(m, cache) => m.forward(&input, pos, cache)?,
        };
        logits.to_dtype(DType::F32)?.flatten_all()?.to_vec1()
    }
}

fn argmax(v: &[f32]) -> usize {
    v.iter().enumerate().fold(0, |best, (i, x)| if *x > v[best] { i } else { best })
}

/// The greedy continuation of the prompt, `steps` tokens: prompt + continuation.
pub fn greedy(kind: &str, models: &Path, steps: usize, dev: &Device) -> Result<Vec<u32>> {
    let mut model = Model::load(kind, models, dev)?;
    let mut tokens = prompt();
    let mut logits = model.step(&tokens, 0, dev)?;
    for _ in 0..steps {
        let next = argmax(&logits) as u32;
        tokens.push(next);
        logits = model.step(&[next], tokens.len() - 1, dev)?;
    }
    Ok(tokens)
}

/// Every step's logits for `tokens` (the prompt in one call, then one token at a time):
/// `tokens.len() - PROMPT_LEN + 1` vectors.
pub fn logits(kind: &str, models: &Path, tokens: &[u32], dev: &Device) -> Result<Vec<Vec<f32>>> {
    if tokens.len() < PROMPT_LEN {
        candle_core::bail!("a token sequence needs at least the {PROMPT_LEN} prompt tokens, got {}", tokens.len())
    }
    let mut model = Model::load(kind, models, dev)?;
    let mut out = vec![model.step(&tokens[..PROMPT_LEN], 0, dev)?];
    for (pos, t) in tokens.iter().enumerate().skip(PROMPT_LEN) {
        out.push(model.step(&[*t], pos, dev)?);
    }
    Ok(out)
}

/// How the two sides' step logits agree (`a` is the reference for margins).
pub struct Agreement {
    pub steps: usize,
    /// Steps whose top-1 token is the same on both sides.
    pub same: usize,
    pub nmse_mean: f64,
    pub nmse_max: f64,
    /// Every step whose top-1 differs has the reference's two best logits closer than the
    /// largest logit difference of that step: a tie within the two sides' rounding.
    pub ties_only: bool,
    /// The differing steps: `step S: A vs B, margin M vs max |diff| D`.
    pub differing: Vec<String>,
}

impl Agreement {
    /// `top-1 identical at S/N steps; logits NMSE mean M, max X[; differing: ...]`.
    pub fn line(&self) -> String {
        let differing = if self.differing.is_empty() { String::new() } else { format!("; differing: {}", self.differing.join("; ")) };
        format!(
            "top-1 identical at {}/{} steps; logits NMSE mean {:.2e}, max {:.2e}{differing}",
            self.same, self.steps, self.nmse_mean, self.nmse_max
        )
    }
}

pub fn compare(a: &[Vec<f32>], b: &[Vec<f32>]) -> std::result::Result<Agreement, String> {
    if a.is_empty() || a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.len() != y.len()) {
        return Err(format!("the logits differ in shape: {} against {} steps", a.len(), b.len()));
    }
    let mut r = Agreement { steps: a.len(), same: 0, nmse_mean: 0.0, nmse_max: 0.0, ties_only: true, differing: Vec::new() };
    for (step, (x, y)) in a.iter().zip(b).enumerate() {
        let num: f64 = x.iter().zip(y).map(|(p, q)| (*p as f64 - *q as f64).powi(2)).sum();
        let den: f64 = x.iter().map(|p| (*p as f64).powi(2)).sum();
        let nmse = num / den.max(f64::MIN_POSITIVE);
        r.nmse_mean += nmse / a.len() as f64;
        r.nmse_max = r.nmse_max.max(nmse);
        let (ta, tb) = (argmax(x), argmax(y));
        if ta == tb {
            r.same += 1;
        } else {
            let second = x.iter().enumerate().filter(|(i, _)| *i != ta).map(|(_, v)| *v).fold(f32::MIN, f32::max);
            let margin = x[ta] - second;
            let maxdiff = x.iter().zip(y).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
            r.ties_only &= margin < maxdiff;
            r.differing.push(format!("step {step}: {ta} vs {tb}, margin {margin:.2e} vs max |diff| {maxdiff:.2e}"));
        }
    }
    Ok(r)
}

/// Logits file: u32 steps, u32 vocab, then steps x vocab f32, little endian.
pub fn write_logits(path: &Path, logits: &[Vec<f32>]) -> std::io::Result<()> {
    let vocab = logits.first().map_or(0, |v| v.len());
    let mut bytes = Vec::with_capacity(8 + logits.len() * vocab * 4);
    bytes.extend((logits.len() as u32).to_le_bytes());
    bytes.extend((vocab as u32).to_le_bytes());
    for v in logits {
        for x in v {
            bytes.extend(x.to_le_bytes());
        }
    }
    std::fs::write(path, bytes)
}

pub fn read_logits(path: &Path) -> std::result::Result<Vec<Vec<f32>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let word = |i: usize| bytes.get(i..i + 4).map(|w| u32::from_le_bytes(w.try_into().unwrap()) as usize);
    let (Some(steps), Some(vocab)) = (word(0), word(4)) else {
        return Err(format!("{}: not a logits file (shorter than its header)", path.display()));
    };
    if bytes.len() != 8 + steps * vocab * 4 {
        return Err(format!("{}: {} bytes, the header says {steps} x {vocab} f32", path.display(), bytes.len()));
    }
    Ok((0..steps)
        .map(|s| (0..vocab).map(|v| f32::from_le_bytes(bytes[8 + (s * vocab + v) * 4..][..4].try_into().unwrap())).collect())
        .collect())
}
