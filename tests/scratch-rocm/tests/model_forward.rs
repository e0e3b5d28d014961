//! Whole models, ROCm against the CPU: candle-transformers' llama (2 layers, hidden 64, 4 heads of which
//! 2 kv heads, vocab 128) and its quantized GGUF twin (built in memory), with made-up
//! deterministic weights, run on the ROCm device and on the CPU: a 7-token prompt, then
//! two decode steps through the kv cache; the logits of every step are compared.
//! No downloads.

mod common;

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::{llama, quantized_llama};
use common::*;
use std::collections::HashMap;

fn tiny_config() -> llama::Config {
    llama::Config {
        hidden_size: 64,
        intermediate_size: 160,
        vocab_size: 128,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        use_flash_attn: false,
        rms_norm_eps: 1e-5,
        rope_theta: 10_000.0,
        bos_token_id: None,
        eos_token_id: None,
        rope_scaling: None,
        max_position_embeddings: 64,
        tie_word_embeddings: false,
    }
}

/// Deterministic values for a parameter: norms near 1, matrices ~ U(-a, a) with a = 1/sqrt(fan_in).
fn param_values(name: &str, dims: &[usize]) -> Vec<f64> {
    let n: usize = dims.iter().product();
    let gen = if name.contains("norm") {
        Gen::Uniform(0.8, 1.2)
    } else {
        let a = 1.0 / (*dims.last().unwrap() as f64).sqrt();
        Gen::Uniform(-a, a)
    };
    values(gen, n, seed_of(name))
}

/// The llama parameters (names and shapes as `Llama::load` asks for them), on the CPU in f32.
fn llama_weights(cfg: &llama::Config) -> Result<HashMap<String, Tensor>> {
    // Let the model declare its parameters, then replace every value deterministically.
    let vm = VarMap::new();
    llama::Llama::load(VarBuilder::from_varmap(&vm, DType::F32, &Device::Cpu), cfg)?;
    let data = vm.data().lock().unwrap();
    let mut out = HashMap::new();
    for (name, var) in data.iter() {
        let dims = var.as_tensor().dims().to_vec();
        out.insert(name.clone(), tensor_from_values(&param_values(name, &dims), &dims, DType::F32, &Device::Cpu)?);
    }
    // embed_tokens, norm, lm_head; per layer q, k, v, o, gate, up, down and two norms
    assert_eq!(out.len(), 3 + cfg.num_hidden_layers * 9, "unexpected parameter set");
    Ok(out)
}

const PROMPT: [u32; 7] = [1, 17, 99, 3, 64, 127, 42];
const DECODE: [u32; 2] = [7, 88];

/// Logits of the prompt's last position and of each decode step, stacked: (3, vocab).
fn llama_logits(dev: &Device, dtype: DType) -> Result<Tensor> {
    let cfg = tiny_config();
    let vb = VarBuilder::from_tensors(llama_weights(&cfg)?, dtype, dev);
    let model = llama::Llama::load(vb, &cfg)?;
    let mut cache = llama::Cache::new(true, dtype, &cfg, dev)?;
    let mut out = vec![model.forward(&Tensor::new(&[PROMPT], dev)?, 0, &mut cache)?];
    for (i, t) in DECODE.iter().enumerate() {
        out.push(model.forward(&Tensor::new(&[[*t]], dev)?, PROMPT.len() + i, &mut cache)?);
    }
    Tensor::cat(&out, 0)
}

/// A batch of two prompts without the kv cache (exercises batched attention).
fn llama_batch_logits(dev: &Device, dtype: DType) -> Result<Tensor> {
    let cfg = tiny_config();
    let vb = VarBuilder::from_tensors(llama_weights(&cfg)?, dtype, dev);
    let model = llama::Llama::load(vb, &cfg)?;
    let mut cache = llama::Cache::new(false, dtype, &cfg, dev)?;
    let tokens = Tensor::new(&[[5u32, 9, 13, 2, 0], [127, 1, 1, 64, 33]], dev)?;
    model.forward(&tokens, 0, &mut cache)
}

