//! Flash attention, ours against Dao's: one Candle program built twice, stock crates.io
//! candle-flash-attn 0.11.1 with CUDA (Dao's kernels) and generated/candle-flash-attn with
//! `rocm` (candle-rocm's own `run_mha`), run on the same GPU by bench/flash-attn/run.sh.
//!
//! Usage:
//!   flash-attn-bench-{cuda,rocm} errors OUT.tsv
//!       every accuracy case of candle-bench-fixtures' `attention` (the ROCm-vs-CPU test's):
//!       max |flash - f32 CPU reference| and the dtype's bound, one row per case
//!   flash-attn-bench-{cuda,rocm} speed OUT.tsv [--filter SUBSTR]
//!       forward time of candle-flash-attn and of the unfused path (matmul, softmax, matmul
//!       through the backend) for h 32, h_k 8, d 64/128, b 1 and 8, seqlen 512 to 32k,
//!       causal and not, and decode (one query over 1k to 32k keys, paged in blocks of 256)
//!
//! Timing: one warm-up call, then calls each followed by `device.synchronize()` until at
//! least 3 calls and 300 ms (at most 20); the row is the median call. The working set is
//! computed from the shapes: the tensors alive at the path's peak (q, k, v, the output; the
//! unfused path adds the heads-expanded k and v, the scores, the probabilities and the mask).
//! A path that fails (out of memory) gets its error in the row instead of a time.

use std::process::ExitCode;
use std::time::Instant;

use candle_bench_fixtures::attention::{cases, max_error, uniform};
use candle_bench_fixtures::{gpu_device, BACKEND};
use candle_core::{DType, Device, Result, Tensor};

const H: usize = 32;
const HK: usize = 8;

/// One speed configuration.
#[derive(Clone, Copy, Debug)]
struct Config {
    b: usize,
    sq: usize,
    sk: usize,
    d: usize,
    causal: bool,
    /// K/V paged in blocks of this many tokens (decode).
    paged: Option<usize>,
}

impl Config {
    fn name(&self) -> String {
        let kind = if self.paged.is_some() { "decode" } else { "prefill" };
        format!("{kind} b{} q{} k{} h{H}/{HK} d{}{}", self.b, self.sq, self.sk, self.d, if self.causal { " causal" } else { "" })
    }

    /// Multiply-adds of Q·Kᵀ and P·V, times 2; half when causal over a square.
    fn flops(&self) -> f64 {
        let full = 4.0 * (self.b * H * self.sq * self.sk * self.d) as f64;
        if self.causal && self.sq == self.sk {
            full / 2.0
        } else {
            full
        }
    }

    /// Bytes of q, k, v and the output (f16).
    fn io_bytes(&self) -> usize {
        2 * (2 * self.b * self.sq * H * self.d + 2 * self.b * self.sk * HK * self.d)
    }

    /// The unfused path's peak: io, k and v expanded to every head, scores and
    /// probabilities, the causal mask.
    fn unfused_bytes(&self) -> usize {
        let scores = self.b * H * self.sq * self.sk;
        self.io_bytes() + 2 * (2 * self.b * H * self.sk * self.d + 2 * scores + if self.causal { self.sq * self.sk } else { 0 })
    }
}

fn configs() -> Vec<Config> {
    let mut out = Vec::new();
    for d in [64, 128] {
        for causal in [false, true] {
            for (b, s) in [(1, 512), (8, 512), (1, 2048), (8, 2048), (1, 8192), (8, 8192), (1, 32768)] {
                out.push(Config { b, sq: s, sk: s, d, causal, paged: None });
            }
        }
    }
    for b in [1, 8] {
        for sk in [1024, 4096, 16384, 32768] {
            out.push(Config { b, sq: 1, sk, d: 128, causal: true, paged: Some(256) });
        }
    }
    out
}

fn random(shape: (usize, usize, usize, usize), seed: &str, dev: &Device) -> Result<Tensor> {
    let v = uniform(shape.0 * shape.1 * shape.2 * shape.3, candle_bench_fixtures::seed_of(seed));
    Tensor::from_vec(v, shape, &Device::Cpu)?.to_dtype(DType::F16)?.to_device(dev)
}

