//! `tensor-parallel`: greedy decoding of a made-up llama-shaped model (src/model.rs) split
//! over one process per GPU, the all-reduces over RCCL; or, with `--single`, the whole model
//! in one process without a communicator: the reference run.sh compares with; or, with
//! `--shards W`, every rank's shard of a world of W in one process on one GPU, their partial
//! outputs summed here (the shard math of W GPUs, checked where only one is lent).
//!
//!   tensor-parallel --rank R --world N --id-file FILE --out PREFIX [options]
//!   tensor-parallel --single --out PREFIX [options]
//!   tensor-parallel --shards W --out PREFIX [options]
//!   tensor-parallel --compare REFERENCE.logits OTHER.logits --dtype f32|bf16
//!
//! `--compare` prints how far OTHER's logits are from REFERENCE's (top-1 agreement, NMSE)
//! and exits 1 when that is outside the dtype's bounds (src/logits.rs).
//!
//! Options: `--shape tiny|llama-7b` (default tiny: model::SHAPES), `--dtype f32|bf16|f16`
//! (default f32), `--prompt-len P` (default 8: a made-up prompt of P tokens), `--steps S`
//! (default 32), `--tokens FILE` (teacher-forced: feed that sequence instead of the model's
//! own choices), `--timeout-s T` (default 60: the communicator must be up within T s, else
//! every waiting rank fails with a clear error instead of hanging: a rank that never joins).
//! The model has no key/value cache: each step runs the whole sequence so far, so a long
//! prompt makes every step a prefill of that length.
//! Rank 0 makes the communicator's unique id and writes it to FILE (128 bytes as 256 hex
//! digits, written to FILE.tmp then renamed); the other ranks wait for it (same timeout).
//! Before the first step the ranks compare their settings (dtype, steps, shape, prompt) with
//! an all-gather: ranks started with different dtypes fail with an error naming both.
//! Rank 0 (or the single process) writes PREFIX.tokens (prompt and generated ids) and
//! PREFIX.logits (every step's logits: u32 steps, u32 vocab, f32 values), and prints the
//! tokens/s of the steps after the first and, over RCCL, the all-reduce time per token.

mod all_reduce;
mod logits;
mod model;
#[cfg(test)]
mod shard_check;

use all_reduce::AllReduce;
use candle_core::rocm_backend::candle_rocm_hip::driver::HipContext;
use candle_core::rocm_backend::candle_rocm_hip::nccl::safe::{Comm, Id};
use candle_core::{DType, Device};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

const PROMPT: [u32; 8] = [11, 97, 203, 5, 388, 41, 460, 150];

/// `len` made-up prompt tokens below `vocab`: PROMPT, then a fixed walk over the vocabulary.
fn prompt(len: usize, vocab: usize) -> Vec<u32> {
    (0..len).map(|i| if i < PROMPT.len() { PROMPT[i] } else { ((i * 7919 + 13) % vocab) as u32 }).collect()
}

struct Args {
    single: bool,
    /// `--shards W`: every rank of a world of W in this process
    shards: Option<usize>,
    shape: model::Config,
    prompt_len: usize,
    rank: usize,
    world: usize,
    id_file: Option<PathBuf>,
    out: PathBuf,
    dtype: DType,
    steps: usize,
    tokens: Option<PathBuf>,
    timeout: Duration,
}

fn parse_dtype(v: &str) -> Result<DType, String> {
    match v {
        "f32" => Ok(DType::F32),
        "bf16" => Ok(DType::BF16),
        "f16" => Ok(DType::F16),
        other => Err(format!("--dtype `{other}`: f32, bf16 or f16")),
    }
}

/// `--compare REFERENCE OTHER --dtype D`: prints the comparison; Ok(false) when it is
/// outside the dtype's bounds.
fn compare(args: &[String]) -> Result<bool, String> {
    let [reference, other, flag, dtype] = args else {
        return Err("usage: --compare REFERENCE.logits OTHER.logits --dtype f32|bf16".into());
    };
    if flag != "--dtype" {
        return Err(format!("--compare: `{flag}` where --dtype was expected"));
    }
    let bounds = logits::bounds(parse_dtype(dtype)?)?;
    let c = logits::Comparison::of(&logits::read(Path::new(reference))?, &logits::read(Path::new(other))?)?;
    println!("teacher-forced: {}", c.describe(&bounds));
    Ok(c.within(&bounds))
}

