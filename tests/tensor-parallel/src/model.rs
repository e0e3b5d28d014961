//! A llama-shaped transformer with made-up weights, split over `world` ranks the Megatron
//! way: attention heads (query and key/value heads alike) and MLP columns are divided, the
//! output projections are row-parallel and end in a sum over the ranks; embedding, norms and
//! the head are replicated. Every rank draws the full weights from the same seed and keeps
//! contiguous copies of its shards (as llama_multiprocess's sharded loading gives them), so
//! any world size computes the same function.
//!
//! A process holds the shards of one or more ranks ([`Ranks`]): one rank of a world whose
//! sum is an all-reduce over the communicator, or every rank of a world summed in this
//! process (the one-device check of the shard math, see `shard_check.rs`).

use crate::all_reduce::{AllReduce, Spent};
use candle_core::{DType, Device, Module, Result, Tensor, D};
use std::ops::Range;

/// A model shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub name: &'static str,
    pub vocab: usize,
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub intermediate: usize,
    pub layers: usize,
}

impl Config {
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }
}

/// The shapes `--shape` names: a tiny model (the correctness runs), and llama-7B's widths
/// with 8 key/value heads and 8 layers (where splitting over GPUs pays).
pub const SHAPES: [Config; 2] = [
    Config { name: "tiny", vocab: 512, hidden: 256, heads: 8, kv_heads: 8, intermediate: 768, layers: 2 },
    Config { name: "llama-7b", vocab: 32000, hidden: 4096, heads: 32, kv_heads: 8, intermediate: 11008, layers: 8 },
];

/// xorshift64*, seeded per weight name: identical on every rank and build.
fn made_up(name: &str, rows: usize, cols: usize, scale: f32) -> Vec<f32> {
    let mut s = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3)) | 1;
    (0..rows * cols)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32;
            scale * (2.0 * u - 1.0) * (3f32 / cols as f32).sqrt()
        })
        .collect()
}

/// Which ranks' shards a process holds, of a world of `world` ranks.
#[derive(Clone, Debug)]
pub struct Ranks {
    pub world: usize,
    pub held: Range<usize>,
}

impl Ranks {
    /// The whole model: world 1.
    pub fn whole() -> Self {
        Self { world: 1, held: 0..1 }
    }
    pub fn one(rank: usize, world: usize) -> Self {
        Self { world, held: rank..rank + 1 }
    }
    /// Every rank of `world`, in one process.
    pub fn all(world: usize) -> Self {
        Self { world, held: 0..world }
    }
}

struct Loader<'a> {
    ranks: &'a Ranks,
    dtype: DType,
    device: &'a Device,
}

impl Loader<'_> {
    /// The `(rows, cols)` weight: with `split`, each held rank's contiguous slice along that
    /// dimension, else the full weight once.
    fn shards(&self, name: &str, rows: usize, cols: usize, split: Option<usize>) -> Result<Vec<Tensor>> {
        let w = Tensor::from_vec(made_up(name, rows, cols, 1.0), (rows, cols), &Device::Cpu)?;
        let parts = match split {
            Some(dim) => {
                let n = w.dim(dim)? / self.ranks.world;
                self.ranks.held.clone().map(|r| w.narrow(dim, r * n, n)?.contiguous()).collect::<Result<Vec<_>>>()?
            }
            None => vec![w],
        };
        parts.into_iter().map(|p| p.to_dtype(self.dtype)?.to_device(self.device)).collect()
    }
}

/// `x @ w^T` for a weight kept as `(out, in)`.
fn linear(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    x.broadcast_matmul(&w.t()?)
}

fn rms_norm(x: &Tensor) -> Result<Tensor> {
    let ones = Tensor::ones(x.dim(D::Minus1)?, x.dtype(), x.device())?;
    candle_nn::ops::rms_norm(x, &ones, 1e-6)
}

/// Each key/value head `n` times, for the query heads that share it: `(kv, t, d)` -> `(kv * n, t, d)`.
fn repeat_kv(x: Tensor, n: usize) -> Result<Tensor> {
    if n == 1 {
        return Ok(x);
    }
    let (kv, t, d) = x.dims3()?;
    x.unsqueeze(1)?.broadcast_as((kv, n, t, d))?.reshape((kv * n, t, d))
}

