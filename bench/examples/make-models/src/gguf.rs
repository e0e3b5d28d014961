//! The quantized LLM of the `quantized` example: a llama-architecture GGUF file read by
//! candle-transformers' quantized_llama (metadata keys and tensor names as it asks for them).
//! Of a `LlamaShape` (the parity runs': 4 blocks, hidden 512, 8 heads of 64, 4 KV heads,
//! feed-forward 1536), vocabulary 1024;
//! every row length is a multiple of 256, so the whole model, embedding and output included,
//! is stored in the chosen block type (Q4_K: 256-value super-blocks; Q8_0: 32-value blocks)
//! and the GPU's quantized matmul kernels run on every layer. Norm weights are F32.

use crate::models::LlamaShape;
use crate::rng::Normal;
use crate::tokenizer::{SPECIALS, VOCAB_SIZE};
use anyhow::Result;
use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use std::path::Path;

fn weight(seed: u64, name: &str, rows: usize, cols: usize, scale: f32) -> Result<Tensor> {
    let std = scale / (cols as f32).sqrt();
    let v = Normal::for_name(seed, name).vec(rows * cols, std, 0.0);
    Ok(Tensor::from_vec(v, (rows, cols), &Device::Cpu)?)
}

pub fn write(path: &Path, dtype: GgmlDType, seed: u64, shape: LlamaShape) -> Result<()> {
    let LlamaShape { hidden, intermediate: ffn, layers: blocks, heads, kv_heads } = shape;
    let head_dim = shape.head_dim();
    let mut tensors: Vec<(String, QTensor)> = vec![];
    let mut q = |name: &str, t: Tensor, dt: GgmlDType| -> Result<()> {
        tensors.push((name.to_string(), QTensor::quantize(&t, dt)?));
        Ok(())
    };
    let ones = |n: usize| Tensor::ones(n, candle_core::DType::F32, &Device::Cpu);
    // the embedding's values are used as they are (std 1 over the hidden width), not as a matmul
    q("token_embd.weight", weight(seed, "token_embd.weight", VOCAB_SIZE, hidden, (hidden as f32).sqrt())?, dtype)?;
    q("output_norm.weight", ones(hidden)?, GgmlDType::F32)?;
    // the output head 4x wider than the rest, special words' rows zeroed (see models::Head)
    let out = weight(seed, "output.weight", VOCAB_SIZE, hidden, 4.0)?;
    let keep = Tensor::cat(
        &[Tensor::zeros((SPECIALS.len(), hidden), candle_core::DType::F32, &Device::Cpu)?,
          Tensor::ones((VOCAB_SIZE - SPECIALS.len(), hidden), candle_core::DType::F32, &Device::Cpu)?],
        0,
    )?;
    q("output.weight", (out * keep)?, dtype)?;
    for b in 0..blocks {
        let p = format!("blk.{b}");
        for (n, rows, cols) in [
            ("attn_q", hidden, hidden),
            ("attn_k", kv_heads * head_dim, hidden),
            ("attn_v", kv_heads * head_dim, hidden),
            ("attn_output", hidden, hidden),
            ("ffn_gate", ffn, hidden),
            ("ffn_up", ffn, hidden),
            ("ffn_down", hidden, ffn),
        ] {
            let name = format!("{p}.{n}.weight");
            q(&name, weight(seed, &name, rows, cols, 1.0)?, dtype)?;
        }
        q(&format!("{p}.attn_norm.weight"), ones(hidden)?, GgmlDType::F32)?;
        q(&format!("{p}.ffn_norm.weight"), ones(hidden)?, GgmlDType::F32)?;
    }
    use gguf_file::Value;
    let metadata = [
        ("general.architecture", Value::String("llama".into())),
        ("llama.attention.head_count", Value::U32(heads as u32)),
        ("llama.attention.head_count_kv", Value::U32(kv_heads as u32)),
        ("llama.block_count", Value::U32(blocks as u32)),
        // read by mistral.rs's loader (candle's quantized example does not ask)
        ("llama.context_length", Value::U32(4096)),
        ("llama.embedding_length", Value::U32(hidden as u32)),
        ("llama.rope.dimension_count", Value::U32(head_dim as u32)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5)),
        ("llama.rope.freq_base", Value::F32(10000.0)),
    ];
    let md: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (*k, v)).collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut f = std::fs::File::create(path)?;
    gguf_file::write(&mut f, &md, &ts)?;
    Ok(())
}