impl Args {
    /// Without a communicator: `--single` or `--shards W`.
    fn one_process(&self) -> bool {
        self.single || self.shards.is_some()
    }
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { single: false, shards: None, shape: model::SHAPES[0], prompt_len: PROMPT.len(), rank: 0, world: 1, id_file: None, out: PathBuf::new(), dtype: DType::F32, steps: 32, tokens: None, timeout: Duration::from_secs(60) };
    let mut out = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: String, flag: &str| v.parse::<usize>().map_err(|_| format!("{flag} `{v}` is not a number"));
        match flag.as_str() {
            "--single" => a.single = true,
            "--shards" => a.shards = Some(number(value()?, "--shards")?),
            "--prompt-len" => a.prompt_len = number(value()?, "--prompt-len")?,
            "--shape" => {
                let v = value()?;
                a.shape = *model::SHAPES.iter().find(|c| c.name == v).ok_or_else(|| {
                    format!("--shape `{v}`: {}", model::SHAPES.map(|c| c.name).join(" or "))
                })?
            }
            "--rank" => a.rank = number(value()?, "--rank")?,
            "--world" => a.world = number(value()?, "--world")?,
            "--id-file" => a.id_file = Some(value()?.into()),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--steps" => a.steps = number(value()?, "--steps")?,
            "--tokens" => a.tokens = Some(value()?.into()),
            "--timeout-s" => a.timeout = Duration::from_secs(number(value()?, "--timeout-s")? as u64),
            "--dtype" => a.dtype = parse_dtype(&value()?)?,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    a.out = out.ok_or("--out PREFIX is required")?;
    if a.prompt_len == 0 {
        return Err("--prompt-len must be at least 1".into());
    }
    if a.single && a.shards.is_some() {
        return Err("--single and --shards: one or the other".into());
    }
    if a.shards == Some(0) {
        return Err("--shards must be at least 1".into());
    }
    if !a.one_process() {
        if a.id_file.is_none() {
            return Err("--id-file FILE is required (or --single, or --shards W)".into());
        }
        if a.world == 0 || a.rank >= a.world {
            return Err(format!("--rank {} is not below --world {}", a.rank, a.world));
        }
    }
    Ok(a)
}

/// The unique id: made and written by rank 0, read by the others once it is there.
fn exchange_id(a: &Args, deadline: Instant) -> Result<Id, String> {
    let path = a.id_file.as_deref().expect("checked by parse_args");
    if a.rank == 0 {
        let id = Id::new().map_err(|e| format!("making the communicator id: {e}"))?;
        let hex: String = id.internal().iter().map(|b| format!("{:02x}", *b as u8)).collect();
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, hex + "\n").and_then(|_| std::fs::rename(&tmp, path)).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(id);
    }
    loop {
        match std::fs::read_to_string(path) {
            Ok(text) => return parse_id(path, text.trim()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("rank {}: no communicator id from rank 0 in {}: {e} (did rank 0 start?)", a.rank, path.display())),
        }
    }
}

fn parse_id(path: &Path, hex: &str) -> Result<Id, String> {
    let bad = |why: String| format!("{}: not a communicator id: {why} (rank 0 writes 128 bytes as 256 hex digits)", path.display());
    if hex.len() != 256 {
        return Err(bad(format!("{} characters", hex.len())));
    }
    let bytes = (0..128).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)).collect::<Result<Vec<u8>, _>>().map_err(|e| bad(e.to_string()))?;
    Id::from_bytes(&bytes).map_err(|e| bad(e.to_string()))
}

/// Fails every rank whose settings differ from another rank's (dtype, steps, model shape):
/// collectives over mismatched buffers would hang or mix types.
fn check_same_settings(comm: &Comm, a: &Args) -> Result<(), String> {
    let dtype_code = match a.dtype { DType::F32 => 0, DType::BF16 => 1, _ => 2 };
    let shape = model::SHAPES.iter().position(|c| *c == a.shape).expect("a shape of SHAPES") as i32;
    let mine = [dtype_code, a.steps as i32, shape, a.prompt_len as i32];
    let stream = comm.stream();
    let send = stream.memcpy_stod(&mine).map_err(|e| format!("{e:?}"))?;
    let mut all = stream.alloc_zeros::<i32>(mine.len() * a.world).map_err(|e| format!("{e:?}"))?;
    comm.all_gather(&send, &mut all).map_err(|e| format!("all_gather of the settings: {e}"))?;
    let all = stream.memcpy_dtov(&all).map_err(|e| format!("{e:?}"))?;
    for (r, theirs) in all.chunks(mine.len()).enumerate() {
        if theirs != mine {
            let name = |c: i32| ["f32", "bf16", "f16"].get(c as usize).copied().unwrap_or("?");
            let shape = |c: i32| model::SHAPES.get(c as usize).map_or("?", |c| c.name);
            return Err(format!(
                "rank {}: rank {r} runs with other settings: dtype {} / steps {} / shape {} / prompt {}, this rank dtype {} / steps {} / shape {} / prompt {}",
                a.rank, name(theirs[0]), theirs[1], shape(theirs[2]), theirs[3], name(mine[0]), mine[1], shape(mine[2]), mine[3]
            ));
        }
    }
    Ok(())
}