/// One rank's shard of one layer.
struct BlockShard {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    o: Tensor,
    gate: Tensor,
    up: Tensor,
    down: Tensor,
}

impl BlockShard {
    /// This shard's part of the attention output (to be summed over the ranks).
    fn attention(&self, h: &Tensor, mask: &Tensor, c: &Config, world: usize) -> Result<Tensor> {
        let t = h.dim(0)?;
        let (heads, kv, d) = (c.heads / world, c.kv_heads / world, c.head_dim());
        let split = |w: &Tensor, n: usize| -> Result<Tensor> { linear(h, w)?.reshape((t, n, d))?.transpose(0, 1)?.contiguous() };
        let q = split(&self.q, heads)?;
        let k = repeat_kv(split(&self.k, kv)?, heads / kv)?;
        let v = repeat_kv(split(&self.v, kv)?, heads / kv)?;
        let att = (q.matmul(&k.t()?)? / (d as f64).sqrt())?.broadcast_add(mask)?;
        let att = candle_nn::ops::softmax_last_dim(&att)?.matmul(&v)?;
        let att = att.transpose(0, 1)?.reshape((t, heads * d))?;
        linear(&att, &self.o)
    }

    /// This shard's part of the MLP output (to be summed over the ranks).
    fn mlp(&self, h: &Tensor) -> Result<Tensor> {
        let g = candle_nn::Activation::Silu.forward(&linear(h, &self.gate)?)?;
        linear(&(g * linear(h, &self.up)?)?, &self.down)
    }

    #[cfg(test)]
    fn weights(&self) -> [(&'static str, &Tensor); 7] {
        [("q", &self.q), ("k", &self.k), ("v", &self.v), ("o", &self.o), ("gate", &self.gate), ("up", &self.up), ("down", &self.down)]
    }
}

/// How the partial outputs of the row-parallel layers are summed over the ranks.
pub enum Sum {
    /// Over the shards this process holds (the whole model, or every rank of a world).
    Here,
    /// This process's one shard, all-reduced over the communicator.
    AllReduce(AllReduce),
}

pub struct Model {
    config: Config,
    world: usize,
    embedding: Tensor,
    /// Per layer, the shards of the held ranks.
    layers: Vec<Vec<BlockShard>>,
    head: Tensor,
    /// The causal mask for sequences up to `max_len`, narrowed per step.
    mask: Tensor,
    sum: Sum,
}

impl Model {
    /// The shards of `ranks` for sequences up to `max_len` tokens; `sum` is `Sum::AllReduce`
    /// only when one rank is held.
    pub fn new(config: Config, ranks: Ranks, sum: Sum, dtype: DType, device: &Device, max_len: usize) -> Result<Self> {
        let c = &config;
        let world = ranks.world;
        if c.heads % world != 0 || c.kv_heads % world != 0 || c.intermediate % world != 0 {
            candle_core::bail!("world size {world} does not divide {} heads, {} key/value heads and {} MLP columns", c.heads, c.kv_heads, c.intermediate);
        }
        if ranks.held.is_empty() || ranks.held.end > world {
            candle_core::bail!("ranks {:?} are not ranks of a world of {world}", ranks.held);
        }
        if matches!(sum, Sum::AllReduce(_)) && ranks.held.len() != 1 {
            candle_core::bail!("an all-reduce sums one shard per process, this one holds {}", ranks.held.len());
        }
        let l = Loader { ranks: &ranks, dtype, device };
        let (q_rows, kv_rows) = (c.heads * c.head_dim(), c.kv_heads * c.head_dim());
        let layers = (0..c.layers)
            .map(|i| {
                let n = |w: &str| format!("layers.{i}.{w}");
                let mut q = l.shards(&n("q"), q_rows, c.hidden, Some(0))?.into_iter();
                let mut k = l.shards(&n("k"), kv_rows, c.hidden, Some(0))?.into_iter();
                let mut v = l.shards(&n("v"), kv_rows, c.hidden, Some(0))?.into_iter();
                let mut o = l.shards(&n("o"), c.hidden, q_rows, Some(1))?.into_iter();
                let mut gate = l.shards(&n("gate"), c.intermediate, c.hidden, Some(0))?.into_iter();
                let mut up = l.shards(&n("up"), c.intermediate, c.hidden, Some(0))?.into_iter();
                let mut down = l.shards(&n("down"), c.hidden, c.intermediate, Some(1))?.into_iter();
                let mut shards = Vec::new();
                while let (Some(q), Some(k), Some(v), Some(o), Some(gate), Some(up), Some(down)) =
                    (q.next(), k.next(), v.next(), o.next(), gate.next(), up.next(), down.next())
                {
                    shards.push(BlockShard { q, k, v, o, gate, up, down });
                }
                Ok(shards)
            })
            .collect::<Result<_>>()?;
        let one = |name: &str, rows: usize| -> Result<Tensor> { Ok(l.shards(name, rows, c.hidden, None)?.remove(0)) };
        let mask: Vec<f32> = (0..max_len * max_len).map(|i| if i % max_len > i / max_len { f32::NEG_INFINITY } else { 0.0 }).collect();
        Ok(Self {
            config,
            world,
            embedding: one("embedding", c.vocab)?.affine((c.hidden as f64).sqrt() / 3f64.sqrt(), 0.0)?,
            layers,
            head: one("head", c.vocab)?.affine(4.0, 0.0)?,
            mask: Tensor::from_vec(mask, (max_len, max_len), device)?.to_dtype(dtype)?,
            sum,
        })
    }

