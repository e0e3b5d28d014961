//! The safetensors models: each built by its own candle-transformers 0.11.1 code over a
//! VarMap (so every tensor name and shape is the one the example's loader asks for), then
//! every randomly initialised tensor is redrawn from a seeded stream with the spread of
//! candle-nn's initialiser (constants such as norm weights and batch-norm statistics are
//! kept), and saved as F32 safetensors beside its config.json.

use crate::rng::Normal;
use crate::tokenizer::{SPECIALS, VOCAB_SIZE};
use anyhow::Result;
use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::{bert, llama, mamba, qwen3, resnet, t5};
use serde_json::json;
use std::path::Path;

/// How an output head is drawn: its spread times `scale` (wider logits: greedy decoding then
/// has clear winners), and with `zero_specials` the rows of the special words zeroed (so
/// random weights rarely pick an end-of-text word and the runs generate their full length).
pub struct Head {
    pub name: &'static str,
    pub scale: f32,
    pub zero_specials: bool,
}

fn reseed(varmap: &VarMap, seed: u64, heads: &[Head]) -> Result<()> {
    let data = varmap.data().lock().unwrap();
    for (name, var) in data.iter() {
        let t = var.as_tensor();
        let vals = t.flatten_all()?.to_vec1::<f32>()?;
        let n = vals.len() as f64;
        let mean = vals.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var_ = vals.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
        if var_.sqrt() < 1e-9 {
            // a constant initialiser: ones, batch-norm statistics and biases are kept; zeros
            // from a plain `vb.get` (candle-nn's default) get what a checkpoint would hold
            if mean == 0.0 {
                if let Some(v) = zero_init_replacement(seed, name, t.dims()) {
                    var.set(&Tensor::from_vec(v, t.shape(), &Device::Cpu)?)?;
                }
            }
            continue;
        }
        let head = heads.iter().find(|h| h.name == name);
        let scale = head.map_or(1.0, |h| h.scale);
        let mut new = Normal::for_name(seed, name).vec(vals.len(), var_.sqrt() as f32 * scale, 0.0);
        if head.is_some_and(|h| h.zero_specials) {
            let cols = t.dim(1)?;
            for v in &mut new[..SPECIALS.len() * cols] {
                *v = 0.0;
            }
        }
        var.set(&Tensor::from_vec(new, t.shape(), &Device::Cpu)?)?;
    }
    Ok(())
}

/// Values for a tensor that a model asks for with a plain `vb.get` (zeros under a VarMap):
/// norm scales (1-D `weight`) ones, Mamba's `A_log` row log(1..=d_state) and `D` ones (its
/// reference initialisation), other weights drawn with a 1/sqrt(fan-in) spread; biases and
/// anything else stay zero.
fn zero_init_replacement(seed: u64, name: &str, dims: &[usize]) -> Option<Vec<f32>> {
    let n: usize = dims.iter().product();
    let last = name.rsplit('.').next().unwrap_or(name);
    match (last, dims.len()) {
        ("A_log", 2) => Some((0..n).map(|i| ((i % dims[1]) as f32 + 1.0).ln()).collect()),
        ("D", 1) | ("weight", 1) => Some(vec![1.0; n]),
        ("weight", _) => {
            let fan_in = n / dims[0];
            Some(Normal::for_name(seed, name).vec(n, 1.0 / (fan_in as f32).sqrt(), 0.0))
        }
        _ => None,
    }
}

