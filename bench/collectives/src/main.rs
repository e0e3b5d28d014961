//! `allreduce-bandwidth`: the all-reduce's time per call and bandwidth over message sizes,
//! through our HIP layer's RCCL module (`candle_rocm_hip::nccl`, librccl.so.1; on NVIDIA
//! hip-on-cuda forwards it to NCCL) and through NCCL directly (`cudarc::nccl`, what Candle's
//! CUDA backend uses), side by side in one run: one process per GPU, both communicators in
//! each process. See `USAGE`; run by run.sh.

mod ids;
mod paths;

use candle_rocm_hip::driver::HipContext;
use paths::{AllReduce, Layer, Nccl};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "\
usage: allreduce-bandwidth --rank R --world N --id-file FILE --out TSV [options]

One process per GPU (rank R on GPU R). Each process joins two communicators, one through
candle-rocm-hip's RCCL module (librccl.so.1) and one through cudarc's NCCL module
(libnccl.so.2 directly), then times an out-of-place f32 sum all-reduce through both for
every message size min, 2*min, 4*min, ... up to max. Rank 0 makes both unique ids and
writes them to FILE (FILE.tmp, then renamed); the other ranks wait for FILE. Remove a
stale FILE before starting the ranks. Rank 0 writes TSV (`# key: value` notes first).

options:
  --min-bytes B   smallest message (default 8192; a multiple of 4: f32 elements)
  --max-bytes B   largest message (default 1073741824)
  --timeout-s T   the id file and both communicators must be there within T s, else the
                  process fails saying which rank never joined (default 60)
  --help          this text";

const WARMUP_CALLS: usize = 5;
const CALIBRATION_CALLS: usize = 3;
/// Timed calls per path and round: enough for about this long, within the bounds below.
const TARGET_SECONDS: f64 = 0.2;
const MIN_ITERS: usize = 5;
const MAX_ITERS: usize = 20_000;
/// Rounds of timing per size, in this order of paths (0: layer, 1: nccl); the best of each.
const ROUNDS: [usize; 4] = [0, 1, 1, 0];

#[derive(Debug)]
struct Args {
    rank: usize,
    world: usize,
    id_file: PathBuf,
    out: PathBuf,
    min_bytes: usize,
    max_bytes: usize,
    timeout: Duration,
}

/// `Ok(None)`: `--help`.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
    let (mut rank, mut world, mut id_file, mut out) = (None, None, None, None);
    let (mut min_bytes, mut max_bytes, mut timeout) = (8192usize, 1usize << 30, 60u64);
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: Result<String, String>| v.and_then(|v| v.parse::<usize>().map_err(|_| format!("{flag} `{v}` is not a number")));
        match flag.as_str() {
            "--rank" => rank = Some(number(value)?),
            "--world" => world = Some(number(value)?),
            "--id-file" => id_file = Some(PathBuf::from(value?)),
            "--out" => out = Some(PathBuf::from(value?)),
            "--min-bytes" => min_bytes = number(value)?,
            "--max-bytes" => max_bytes = number(value)?,
            "--timeout-s" => timeout = number(value)? as u64,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let a = Args {
        rank: rank.ok_or("--rank R is required")?,
        world: world.ok_or("--world N is required")?,
        id_file: id_file.ok_or("--id-file FILE is required")?,
        out: out.ok_or("--out TSV is required")?,
        min_bytes,
        max_bytes,
        timeout: Duration::from_secs(timeout),
    };
    if a.world == 0 || a.rank >= a.world {
        return Err(format!("--rank {} is not below --world {}", a.rank, a.world));
    }
    if a.min_bytes == 0 || a.min_bytes % 4 != 0 {
        return Err(format!("--min-bytes {} is not a positive multiple of 4 (f32 elements)", a.min_bytes));
    }
    if a.max_bytes < a.min_bytes {
        return Err(format!("--max-bytes {} is below --min-bytes {}", a.max_bytes, a.min_bytes));
    }
    Ok(Some(a))
}