    /// The sum over the ranks of the held shards' partial outputs.
    fn sum(&self, parts: Vec<Tensor>) -> Result<Tensor> {
        match &self.sum {
            Sum::AllReduce(op) => parts[0].contiguous()?.apply_op1_no_bwd(op),
            Sum::Here => {
                let mut parts = parts.into_iter();
                let first = parts.next().expect("a model holds at least one shard");
                parts.try_fold(first, |acc, p| acc + p)
            }
        }
    }

    /// The time spent in all-reduces since the last call (none without a communicator).
    pub fn take_all_reduce_time(&self) -> Result<Spent> {
        match &self.sum {
            Sum::AllReduce(op) => op.take(),
            Sum::Here => Ok(Spent::default()),
        }
    }

    /// The logits (f32, on the host) of the next token after `tokens`.
    pub fn next_logits(&self, tokens: &[u32]) -> Result<Vec<f32>> {
        let (c, dev) = (&self.config, self.embedding.device());
        let t = tokens.len();
        if t > self.mask.dim(0)? {
            candle_core::bail!("{t} tokens, the model was made for at most {}", self.mask.dim(0)?);
        }
        let mut x = self.embedding.embedding(&Tensor::new(tokens, dev)?)?;
        let mask = self.mask.narrow(0, 0, t)?.narrow(1, 0, t)?;
        for shards in &self.layers {
            let h = rms_norm(&x)?;
            let parts = shards.iter().map(|s| s.attention(&h, &mask, c, self.world)).collect::<Result<_>>()?;
            x = (x + self.sum(parts)?)?;
            let h = rms_norm(&x)?;
            let parts = shards.iter().map(|s| s.mlp(&h)).collect::<Result<_>>()?;
            x = (x + self.sum(parts)?)?;
        }
        let last = rms_norm(&x.narrow(0, t - 1, 1)?)?;
        linear(&last, &self.head)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1()
    }

    /// The shard weights that are not contiguous, named `layer.rank.weight`: none, as a
    /// device's matmul needs them (a narrowed view of the full weight is refused there).
    #[cfg(test)]
    pub fn non_contiguous_shards(&self) -> Vec<String> {
        let mut bad = Vec::new();
        for (i, shards) in self.layers.iter().enumerate() {
            for (r, s) in shards.iter().enumerate() {
                bad.extend(s.weights().iter().filter(|(_, w)| !w.is_contiguous()).map(|(n, _)| format!("layers.{i}.shard{r}.{n}")));
            }
        }
        bad
    }
}