fn build<F>(dir: &Path, file: &str, seed: u64, heads: &[Head], make: F) -> Result<()>
where
    F: FnOnce(VarBuilder) -> Result<()>,
{
    let varmap = VarMap::new();
    make(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?;
    reseed(&varmap, seed, heads)?;
    varmap.save(dir.join(file))?;
    Ok(())
}

fn write_config(dir: &Path, config: &serde_json::Value) -> Result<()> {
    std::fs::write(dir.join("config.json"), serde_json::to_string_pretty(config)?)?;
    Ok(())
}

/// Qwen3 (the `qwen` example, `--model 3-0.6b`): 4 layers, hidden 512, 8 heads of 64,
/// 4 KV heads (grouped-query attention), MLP 1536; run in BF16 on a GPU by the example.
/// Also writes model.safetensors.index.json: with --weight-path the example finds the
/// weights through it (without it, it opens "model.safetensors" in the working directory).
pub fn qwen3(dir: &Path, seed: u64) -> Result<()> {
    let config = json!({
        "vocab_size": VOCAB_SIZE, "hidden_size": 512, "intermediate_size": 1536,
        "num_hidden_layers": 4, "num_attention_heads": 8, "head_dim": 64,
        "attention_bias": false, "num_key_value_heads": 4, "max_position_embeddings": 4096,
        "sliding_window": null, "max_window_layers": 4, "tie_word_embeddings": false,
        "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "use_sliding_window": false,
        "hidden_act": "silu",
    });
    let cfg: qwen3::Config = serde_json::from_value(config.clone())?;
    let heads = [Head { name: "lm_head.weight", scale: 4.0, zero_specials: true }];
    build(dir, "model.safetensors", seed, &heads, |vb| {
        qwen3::ModelForCausalLM::new(&cfg, vb)?;
        Ok(())
    })?;
    let st = candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu)?;
    let map = st.keys().map(|k| (k.clone(), "model.safetensors".to_string())).collect();
    write_index(dir, map)?;
    write_config(dir, &config)
}

/// `model.safetensors.index.json`: which file holds each tensor (as the hub's sharded
/// checkpoints have it, read by candle_examples::hub_load_safetensors).
fn write_index(dir: &Path, map: std::collections::BTreeMap<String, String>) -> Result<()> {
    let index = json!({ "metadata": {}, "weight_map": map });
    std::fs::write(dir.join("model.safetensors.index.json"), serde_json::to_string_pretty(&index)?)?;
    Ok(())
}

/// The tensors of `dir/model.safetensors` split over `n` files as a sharded hub checkpoint
/// (`model-0000K-of-0000N.safetensors`, in name order), with their index.
fn split_checkpoint(dir: &Path, n: usize) -> Result<()> {
    let st = candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu)?;
    let names: Vec<&String> = {
        let mut names: Vec<&String> = st.keys().collect();
        names.sort();
        names
    };
    let per_file = names.len().div_ceil(n);
    let mut map = std::collections::BTreeMap::new();
    for (k, chunk) in names.chunks(per_file).enumerate() {
        let file = format!("model-{:05}-of-{n:05}.safetensors", k + 1);
        let part: std::collections::HashMap<String, Tensor> = chunk.iter().map(|name| ((*name).clone(), st[*name].clone())).collect();
        candle_core::safetensors::save(&part, dir.join(&file))?;
        map.extend(chunk.iter().map(|name| ((*name).clone(), file.clone())));
    }
    write_index(dir, map)
}

/// Llama (the `llama` example, read through the hub cache with `--which SmoLM2-135M`: one
/// model.safetensors): 4 layers, hidden 512, 8 heads of 64, 4 KV heads (grouped-query
/// attention), MLP 1536; run in F16 by the example, with or without `--use-flash-attn`.
/// The same tensors also as a checkpoint sharded over two files with its index, which
/// `llama_multiprocess` reads (each rank takes its slices of every tensor).
pub fn llama(dir: &Path, seed: u64) -> Result<()> {
    let config = llama_config(LLAMA_SMALL);
    llama_weights(dir, seed, &config)?;
    split_checkpoint(dir, 2)?;
    write_config(dir, &config)
}

/// A made-up Llama's size.
#[derive(Clone, Copy)]
pub struct LlamaShape {
    pub hidden: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
}