/// A tiny llama GGUF (hidden 256, so that every quant type's block fits), in memory.
fn tiny_gguf(q: GgmlDType) -> Result<Vec<u8>> {
    use gguf_file::Value;
    let (hidden, ffn, vocab, layers, heads, kv_heads) = (256usize, 512usize, 128usize, 2usize, 4u32, 2u32);
    let head_dim = hidden / heads as usize;
    let md: Vec<(&str, Value)> = vec![
        ("general.architecture", Value::String("llama".into())),
        ("llama.attention.head_count", Value::U32(heads)),
        ("llama.attention.head_count_kv", Value::U32(kv_heads)),
        ("llama.block_count", Value::U32(layers as u32)),
        ("llama.embedding_length", Value::U32(hidden as u32)),
        ("llama.rope.dimension_count", Value::U32(head_dim as u32)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5)),
        ("llama.rope.freq_base", Value::F32(10_000.0)),
    ];
    let kv = kv_heads as usize * head_dim;
    let mut shapes: Vec<(String, Vec<usize>, GgmlDType)> = vec![
        ("token_embd.weight".into(), vec![vocab, hidden], q),
        ("output_norm.weight".into(), vec![hidden], GgmlDType::F32),
        ("output.weight".into(), vec![vocab, hidden], q),
    ];
    for l in 0..layers {
        let p = format!("blk.{l}");
        shapes.push((format!("{p}.attn_q.weight"), vec![hidden, hidden], q));
        shapes.push((format!("{p}.attn_k.weight"), vec![kv, hidden], q));
        shapes.push((format!("{p}.attn_v.weight"), vec![kv, hidden], q));
        shapes.push((format!("{p}.attn_output.weight"), vec![hidden, hidden], q));
        shapes.push((format!("{p}.ffn_gate.weight"), vec![ffn, hidden], q));
        shapes.push((format!("{p}.ffn_up.weight"), vec![ffn, hidden], q));
        shapes.push((format!("{p}.ffn_down.weight"), vec![hidden, ffn], q));
        shapes.push((format!("{p}.attn_norm.weight"), vec![hidden], GgmlDType::F32));
        shapes.push((format!("{p}.ffn_norm.weight"), vec![hidden], GgmlDType::F32));
    }
    let mut tensors = vec![];
    for (name, dims, dt) in &shapes {
        let t = tensor_from_values(&param_values(name, dims), dims, DType::F32, &Device::Cpu)?;
        tensors.push((name.clone(), QTensor::quantize(&t, *dt)?));
    }
    let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (*k, v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut buf = std::io::Cursor::new(Vec::new());
    gguf_file::write(&mut buf, &md_refs, &t_refs)?;
    Ok(buf.into_inner())
}

/// Quantized llama logits: a 12-token prompt (12 rows: the mmq path), two decode steps (mmvq).
fn quantized_llama_logits(dev: &Device, q: GgmlDType) -> Result<Tensor> {
    let bytes = tiny_gguf(q)?;
    let mut reader = std::io::Cursor::new(bytes);
    let content = gguf_file::Content::read(&mut reader)?;
    let mut model = quantized_llama::ModelWeights::from_gguf(content, &mut reader, dev)?;
    let prompt: Vec<u32> = PROMPT.iter().chain(&[9, 8, 77, 100, 2]).copied().collect();
    let mut out = vec![model.forward(&Tensor::new(prompt.as_slice(), dev)?.unsqueeze(0)?, 0)?];
    for (i, t) in DECODE.iter().enumerate() {
        out.push(model.forward(&Tensor::new(&[[*t]], dev)?, prompt.len() + i)?);
    }
    Tensor::cat(&out, 0)?.to_dtype(DType::F32)
}

const QUANTS: [GgmlDType; 4] = [GgmlDType::Q4_0, GgmlDType::Q8_0, GgmlDType::Q4K, GgmlDType::Q6K];