/// The message sizes: min, 2*min, 4*min, ... while at most max.
fn sizes(min: usize, max: usize) -> Vec<usize> {
    std::iter::successors(Some(min), |s| s.checked_mul(2)).take_while(|&s| s <= max).collect()
}

/// Timed calls for a per-call time estimate (the slowest path on the slowest rank).
fn iterations(estimate_s: f64) -> usize {
    ((TARGET_SECONDS / estimate_s.max(1e-9)).ceil() as usize).clamp(MIN_ITERS, MAX_ITERS)
}

/// nccl-tests' bus bandwidth factor of an all-reduce over `world` ranks: 2(n-1)/n.
fn busbw_factor(world: usize) -> f64 {
    2.0 * (world as f64 - 1.0) / world as f64
}

const HEADER: &str = "bytes\titers\tlayer_us\tnccl_us\tlayer_algbw_gbs\tlayer_busbw_gbs\tnccl_algbw_gbs\tnccl_busbw_gbs\tratio";

/// One TSV row: times per call in seconds; GB/s are 1e9 bytes per second (as nccl-tests).
fn row(bytes: usize, iters: usize, layer_s: f64, nccl_s: f64, world: usize) -> String {
    let algbw = |s: f64| bytes as f64 / s / 1e9;
    let f = busbw_factor(world);
    format!(
        "{bytes}\t{iters}\t{:.2}\t{:.2}\t{:.3}\t{:.3}\t{:.3}\t{:.3}\t{:.3}",
        layer_s * 1e6,
        nccl_s * 1e6,
        algbw(layer_s),
        algbw(layer_s) * f,
        algbw(nccl_s),
        algbw(nccl_s) * f,
        nccl_s / layer_s
    )
}

/// Seconds per call over `iters` calls, from before the first to the stream synchronize after the last.
fn time_calls(path: &mut dyn AllReduce, count: usize, iters: usize) -> Result<f64, String> {
    path.synchronize()?;
    let start = Instant::now();
    for _ in 0..iters {
        path.all_reduce(count)?;
    }
    path.synchronize()?;
    Ok(start.elapsed().as_secs_f64() / iters as f64)
}

/// The ids: made and written by rank 0, read by the others (no GPU touched before).
fn exchange_ids(a: &Args, deadline: Instant) -> Result<[[u8; ids::ID_BYTES]; 2], String> {
    if a.rank != 0 {
        return ids::wait_and_read(&a.id_file, a.rank, a.timeout, deadline);
    }
    let layer = candle_rocm_hip::nccl::safe::Id::new().map_err(|e| format!("layer: making the communicator id: {e}"))?;
    let nccl = cudarc::nccl::safe::Id::new().map_err(|e| format!("nccl: making the communicator id: {e:?}"))?;
    let made = [layer.internal().map(|b| b as u8), nccl.internal().map(|b| b as u8)];
    ids::write_atomically(&a.id_file, &ids::format([&made[0], &made[1]]))?;
    Ok(made)
}

