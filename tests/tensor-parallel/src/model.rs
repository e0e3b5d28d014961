//! A small llama-shaped transformer with made-up weights, split over `world` ranks the
//! Megatron way: attention heads and MLP columns are divided, the output projections are
//! row-parallel and end in an all-reduce; embedding, norms and the head are replicated.
//! Every rank draws the full weights from the same seed and keeps its shard, so any world
//! size computes the same function.

use crate::all_reduce::AllReduce;
use candle_core::rocm_backend::candle_rocm_hip::nccl::safe::Comm;
use candle_core::{DType, Device, Module, Result, Tensor, D};
use std::rc::Rc;

pub const VOCAB: usize = 512;
pub const HIDDEN: usize = 256;
pub const HEADS: usize = 8;
pub const HEAD_DIM: usize = HIDDEN / HEADS;
pub const INTERMEDIATE: usize = 768;
pub const LAYERS: usize = 2;

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

struct Shard {
    rank: usize,
    world: usize,
    dtype: DType,
    device: Device,
}

impl Shard {
    /// The full `(rows, cols)` weight, or its slice along `dim` for this rank.
    fn weight(&self, name: &str, rows: usize, cols: usize, split: Option<usize>) -> Result<Tensor> {
        let w = Tensor::from_vec(made_up(name, rows, cols, 1.0), (rows, cols), &Device::Cpu)?;
        let w = match split {
            Some(dim) => {
                let n = w.dim(dim)? / self.world;
                w.narrow(dim, self.rank * n, n)?
            }
            None => w,
        };
        w.to_dtype(self.dtype)?.to_device(&self.device)
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

struct Block {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    o: Tensor,
    gate: Tensor,
    up: Tensor,
    down: Tensor,
}

pub struct Model {
    embedding: Tensor,
    blocks: Vec<Block>,
    head: Tensor,
    heads_local: usize,
    all_reduce: Option<AllReduce>,
}

impl Model {
    /// `comm`: None runs the whole model in this process without a communicator (the
    /// reference); Some runs this rank's shard and all-reduces (world size 1 included).
    pub fn new(comm: Option<Rc<Comm>>, dtype: DType, device: &Device) -> Result<Self> {
        let (rank, world) = comm.as_ref().map_or((0, 1), |c| (c.rank(), c.world_size()));
        if HEADS % world != 0 || INTERMEDIATE % world != 0 {
            candle_core::bail!("world size {world} does not divide {HEADS} heads and {INTERMEDIATE} MLP columns");
        }
        let s = Shard { rank, world, dtype, device: device.clone() };
        let blocks = (0..LAYERS)
            .map(|l| {
                let n = |w: &str| format!("layers.{l}.{w}");
                Ok(Block {
                    q: s.weight(&n("q"), HIDDEN, HIDDEN, Some(0))?,
                    k: s.weight(&n("k"), HIDDEN, HIDDEN, Some(0))?,
                    v: s.weight(&n("v"), HIDDEN, HIDDEN, Some(0))?,
                    o: s.weight(&n("o"), HIDDEN, HIDDEN, Some(1))?,
                    gate: s.weight(&n("gate"), INTERMEDIATE, HIDDEN, Some(0))?,
                    up: s.weight(&n("up"), INTERMEDIATE, HIDDEN, Some(0))?,
                    down: s.weight(&n("down"), HIDDEN, INTERMEDIATE, Some(1))?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            embedding: s.weight("embedding", VOCAB, HIDDEN, None)?.affine((HIDDEN as f64).sqrt() / 3f64.sqrt(), 0.0)?,
            blocks,
            head: s.weight("head", VOCAB, HIDDEN, None)?.affine(4.0, 0.0)?,
            heads_local: HEADS / world,
            all_reduce: comm.map(|comm| AllReduce { comm }),
        })
    }

    fn reduce(&self, x: Tensor) -> Result<Tensor> {
        match &self.all_reduce {
            Some(op) => x.contiguous()?.apply_op1_no_bwd(op),
            None => Ok(x),
        }
    }

    /// The logits (f32, on the host) of the next token after `tokens`.
    pub fn next_logits(&self, tokens: &[u32]) -> Result<Vec<f32>> {
        let dev = self.embedding.device();
        let t = tokens.len();
        let mut x = self.embedding.embedding(&Tensor::new(tokens, dev)?)?;
        let mask: Vec<f32> = (0..t * t).map(|i| if i % t > i / t { f32::NEG_INFINITY } else { 0.0 }).collect();
        let mask = Tensor::from_vec(mask, (t, t), dev)?.to_dtype(x.dtype())?;
        for b in &self.blocks {
            let h = rms_norm(&x)?;
            let split = |w: &Tensor| -> Result<Tensor> { linear(&h, w)?.reshape((t, self.heads_local, HEAD_DIM))?.transpose(0, 1)?.contiguous() };
            let (q, k, v) = (split(&b.q)?, split(&b.k)?, split(&b.v)?);
            let att = (q.matmul(&k.t()?)? / (HEAD_DIM as f64).sqrt())?.broadcast_add(&mask)?;
            let att = candle_nn::ops::softmax_last_dim(&att)?.matmul(&v)?;
            let att = att.transpose(0, 1)?.reshape((t, self.heads_local * HEAD_DIM))?;
            x = (x + self.reduce(linear(&att, &b.o)?)?)?;
            let h = rms_norm(&x)?;
            let g = candle_nn::Activation::Silu.forward(&linear(&h, &b.gate)?)?;
            x = (x + self.reduce(linear(&(g * linear(&h, &b.up)?)?, &b.down)?)?)?;
        }
        let last = rms_norm(&x.narrow(0, t - 1, 1)?)?;
        linear(&last, &self.head)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1()
    }
}