/// The made-up Llama of the parity runs: 4 layers, hidden 512, 8 heads of 64, 4 KV heads,
/// MLP 1536 (about 13M weights).
pub const LLAMA_SMALL: LlamaShape = LlamaShape { hidden: 512, intermediate: 1536, layers: 4, heads: 8, kv_heads: 4 };

/// The made-up Llama of the mistral.rs speed runs, large enough that a GPU's time goes to
/// matrix work rather than launches: 16 layers, hidden 2048, 32 heads of 64, 8 KV heads,
/// MLP 5632 (TinyLlama's widths; about 0.73B weights, 2.9 GB in F32).
pub const LLAMA_SPEED: LlamaShape = LlamaShape { hidden: 2048, intermediate: 5632, layers: 16, heads: 32, kv_heads: 8 };

impl LlamaShape {
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }
}

/// The made-up Llama's config.json, as candle-transformers reads it.
fn llama_config(shape: LlamaShape) -> serde_json::Value {
    json!({
        "vocab_size": VOCAB_SIZE, "hidden_size": shape.hidden, "intermediate_size": shape.intermediate,
        "num_hidden_layers": shape.layers, "num_attention_heads": shape.heads, "num_key_value_heads": shape.kv_heads,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 4096,
        "bos_token_id": null, "eos_token_id": null, "rope_scaling": null, "tie_word_embeddings": false,
    })
}

/// The made-up Llama's model.safetensors.
fn llama_weights(dir: &Path, seed: u64, config: &serde_json::Value) -> Result<()> {
    let cfg: llama::LlamaConfig = serde_json::from_value(config.clone())?;
    let heads = [Head { name: "lm_head.weight", scale: 4.0, zero_specials: true }];
    build(dir, "model.safetensors", seed, &heads, |vb| {
        llama::Llama::load(vb, &cfg.into_config(false))?;
        Ok(())
    })
}

/// A made-up Llama as mistral.rs loads a local model folder (bench/mistralrs/run.sh): one
/// model.safetensors (it would load every shard beside it too); config.json with what
/// mistral.rs requires beyond candle-transformers (`hidden_act`, `architectures`);
/// generation_config.json asking for greedy decoding (top-k 1) of `new_tokens` tokens; and
/// a chat template that passes the user's words through unchanged (the made-up tokenizer
/// has no chat words), so a chat request is the plain prompt.
pub fn llama_mistralrs(dir: &Path, seed: u64, shape: LlamaShape, new_tokens: usize) -> Result<()> {
    let mut config = llama_config(shape);
    llama_weights(dir, seed, &config)?;
    config["hidden_act"] = json!("silu");
    config["architectures"] = json!(["LlamaForCausalLM"]);
    write_config(dir, &config)?;
    let generation = json!({ "do_sample": false, "max_new_tokens": new_tokens });
    std::fs::write(dir.join("generation_config.json"), serde_json::to_string_pretty(&generation)?)?;
    std::fs::write(dir.join("chat_template.jinja"), "{% for message in messages %}{{ message['content'] }}{% endfor %}")?;
    Ok(())
}

/// BERT (the `bert` example, F32): 2 layers, hidden 128, 4 heads, MLP 512. Small enough that
/// the example prints the whole [1, 6, 128] output of a 6-word prompt (candle prints tensors
/// of at most 1000 values in full).
pub fn bert(dir: &Path, seed: u64) -> Result<()> {
    let config = json!({
        "vocab_size": VOCAB_SIZE, "hidden_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 512, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.0, "max_position_embeddings": 512, "type_vocab_size": 2,
        "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
        "classifier_dropout": null, "model_type": "bert",
    });
    let cfg: bert::Config = serde_json::from_value(config.clone())?;
    build(dir, "model.safetensors", seed, &[], |vb| {
        bert::BertModel::load(vb, &cfg)?;
        Ok(())
    })?;
    write_config(dir, &config)
}

