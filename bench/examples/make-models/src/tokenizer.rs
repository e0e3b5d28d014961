//! The made-up models' tokenizer: word level, split on whitespace. Special words first (the
//! ones the examples look up: `</s>` for `quantized`, `<|endoftext|>`/`<|im_end|>` for qwen
//! and mamba, `<pad>`/`</s>` as T5's pad/eos ids 0/1), then `t0000`, `t0001`, ...: every word
//! is 5 characters, so a generated text, spaced (TokenOutputStream) or not (t5's
//! id_to_token), reads back as exactly one token sequence. The specials are plain vocabulary
//! entries, not "added tokens", so decoding never drops them silently.

use anyhow::{Context, Result};
use std::path::Path;

pub const VOCAB_SIZE: usize = 1024;
pub const SPECIALS: [&str; 8] =
    ["<pad>", "</s>", "<unk>", "<|endoftext|>", "<|im_end|>", "<|im_start|>", "[CLS]", "[SEP]"];

pub fn word(i: usize) -> String {
    format!("t{i:04}")
}

/// The prompt of `n` words, the same for every run (words 0, 37, 74, ... of the plain vocabulary).
pub fn prompt(n: usize) -> String {
    let words = VOCAB_SIZE - SPECIALS.len();
    (0..n).map(|i| word(i * 37 % words)).collect::<Vec<_>>().join(" ")
}

pub fn write(path: &Path) -> Result<()> {
    write_with_decoder(path, serde_json::Value::Null, " ")
}

/// The same tokenizer with a byte-fallback decoder, the shape of a SentencePiece tokenizer's:
/// mistral.rs builds its token trie (llguidance's toktrie) only from a tokenizer whose
/// decoder is byte-level or byte-fallback. Decoded words are fused (`t0001t0037`), which
/// reads back as the same words (every word is 5 characters).
pub fn write_byte_fallback(path: &Path) -> Result<()> {
    let decoder = serde_json::json!({ "type": "Sequence", "decoders": [{ "type": "ByteFallback" }, { "type": "Fuse" }] });
    write_with_decoder(path, decoder, "")
}

/// Writes the tokenizer with `decoder`; decoded words are joined by `joint`.
fn write_with_decoder(path: &Path, decoder: serde_json::Value, joint: &str) -> Result<()> {
    let mut vocab = serde_json::Map::new();
    for (id, s) in SPECIALS.iter().enumerate() {
        vocab.insert(s.to_string(), id.into());
    }
    for i in 0..VOCAB_SIZE - SPECIALS.len() {
        vocab.insert(word(i), (SPECIALS.len() + i).into());
    }
    let json = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": { "type": "WhitespaceSplit" },
        "post_processor": null,
        "decoder": decoder,
        "model": { "type": "WordLevel", "vocab": vocab, "unk_token": "<unk>" },
    });
    std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
    // read back with the tokenizers crate the examples use: the prompt must round-trip
    let tok = tokenizers::Tokenizer::from_file(path).map_err(anyhow::Error::msg)?;
    let p = prompt(12);
    let enc = tok.encode(p.as_str(), true).map_err(anyhow::Error::msg)?;
    let back = tok.decode(enc.get_ids(), true).map_err(anyhow::Error::msg)?;
    let want = p.split(' ').collect::<Vec<_>>().join(joint);
    anyhow::ensure!(back == want, "tokenizer round trip: {p:?} came back as {back:?}");
    tok.get_vocab(true).get("</s>").context("</s> missing")?;
    Ok(())
}