/// The median time of `f` in milliseconds.
fn time(dev: &Device, mut f: impl FnMut() -> Result<Tensor>) -> Result<f64> {
    drop(f()?);
    dev.synchronize()?;
    let start = Instant::now();
    let mut samples = Vec::new();
    while samples.len() < 3 || (start.elapsed().as_secs_f64() < 0.3 && samples.len() < 20) {
        let t = Instant::now();
        drop(f()?);
        dev.synchronize()?;
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    Ok(samples[samples.len() / 2])
}

/// Attention as Candle programs without flash attention compute it: (b, s, h, d) in and out.
fn unfused(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, scale: f64) -> Result<Tensor> {
    let (b, sk, hk, d) = k.dims4()?;
    let h = q.dim(2)?;
    let expand = |t: &Tensor| -> Result<Tensor> {
        t.transpose(1, 2)?.unsqueeze(2)?.broadcast_as((b, hk, h / hk, sk, d))?.reshape((b, h, sk, d))
    };
    let (k, v) = (expand(k)?, expand(v)?);
    let q = q.transpose(1, 2)?.contiguous()?;
    let s = (q.matmul(&k.t()?)? * scale)?;
    let s = match mask {
        Some(m) => s.broadcast_add(m)?,
        None => s,
    };
    candle_nn::ops::softmax_last_dim(&s)?.matmul(&v)?.transpose(1, 2)
}

/// The causal mask (bottom-right aligned, as flash attention's): 0 or -inf, (sq, sk).
fn causal_mask(sq: usize, sk: usize, dev: &Device) -> Result<Tensor> {
    let off = sk - sq;
    let m: Vec<f32> = (0..sq).flat_map(|i| (0..sk).map(move |j| if j <= i + off { 0.0 } else { f32::NEG_INFINITY })).collect();
    Tensor::from_vec(m, (sq, sk), &Device::Cpu)?.to_dtype(DType::F16)?.to_device(dev)
}

fn flash(c: &Config, q: &Tensor, k: &Tensor, v: &Tensor, scale: f32, dev: &Device) -> Result<Box<dyn FnMut() -> Result<Tensor>>> {
    let right = c.causal.then_some(0);
    match c.paged {
        None => {
            let (q, k, v) = (q.clone(), k.clone(), v.clone());
            Ok(Box::new(move || candle_flash_attn::flash_attn_alibi_windowed_softcap(&q, &k, &v, None, scale, None, right, 0.0)))
        }
        Some(block) => {
            // each sequence's pages in order, (b * sk / block, block, hk, d)
            let pages = c.sk / block;
            let kc = k.reshape((c.b * pages, block, HK, c.d))?;
            let vc = v.reshape((c.b * pages, block, HK, c.d))?;
            let table = Tensor::arange(0u32, (c.b * pages) as u32, dev)?.reshape((c.b, pages))?;
            let seqlens_q = Tensor::arange_step(0u32, (c.b * c.sq + 1) as u32, c.sq as u32, dev)?;
            let seqlens_k = Tensor::arange_step(0u32, (c.b * c.sk + 1) as u32, c.sk as u32, dev)?;
            let q = q.reshape((c.b * c.sq, H, c.d))?;
            let (sq, sk) = (c.sq, c.sk);
            Ok(Box::new(move || {
                candle_flash_attn::flash_attn_varlen_paged_windowed(&q, &kc, &vc, &seqlens_q, &seqlens_k, &table, None, sq, sk, scale, None, right, block, None)
            }))
        }
    }
}

fn speed(dev: &Device, out: &str, filter: Option<&str>) -> Result<()> {
    let mut rows = vec![format!("# backend: {BACKEND}"), format!("# device: {:?}", dev.location()), "config\tpath\tms\ttflops\tworking_mib\terror".to_string()];
    for c in configs().iter().filter(|c| filter.is_none_or(|f| c.name().contains(f))) {
        let name = c.name();
        let q = random((c.b, c.sq, H, c.d), &format!("q {name}"), dev)?;
        let k = random((c.b, c.sk, HK, c.d), &format!("k {name}"), dev)?;
        let v = random((c.b, c.sk, HK, c.d), &format!("v {name}"), dev)?;
        let scale = 1.0 / (c.d as f32).sqrt();
        let mut row = |path: &str, t: Result<f64>, bytes: usize| {
            let mib = bytes as f64 / (1 << 20) as f64;
            let line = match t {
                Ok(ms) => format!("{name}\t{path}\t{ms:.4}\t{:.2}\t{mib:.0}\t", c.flops() / (ms * 1e-3) / 1e12),
                Err(e) => format!("{name}\t{path}\t\t\t{mib:.0}\t{}", e.to_string().lines().next().unwrap_or("").replace('\t', " ")),
            };
            println!("{line}");
            rows.push(line);
        };
        let t = flash(c, &q, &k, &v, scale, dev).and_then(|mut f| time(dev, &mut f));
        row("flash", t, c.io_bytes());
        let t = (|| {
            let mask = if c.causal && c.sq > 1 { Some(causal_mask(c.sq, c.sk, dev)?) } else { None };
            time(dev, || unfused(&q, &k, &v, mask.as_ref(), scale as f64))
        })();
        row("unfused", t, c.unfused_bytes());
        dev.synchronize()?;
    }
    std::fs::write(out, rows.join("\n") + "\n").map_err(|e| candle_core::Error::Msg(format!("{out}: {e}")))
}

fn errors(dev: &Device, out: &str) -> Result<()> {
    let mut rows = vec![format!("# backend: {BACKEND}"), format!("# device: {:?}", dev.location()), "case\tmax_err\tbound\terror".to_string()];
    for c in cases() {
        let line = match max_error(&c, dev) {
            Ok(e) => format!("{}\t{e:.3e}\t{:.0e}\t", c.name(), c.bound()),
            Err(e) => format!("{}\t\t{:.0e}\t{}", c.name(), c.bound(), e.to_string().lines().next().unwrap_or("").replace('\t', " ")),
        };
        println!("{line}");
        rows.push(line);
    }
    std::fs::write(out, rows.join("\n") + "\n").map_err(|e| candle_core::Error::Msg(format!("{out}: {e}")))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = || -> Result<()> {
        let dev = gpu_device()?;
        match args.as_slice() {
            ["errors", out] => errors(&dev, out),
            ["speed", out] => speed(&dev, out, None),
            ["speed", out, "--filter", f] => speed(&dev, out, Some(f)),
            _ => candle_core::bail!("usage: flash-attn-bench errors OUT.tsv | speed OUT.tsv [--filter SUBSTR]"),
        }
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