fn run(a: &Args) -> Result<(), String> {
    let deadline = Instant::now() + a.timeout;
    // the id file first when another rank made it: a missing or corrupt file is said before anything else
    let mut read = None;
    if a.rank != 0 {
        read = Some(exchange_ids(a, deadline)?);
    }
    paths::check_cudarc_libraries()?;
    let id_bytes = match read {
        Some(ids) => ids,
        None => exchange_ids(a, deadline)?,
    };
    let gpus = HipContext::device_count().map_err(|e| format!("counting GPUs: {e:?}"))? as usize;
    if a.rank >= gpus {
        return Err(format!("rank {}: world size {} needs {} GPUs, this machine has {gpus}", a.rank, a.world, a.world));
    }
    let gpu = HipContext::new(a.rank).and_then(|c| c.name()).map_err(|e| format!("GPU {}: {e:?}", a.rank))?;

    // both communicators, in the same order on every rank; a rank that never joins leaves
    // ncclCommInitRank waiting: the watchdog ends this process with an error instead
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let (rank, world, timeout) = (a.rank, a.world, a.timeout);
    std::thread::spawn(move || {
        if wait.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_err() {
            eprintln!("error: rank {rank}: the communicators of {world} ranks were not up within {} s: a rank never joined", timeout.as_secs());
            std::process::exit(3);
        }
    });
    let max_count = sizes(a.min_bytes, a.max_bytes).last().copied().unwrap_or(a.min_bytes) / 4;
    let values = vec![(a.rank + 1) as f32; max_count];
    let mut layer = Layer::new(a.rank, a.rank, a.world, &id_bytes[0], &values)?;
    let mut nccl = Nccl::new(a.rank, a.rank, a.world, &id_bytes[1], &values)?;
    drop(values);
    let _ = done.send(());
    let (layer_version, nccl_version) = paths::versions();
    let expected = (a.world * (a.world + 1) / 2) as f32;

    let mut rows = Vec::new();
    if a.rank == 0 {
        println!("{HEADER}");
    }
    for bytes in sizes(a.min_bytes, a.max_bytes) {
        let count = bytes / 4;
        let mut estimate = 0f64;
        for which in [0, 1] {
            let path: &mut dyn AllReduce = if which == 0 { &mut layer } else { &mut nccl };
            for _ in 0..WARMUP_CALLS {
                path.all_reduce(count)?;
            }
            estimate = estimate.max(time_calls(path, count, CALIBRATION_CALLS)?);
        }
        // every rank must make the same number of calls: the slowest rank's estimate decides
        let iters = iterations(layer.max_over_ranks(estimate)?);
        let mut best = [f64::INFINITY; 2];
        for which in ROUNDS {
            layer.max_over_ranks(0.0)?; // a barrier: the ranks start each round together
            let path: &mut dyn AllReduce = if which == 0 { &mut layer } else { &mut nccl };
            best[which] = best[which].min(time_calls(path, count, iters)?);
        }
        // the collective is as slow as its slowest rank
        let (layer_s, nccl_s) = (layer.max_over_ranks(best[0])?, layer.max_over_ranks(best[1])?);
        for (name, path) in [("layer", &layer as &dyn AllReduce), ("nccl", &nccl as &dyn AllReduce)] {
            let got = path.sample(count)?;
            if let Some((i, v)) = got.iter().enumerate().find(|(_, v)| **v != expected) {
                return Err(format!("{name}: the all-reduce of {count} f32 gave {v} at sampled element {i}, expected {expected} (the sum of 1..={})", a.world));
            }
        }
        let line = row(bytes, iters, layer_s, nccl_s, a.world);
        if a.rank == 0 {
            println!("{line}");
        }
        rows.push(line);
    }
    if a.rank != 0 {
        return Ok(());
    }
    let version = |r: &Result<i32, String>| r.as_ref().map(|v| paths::version_text(*v)).unwrap_or_else(|e| format!("unknown ({e})"));
    let mut notes = vec![
        format!("gpu: {gpu}"),
        format!("world: {} processes, rank r on GPU r (this machine has {gpus})", a.world),
        format!("nccl version: {} through the layer (RCCL's ncclGetVersion), {} through cudarc", version(&layer_version), version(&nccl_version)),
        "layer: candle_rocm_hip::nccl::safe::Comm::all_reduce, RCCL's C API in librccl.so.1 (ROCm 7.2's ABI); here hip-on-cuda forwards it to NVIDIA's libnccl.so.2; a HipContext::new_stream stream, event tracking on (as Candle's ROCm device)".to_string(),
        "nccl: cudarc 0.19.10 cudarc::nccl::safe::Comm::all_reduce on libnccl.so.2 directly (what Candle's CUDA backend uses); a CudaContext::new_stream stream, event tracking on (as Candle's CUDA device)".to_string(),
        format!(
            "method: out-of-place f32 sum all-reduce; per size and path {WARMUP_CALLS} warm-up calls, then iters calls (about {TARGET_SECONDS} s, {MIN_ITERS}..={MAX_ITERS}, same on every rank and path) timed on the host from the first call to the stream synchronize after the last; the best of 2 rounds (order layer, nccl, nccl, layer), the slowest rank's; every result checked (sum of 1..=world)"
        ),
        "columns: us per call; algbw = bytes / time (GB/s, 1e9 bytes); busbw = algbw * 2(n-1)/n as nccl-tests prints; ratio = nccl_us / layer_us (>= 1: the layer at least as fast)".to_string(),
    ];
    if a.world == 1 {
        notes.push("world 1: busbw is 0 by that formula (no data crosses GPUs); the time per call measures each path's overhead (the all-reduce of one rank is a device copy)".to_string());
    }
    let mut text: String = notes.iter().map(|n| format!("# {n}\n")).collect();
    text.push_str(HEADER);
    text.push('\n');
    rows.iter().for_each(|r| {
        text.push_str(r);
        text.push('\n');
    });
    ids::write_atomically(&a.out, &text)?;
    eprintln!("wrote {}", a.out.display());
    Ok(())
}