fn run(a: &Args) -> Result<(), String> {
    // the id first: a corrupt or truncated id file is said before anything else
    let deadline = Instant::now() + a.timeout;
    let id = if a.one_process() { None } else { Some(exchange_id(a, deadline)?) };
    let gpus = HipContext::device_count().map_err(|e| format!("counting GPUs: {e:?}"))? as usize;
    let ordinal = if a.one_process() { 0 } else { a.rank };
    if ordinal >= gpus {
        return Err(format!("rank {}: world size {} needs {} GPUs, this machine has {gpus}", a.rank, a.world, a.world));
    }
    let device = Device::new_rocm(ordinal).map_err(|e| e.to_string())?;
    let comm = if let Some(id) = id {
        // a rank that never joins leaves ncclCommInitRank waiting: the watchdog ends this
        // process with an error instead of letting it hang
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let (rank, world, timeout) = (a.rank, a.world, a.timeout);
        std::thread::spawn(move || {
            if wait.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_err() {
                eprintln!("error: rank {rank}: the communicator of {world} ranks was not up within {} s: a rank never joined", timeout.as_secs());
                std::process::exit(3);
            }
        });
        let stream = device.as_rocm_device().map_err(|e| e.to_string())?.rocm_stream();
        let comm = Comm::from_rank(stream, a.rank, a.world, id).map_err(|e| format!("rank {}: {e}", a.rank))?;
        let _ = done.send(());
        check_same_settings(&comm, a)?;
        Some(Rc::new(comm))
    } else {
        None
    };
    let is_writer = a.one_process() || a.rank == 0;
    let (ranks, sum) = match (comm, a.shards) {
        (Some(comm), _) => (model::Ranks::one(a.rank, a.world), model::Sum::AllReduce(AllReduce::new(comm))),
        (None, Some(world)) => (model::Ranks::all(world), model::Sum::Here),
        (None, None) => (model::Ranks::whole(), model::Sum::Here),
    };
    let max_len = a.prompt_len + a.steps;
    let model = model::Model::new(a.shape, ranks, sum, a.dtype, &device, max_len).map_err(|e| e.to_string())?;
    let forced: Option<Vec<u32>> = match &a.tokens {
        Some(p) => Some(
            std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?
                .split_whitespace().map(|w| w.parse().map_err(|_| format!("{}: `{w}` is not a token id", p.display()))).collect::<Result<_, _>>()?,
        ),
        None => None,
    };
    let mut tokens = prompt(a.prompt_len, a.shape.vocab);
    let mut all_logits = Vec::new();
    // timed from the end of the first step: it loads the kernels' code objects
    let mut start = Instant::now();
    let (mut all_reduce_gpu_ms, mut all_reduce_host_ms) = (0.0, 0.0);
    for step in 0..a.steps {
        if step == 1 {
            start = Instant::now();
        }
        let logits = model.next_logits(&tokens).map_err(|e| format!("step {step}: {e}"))?;
        // (the logits are on the host: every all-reduce of the step has finished)
        let spent = model.take_all_reduce_time().map_err(|e| format!("step {step}: {e}"))?;
        if step >= 1 {
            all_reduce_gpu_ms += spent.gpu_ms;
            all_reduce_host_ms += spent.host_ms;
        }
        let next = match &forced {
            Some(f) => *f.get(a.prompt_len + step).ok_or_else(|| format!("--tokens has fewer than {} tokens", a.prompt_len + a.steps))?,
            None => logits::argmax(&logits),
        };
        tokens.push(next);
        all_logits.push(logits);
    }
    let secs = start.elapsed().as_secs_f64();
    let timed = a.steps.saturating_sub(1).max(1);
    if is_writer {
        let text: Vec<String> = tokens.iter().map(u32::to_string).collect();
        let out = |ext: &str| PathBuf::from(format!("{}.{ext}", a.out.display()));
        std::fs::write(out("tokens"), text.join(" ") + "\n").map_err(|e| format!("{}: {e}", out("tokens").display()))?;
        logits::write(&out("logits"), &all_logits, a.shape.vocab)?;
        let how = match a.shards {
            Some(w) => format!("{w} shards in one process"),
            None if a.single => "single process".into(),
            None => format!("RCCL, world {}", a.world),
        };
        println!(
            "{timed} steps in {secs:.3} s: {:.1} tokens/s ({how}, shape {}, {:?}, prompt {})",
            timed as f64 / secs, a.shape.name, a.dtype, a.prompt_len
        );
        if !a.one_process() {
            let per_token = |ms: f64| (ms / timed as f64, 100.0 * ms / 1e3 / secs);
            let ((gpu, gpu_pct), (host, host_pct)) = (per_token(all_reduce_gpu_ms), per_token(all_reduce_host_ms));
            println!("all-reduce: {gpu:.3} ms per token ({gpu_pct:.1}% of the step time) on the GPU, {host:.3} ms ({host_pct:.1}%) on the host in the calls");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.split_first() {
        Some((first, rest)) if first == "--compare" => compare(rest),
        _ => parse_args().and_then(|a| run(&a)).map(|()| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
