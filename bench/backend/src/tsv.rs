//! The backend benchmark's TSV files (see the crate docs in main.rs): one run's rows, the
//! merge of several runs (per row the fastest and the slowest run) and the join of the two
//! sides. Only std: the workspace's test crate compiles this file too
//! (`tests/tests/backend_bench_tsv.rs`), since the benchmark's own packages need a GPU to run.

use std::collections::HashMap;

pub const HEADER: &str = "benchmark\tshape\tdtype\tus";
/// A merged file's header: `us` the fastest run's time, `us_max` the slowest's.
const MERGED_HEADER: &str = "benchmark\tshape\tdtype\tus\tus_max";
const JOIN_HEADER: &str = "benchmark\tshape\tdtype\tcuda_us\trocm_us\tratio";

type Key = (String, String, String);

/// A row's time: one run's, or a merged file's fastest and slowest run.
#[derive(Clone, Copy)]
struct Time {
    us: f64,
    us_max: Option<f64>,
}

/// The rows of a benchmark TSV or a merged one (comments and the header skipped), in file order.
fn read_tsv(path: &str) -> std::result::Result<Vec<(Key, Time)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut rows = vec![];
    let mut fields = 0;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if fields == 0 {
            fields = match line {
                HEADER => 4,
                MERGED_HEADER => 5,
                _ => return Err(format!("{path}:{}: expected the header `{HEADER}` or `{MERGED_HEADER}`", i + 1)),
            };
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != fields {
            return Err(format!("{path}:{}: expected {fields} fields", i + 1));
        }
        let number = |x: &str| x.parse::<f64>().map_err(|_| format!("{path}:{}: bad number {x}", i + 1));
        let time = Time { us: number(f[3])?, us_max: if fields == 5 { Some(number(f[4])?) } else { None } };
        rows.push(((f[0].to_string(), f[1].to_string(), f[2].to_string()), time));
    }
    if fields == 0 {
        return Err(format!("{path}: no header"));
    }
    Ok(rows)
}

fn comments(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|t| t.lines().take_while(|l| l.starts_with('#')).map(String::from).collect())
        .unwrap_or_default()
}

/// Per benchmark the minimum over the runs (the least disturbed run), and the maximum beside it
/// (the run-to-run spread `join` weighs a difference against).
pub fn merge(inputs: &[String], out: &str) -> std::result::Result<(), String> {
    let mut order: Vec<Key> = vec![];
    let mut vals: HashMap<Key, Vec<f64>> = HashMap::new();
    for p in inputs {
        for (k, t) in read_tsv(p)? {
            if !vals.contains_key(&k) {
                order.push(k.clone());
            }
            vals.entry(k).or_default().extend([t.us].into_iter().chain(t.us_max));
        }
    }
    let mut s = String::new();
    for c in comments(&inputs[0]).iter().filter(|c| !c.starts_with("# error")) {
        s.push_str(c);
        s.push('\n');
    }
    // one time per row (a single run): no spread is known, so no us_max, which `join`
    // would otherwise take for one (every slower row beyond it)
    let spread = order.iter().any(|k| vals[k].len() > 1);
    if spread {
        s.push_str(&format!("# merged: per benchmark the minimum (us) and the maximum (us_max) over {} runs ({})\n", inputs.len(), inputs.join(", ")));
        s.push_str(MERGED_HEADER);
    } else {
        s.push_str(&format!("# merged: one run ({}): no spread (us_max) known\n", inputs.join(", ")));
        s.push_str(HEADER);
    }
    s.push('\n');
    for k in &order {
        let v = &vals[k];
        let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if spread {
            s.push_str(&format!("{}\t{}\t{}\t{min:.3}\t{max:.3}\n", k.0, k.1, k.2));
        } else {
            s.push_str(&format!("{}\t{}\t{}\t{min:.3}\n", k.0, k.1, k.2));
        }
    }
    std::fs::write(out, s).map_err(|e| format!("{out}: {e}"))
}