fn main() -> ExitCode {
    match parse_args(std::env::args().skip(1)) {
        Ok(None) => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Ok(Some(a)) => match run(&a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Option<Args>, String> {
        parse_args(s.split_whitespace().map(String::from))
    }

    #[test]
    fn arguments_are_checked() {
        let a = args("--rank 1 --world 2 --id-file i --out o").unwrap().unwrap();
        assert_eq!((a.rank, a.world, a.min_bytes, a.max_bytes), (1, 2, 8192, 1 << 30));
        assert!(args("--help").unwrap().is_none());
        assert_eq!(args("--world 2 --id-file i --out o").unwrap_err(), "--rank R is required");
        assert_eq!(args("--rank 2 --world 2 --id-file i --out o").unwrap_err(), "--rank 2 is not below --world 2");
        assert_eq!(args("--rank x").unwrap_err(), "--rank `x` is not a number");
        assert_eq!(args("--rank").unwrap_err(), "--rank needs a value");
        assert!(args("--rank 0 --world 1 --id-file i --out o --min-bytes 6").unwrap_err().contains("multiple of 4"));
        assert!(args("--rank 0 --world 1 --id-file i --out o --max-bytes 4096").unwrap_err().contains("below --min-bytes 8192"));
        assert_eq!(args("--bogus").unwrap_err(), "unknown argument `--bogus`");
    }

    #[test]
    fn sizes_double_from_min_to_max() {
        let s = sizes(8192, 1 << 30);
        assert_eq!((s.len(), s[0], s[1], *s.last().unwrap()), (18, 8192, 16384, 1 << 30));
        assert_eq!(sizes(8192, 30000), [8192, 16384]);
    }

    #[test]
    fn iterations_are_bounded() {
        assert_eq!(iterations(0.001), 200);
        assert_eq!(iterations(1e-7), MAX_ITERS);
        assert_eq!(iterations(1.0), MIN_ITERS);
    }

    #[test]
    fn rows_give_nccl_tests_bandwidths_and_the_ratio() {
        // 1 GB in 10 ms: 100 GB/s algbw; 4 ranks: busbw 150 GB/s; nccl 20 ms: ratio 2
        let r = row(1_000_000_000, 7, 0.010, 0.020, 4);
        assert_eq!(r, "1000000000\t7\t10000.00\t20000.00\t100.000\t150.000\t50.000\t75.000\t2.000");
        assert!(row(8192, 5, 1e-5, 1e-5, 1).ends_with("\t0.000\t0.819\t0.000\t1.000"));
        assert_eq!(HEADER.split('\t').count(), r.split('\t').count());
    }
}