fn model_cases() -> Vec<Case> {
    let mut cases = vec![];
    // f32 on both sides; f16 / bf16 on the device against the f32 CPU model.
    for (dtype, t) in [
        (DType::F32, Tol::Close { abs: 1e-3, rel: 1e-3 }),
        (DType::F16, Tol::RelToMax(0.01)),
        (DType::BF16, Tol::RelToMax(0.03)),
    ] {
        let name = format!("llama tiny {} prompt 7 + 2 decode steps (kv cache)", dtype.as_str());
        cases.push(Case::new("llama", name, Support::Always, t, move |dev| {
            let d = if dev.is_cpu() { DType::F32 } else { dtype };
            llama_logits(dev, d)?.to_dtype(DType::F32)
        }));
        let name = format!("llama tiny {} batch 2 x 5 tokens (no cache)", dtype.as_str());
        cases.push(Case::new("llama", name, Support::Always, t, move |dev| {
            let d = if dev.is_cpu() { DType::F32 } else { dtype };
            llama_batch_logits(dev, d)?.to_dtype(DType::F32)
        }));
    }
    for q in QUANTS {
        let name = format!("quantized llama tiny {q:?} (in-memory gguf) prompt 12 + 2 decode steps");
        // CPU and GPU quantize the activations differently (q8_0/q8_K vs q8_1).
        cases.push(Case::new("quantized_llama", name, Support::Always, Tol::RelToMax(0.05), move |dev| {
            quantized_llama_logits(dev, q)
        }));
    }
    cases
}

#[test]
fn model_forward_rocm_vs_cpu() {
    let Some(dev) = rocm_device("model_forward_rocm_vs_cpu") else {
        return;
    };
    let k = CudaKernels::load();
    Report::run("rocm-vs-cpu (models)", &model_cases(), &dev, &k).finish();
}

/// The CPU side builds and runs every model deterministically, and the tolerances are sane:
/// the f16/bf16-free CPU model against itself, the quantized models against the f32 llama
/// logits they approximate (not the same weights: only checks they are finite and non-trivial).
#[test]
fn model_harness_cpu() {
    let mut r = Report::new("models harness (cpu)");
    for c in model_cases() {
        let status = match (guarded(|| (c.run)(&Device::Cpu)), guarded(|| (c.run)(&Device::Cpu))) {
            (Ok(a), Ok(b)) => match compare(&a, &b, Tol::Exact) {
                Err(m) => Status::Fail(format!("two CPU runs differ: {m}")),
                Ok(_) => {
                    let v = host_values(&a).unwrap();
                    let max = v.iter().fold(0f64, |m, x| m.max(x.abs()));
                    if v.iter().all(|x| x.is_finite()) && max > 1e-3 {
                        println!("  {}: logits {:?}, max |logit| {max:.3}", c.name, a.dims());
                        Status::Pass(0.0)
                    } else {
                        Status::Fail(format!("degenerate logits (max |logit| {max})"))
                    }
                }
            },
            (Err(e), _) | (_, Err(e)) => Status::Fail(format!("CPU cannot run the model: {e}")),
        };
        r.push(c.method, c.name.clone(), status);
    }
    // Calibration of the half-precision tolerances: the CPU's own f16/bf16 llama against its
    // f32 llama stays inside what the device is allowed.
    for (dtype, t) in [(DType::F16, Tol::RelToMax(0.01)), (DType::BF16, Tol::RelToMax(0.03))] {
        let res = guarded(|| {
            Ok((llama_logits(&Device::Cpu, dtype)?.to_dtype(DType::F32)?, llama_logits(&Device::Cpu, DType::F32)?))
        });
        let status = match res {
            Ok((h, f)) => match compare(&h, &f, t) {
                Ok(e) => {
                    println!("  cpu llama {} vs f32: max |err| {e:.4} (tolerance {t:?})", dtype.as_str());
                    Status::Pass(e)
                }
                Err(m) => Status::Fail(m),
            },
            Err(e) => Status::NoReference(format!("the CPU cannot run llama in {}: {e}", dtype.as_str())),
        };
        r.push("llama", format!("cpu llama {} vs cpu llama f32", dtype.as_str()), status);
    }
    r.finish();
}
