//! The backend benchmark's merge and join (`bench/backend/src/tsv.rs`, compiled here too:
//! the benchmark's own packages need a GPU to run): per row the fastest and slowest run, and
//! the join's count of slower rows that the run-to-run spread leaves standing.

#[path = "../../bench/backend/src/tsv.rs"]
#[allow(dead_code)]
mod tsv;

use std::path::Path;

fn run_file(dir: &Path, name: &str, rows: &[(&str, f64)]) -> String {
    let mut s = String::from("# method: test\n");
    s.push_str(tsv::HEADER);
    s.push('\n');
    for (bench, us) in rows {
        s.push_str(&format!("{bench}\t1x1\tf32\t{us}\n"));
    }
    let path = dir.join(name);
    std::fs::write(&path, s).unwrap();
    path.to_str().unwrap().to_string()
}

fn rows_of(path: &str) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split('\t').map(String::from).collect())
        .collect()
}

fn merged(dir: &Path, side: &str, runs: &[&[(&str, f64)]]) -> String {
    let inputs: Vec<String> = runs.iter().enumerate().map(|(i, r)| run_file(dir, &format!("{side}.run{i}.tsv"), r)).collect();
    let out = dir.join(format!("{side}.tsv")).to_str().unwrap().to_string();
    tsv::merge(&inputs, &out).unwrap();
    out
}

#[test]
fn merge_keeps_the_fastest_and_the_slowest_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = merged(dir.path(), "cuda", &[&[("a", 5.0), ("b", 9.0)], &[("a", 7.5), ("b", 8.0)], &[("a", 6.0)]]);
    let rows = rows_of(&out);
    assert_eq!(rows, vec![vec!["a", "1x1", "f32", "5.000", "7.500"], vec!["b", "1x1", "f32", "8.000", "9.000"]]);
    // a merged file merges again (its fastest and slowest runs kept)
    let again = dir.path().join("again.tsv").to_str().unwrap().to_string();
    tsv::merge(&[out.clone(), run_file(dir.path(), "late.tsv", &[("a", 4.0)])], &again).unwrap();
    assert_eq!(rows_of(&again)[0], vec!["a", "1x1", "f32", "4.000", "7.500"]);
}

/// Row `slow` is below 0.95 with ROCm's fastest run above CUDA's slowest: named. Row `noisy`
/// is below 0.95 on the minima, but the two sides' runs overlap: counted, not named.
#[test]
fn join_names_the_slower_rows_beyond_the_spread() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = merged(dir.path(), "cuda", &[&[("slow", 10.0), ("noisy", 9.5), ("fast", 10.0)], &[("slow", 10.5), ("noisy", 18.7), ("fast", 10.0)]]);
    let rocm = merged(dir.path(), "rocm", &[&[("slow", 12.0), ("noisy", 12.2), ("fast", 9.0)], &[("slow", 12.5), ("noisy", 13.2), ("fast", 9.5)]]);
    let out = dir.path().join("joined.tsv").to_str().unwrap().to_string();
    tsv::join(&cuda, &rocm, &out).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    let spread: Vec<&str> = text.lines().filter(|l| l.starts_with("# spread:")).collect();
    assert_eq!(
        spread,
        vec!["# spread: 2 below 0.95, 1 of them with ROCm's fastest run slower than CUDA's slowest (the rest within the run-to-run spread): slow 1x1 f32 (0.833)"],
        "{text}"
    );
    // the joined rows keep their columns (cargo xtask bench report reads them)
    assert_eq!(text.lines().find(|l| l.starts_with("benchmark")).unwrap(), "benchmark\tshape\tdtype\tcuda_us\trocm_us\tratio");
    assert_eq!(rows_of(&out)[1], vec!["noisy", "1x1", "f32", "9.500", "12.200", "0.779"]);
}

/// Single runs carry no spread: the join says nothing about it.
#[test]
fn join_of_single_runs_has_no_spread_line() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = run_file(dir.path(), "cuda.tsv", &[("slow", 10.0)]);
    let rocm = run_file(dir.path(), "rocm.tsv", &[("slow", 12.0)]);
    let out = dir.path().join("joined.tsv").to_str().unwrap().to_string();
    tsv::join(&cuda, &rocm, &out).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("# spread"), "{text}");
    assert_eq!(rows_of(&out)[0], vec!["slow", "1x1", "f32", "10.000", "12.000", "0.833"]);
}

/// The merge of one run knows no spread: it writes no `us_max`, so the join names no row
/// as beyond it (with `us_max = us` every slower row would be).
#[test]
fn merge_of_one_run_writes_no_spread() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = merged(dir.path(), "cuda", &[&[("slow", 10.0)]]);
    let rocm = merged(dir.path(), "rocm", &[&[("slow", 12.0)]]);
    let text = std::fs::read_to_string(&cuda).unwrap();
    assert!(text.contains("# merged: one run (") && text.contains(&format!("\n{}\n", tsv::HEADER)), "{text}");
    assert_eq!(rows_of(&cuda), vec![vec!["slow", "1x1", "f32", "10.000"]]);
    let out = dir.path().join("joined.tsv").to_str().unwrap().to_string();
    tsv::join(&cuda, &rocm, &out).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("# spread"), "{text}");
}

#[test]
fn a_file_without_a_known_header_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.tsv");
    std::fs::write(&bad, "benchmark\tus\nx\t1\n").unwrap();
    let out = dir.path().join("out.tsv").to_str().unwrap().to_string();
    let err = tsv::merge(&[bad.to_str().unwrap().to_string()], &out).unwrap_err();
    assert!(err.contains("bad.tsv:1") && err.contains("expected the header"), "{err}");
}