/// T5 (the `t5` example, encoder-decoder, F32): 2 encoder and 2 decoder layers, d_model
/// 256, 8 heads of 32, gated-GELU MLP 1024, relative attention buckets; eos id 1 (`</s>`),
/// decoder start id 0 (`<pad>`).
pub fn t5(dir: &Path, seed: u64) -> Result<()> {
    let config = json!({
        "vocab_size": VOCAB_SIZE, "d_model": 256, "d_kv": 32, "d_ff": 1024, "num_layers": 2,
        "num_decoder_layers": 2, "num_heads": 8, "relative_attention_num_buckets": 32,
        "relative_attention_max_distance": 128, "dropout_rate": 0.0,
        "layer_norm_epsilon": 1e-6, "initializer_factor": 1.0,
        "feed_forward_proj": "gated-gelu", "tie_word_embeddings": false, "is_decoder": false,
        "is_encoder_decoder": true, "use_cache": true, "pad_token_id": 0, "eos_token_id": 1,
        "decoder_start_token_id": 0,
    });
    let cfg: t5::Config = serde_json::from_value(config.clone())?;
    let heads = [Head { name: "lm_head.weight", scale: 4.0, zero_specials: true }];
    build(dir, "model.safetensors", seed, &heads, |vb| {
        t5::T5ForConditionalGeneration::load(vb, &cfg)?;
        Ok(())
    })?;
    // checkpoints name the embedding shared by encoder and decoder `shared.weight`; the
    // encoder-only loader (T5EncoderModel, `t5` without --decode) finds it only there
    let path = dir.join("model.safetensors");
    let mut st = candle_core::safetensors::load(&path, &Device::Cpu)?;
    let shared = st["decoder.embed_tokens.weight"].clone();
    st.insert("shared.weight".to_string(), shared);
    candle_core::safetensors::save(&st, &path)?;
    write_config(dir, &config)
}

/// Mamba (the `mamba` example, selective state-space model, F32): 4 layers, d_model 256
/// (d_inner 512, state 16, conv 4); its output head is the embedding (tied).
pub fn mamba(dir: &Path, seed: u64) -> Result<()> {
    let config = json!({
        "d_model": 256, "n_layer": 4, "vocab_size": VOCAB_SIZE, "pad_vocab_size_multiple": 8,
    });
    let cfg: mamba::Config = serde_json::from_value(config.clone())?;
    let heads = [Head { name: "backbone.embedding.weight", scale: 1.0, zero_specials: true }];
    build(dir, "model.safetensors", seed, &heads, |vb| {
        mamba::Model::new(&cfg, vb.pp("backbone"))?;
        Ok(())
    })?;
    write_config(dir, &config)
}

/// ResNet-18 (the `resnet` example, `--which 18`, F32): the real architecture (11.7M
/// parameters, 1000 ImageNet classes), random weights. Batch norm holds its identity
/// statistics, so activations grow layer after layer: the classifier is scaled so that the
/// logits of `image` have a spread of 3 (the example's softmax then gives distinct top-5
/// probabilities, not 100% and a tail of 0.00%).
pub fn resnet18(dir: &Path, file: &str, seed: u64, image: &Tensor) -> Result<()> {
    use candle_nn::Module;
    let varmap = VarMap::new();
    let model = resnet::resnet18(1000, VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?;
    reseed(&varmap, seed, &[])?;
    let logits = model.forward(&image.unsqueeze(0)?)?.flatten_all()?;
    let centred = logits.broadcast_sub(&logits.mean_all()?)?;
    let spread = centred.sqr()?.mean_all()?.sqrt()?.to_scalar::<f32>()?;
    let factor = 3.0 / spread as f64;
    for (name, var) in varmap.data().lock().unwrap().iter() {
        if name.starts_with("fc.") {
            var.set(&(var.as_tensor() * factor)?)?;
        }
    }
    varmap.save(dir.join(file))?;
    Ok(())
}