/// Below this ratio a row counts as slower (the "below 0.95").
pub const SLOW_RATIO: f64 = 0.95;

pub fn join(cuda: &str, rocm: &str, out: &str) -> std::result::Result<(), String> {
    let (a, b_rows) = (read_tsv(cuda)?, read_tsv(rocm)?);
    let mut order: Vec<Key> = a.iter().map(|(k, _)| k.clone()).collect();
    for (k, _) in &b_rows {
        if !order.contains(k) {
            order.push(k.clone());
        }
    }
    let b: HashMap<Key, Time> = b_rows.into_iter().collect();
    let amap: HashMap<Key, Time> = a.into_iter().collect();
    let fmt = |v: Option<&Time>| v.map(|x| format!("{:.3}", x.us)).unwrap_or_else(|| "NA".into());
    let (mut logsum, mut n, mut slow) = (0f64, 0usize, 0usize);
    // slower rows where ROCm's fastest run is slower than CUDA's slowest: a difference the
    // run-to-run spread of both sides does not cover (known only for merged files)
    let mut beyond: Vec<String> = vec![];
    let mut spread_known = true;
    let mut rows = String::new();
    println!("{:<36} {:<34} {:<6} {:>12} {:>12} {:>7}", "benchmark", "shape", "dtype", "cuda_us", "rocm_us", "ratio");
    for k in &order {
        let (x, y) = (amap.get(k), b.get(k));
        let ratio = match (x, y) {
            (Some(x), Some(y)) if y.us > 0.0 => {
                let r = x.us / y.us;
                logsum += r.ln();
                n += 1;
                if r < SLOW_RATIO {
                    slow += 1;
                    match x.us_max {
                        Some(cuda_max) if y.us_max.is_some() => {
                            if y.us > cuda_max {
                                beyond.push(format!("{} {} {} ({r:.3})", k.0, k.1, k.2));
                            }
                        }
                        _ => spread_known = false,
                    }
                }
                format!("{r:.3}")
            }
            _ => "NA".into(),
        };
        rows.push_str(&format!("{}\t{}\t{}\t{}\t{}\t{}\n", k.0, k.1, k.2, fmt(x), fmt(y), ratio));
        println!("{:<36} {:<34} {:<6} {:>12} {:>12} {:>7}", k.0, k.1, k.2, fmt(x), fmt(y), ratio);
    }
    let mut s = String::new();
    s.push_str(&format!("# cuda: {cuda}\n# rocm: {rocm}\n# ratio = cuda_us / rocm_us (>= 1: the ROCm backend is at least as fast)\n"));
    // where and how each side was measured: its GPU, method and merged runs
    for (side, path) in [("cuda", cuda), ("rocm", rocm)] {
        for c in comments(path).iter().filter(|c| ["# gpu:", "# method:", "# merged:"].iter().any(|p| c.starts_with(p))) {
            s.push_str(&format!("# {side} {}\n", &c[2..]));
        }
    }
    let spread = if spread_known && slow > 0 {
        let names = if beyond.is_empty() { String::new() } else { format!(": {}", beyond.join(", ")) };
        format!("{slow} below {SLOW_RATIO}, {} of them with ROCm's fastest run slower than CUDA's slowest (the rest within the run-to-run spread){names}", beyond.len())
    } else {
        String::new()
    };
    if !spread.is_empty() {
        s.push_str(&format!("# spread: {spread}\n"));
    }
    s.push_str(JOIN_HEADER);
    s.push('\n');
    s.push_str(&rows);
    if n > 0 {
        println!("{n} benchmarks on both: geometric mean of the ratios {:.3}; {slow} below {SLOW_RATIO}", (logsum / n as f64).exp());
    }
    if !spread.is_empty() {
        println!("spread: {spread}");
    }
    std::fs::write(out, s).map_err(|e| format!("{out}: {e}"))
}
