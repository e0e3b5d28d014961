//! `cargo xtask ported-kernels`: every kernel of a CUDA crate's build present in its ported
//! twin's AMD build, per arch (docs/mistralrs.md).
//!
//! * `--record CUDA_TARGET --crates A,B --out FIXTURE` reads, with CUDA's cuobjdump, the
//!   kernels of the static libraries the stock build's build scripts made (cudaforge's
//!   `build_lib`: one object per kernel unit, `UNIT-HASH.o`) and writes them as
//!   `kernel CRATE/UNIT NAME` lines, the format of `hip_build::kernel_names::Reference`.
//! * `--check TARGET --reference FIXTURE --archs A,B` reads the kernels (`NAME.kd`) of each
//!   arch in every host object the ported build scripts compiled with hipcc
//!   (candle-rocm-build's `build_lib`, one object per unit) and compares.
//!
//! Kernel names compare demangled (c++filt), both sides' through the translator's own
//! identifier renames (`__nv_bfloat16` is `candle_bf16` on AMD), so a template instance
//! matches its translation. The kernels of CUB and thrust themselves (a unit's scan) are
//! not compared: AMD has rocPRIM's instead. For each arch, the check fails on a kernel
//! missing from a unit both builds compile, and on a unit the AMD build lacks that
//! `--left-out` does not name (a build script's compute-capability gate: Marlin, fp8, WMMA).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{bail, Context, Result};
use hip_build::kernel_names::{kernel_parity, Reference};

use crate::workspace::workspace_root;

#[derive(clap::Args)]
pub struct PortedKernelsArgs {
    /// A stock CUDA build's target directory (release): write its kernels to --out.
    #[arg(long, value_name = "CUDA_TARGET", conflicts_with = "check", requires_all = ["crates", "out"])]
    record: Option<PathBuf>,
    /// The crates whose build scripts' libraries are read.
    #[arg(long, value_delimiter = ',')]
    crates: Vec<String>,
    /// The fixture --record writes.
    #[arg(long, value_name = "FIXTURE")]
    out: Option<PathBuf>,
    /// The ported build's target directory (debug or release, built for --archs): check it.
    #[arg(long, value_name = "TARGET", requires_all = ["reference", "archs"])]
    check: Option<PathBuf>,
    /// The fixture --record wrote.
    #[arg(long, value_name = "FIXTURE")]
    reference: Option<PathBuf>,
    /// The AMD arches the ported build compiled.
    #[arg(long, value_delimiter = ',')]
    archs: Vec<String>,
    /// Units (`CRATE/UNIT`, `*` matches any text) the AMD build leaves out on purpose (a build
    /// script's compute-capability gate); any other unit it lacks fails the check.
    #[arg(long, value_delimiter = ',')]
    left_out: Vec<String>,
    /// CUDA's cuobjdump (default: the one gpu-program unpacks, target/bench-backend/cuda13).
    #[arg(long)]
    cuobjdump: Option<PathBuf>,
}

pub fn run(args: PortedKernelsArgs) -> Result<ExitCode> {
    let root = workspace_root();
    if let Some(target) = &args.record {
        let cuobjdump = args.cuobjdump.clone().unwrap_or_else(|| root.join("target/bench-backend/cuda13/root/nvidia/cu13/bin/cuobjdump"));
        let out = args.out.as_ref().expect("clap requires --out");
        let mut text = format!(
            "# The kernels of the stock CUDA build's static libraries ({}): the reference of the ported AMD build.\n\
             # Written by cargo xtask ported-kernels --record TARGET --crates {} --out FILE (cuobjdump -res-usage).\n",
            target.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            args.crates.join(",")
        );
        let mut count = 0;
        for krate in &args.crates {
            for (unit, names) in cuda_kernels(&cuobjdump, target, krate)? {
                for name in names {
                    text.push_str(&format!("kernel {krate}/{unit} {name}\n"));
                    count += 1;
                }
            }
        }
        crate::tree::write_file_atomic(out, text.as_bytes())?;
        println!("{count} kernels of {} written to {}", args.crates.join(", "), out.display());
        return Ok(ExitCode::SUCCESS);
    }
    let Some(target) = &args.check else { bail!("--record or --check") };
    let path = args.reference.as_ref().expect("clap requires --reference");
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let reference = Reference::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let reference = translated(&reference)?;
    let crates: BTreeSet<&str> = reference.kernels.keys().filter_map(|m| m.split_once('/')).map(|(c, _)| c).collect();
    let mut complete = true;
    for arch in &args.archs {
        let mut found = BTreeMap::new();
        for krate in &crates {
            for (unit, names) in amd_kernels(target, krate, arch)? {
                found.insert(format!("{krate}/{unit}"), names);
            }
        }
        let built: Reference = Reference { kernels: reference.kernels.iter().filter(|(m, _)| found.contains_key(*m)).map(|(m, k)| (m.clone(), k.clone())).collect(), launchers: BTreeSet::new() };
        let left_out: Vec<&String> = reference.kernels.keys().filter(|m| !found.contains_key(*m)).collect();
        let report = kernel_parity(&built, &found);
        let extra: usize = found.iter().map(|(m, names)| names.len().saturating_sub(built.kernels.get(m).map_or(0, BTreeSet::len))).sum();
        println!(
            "{arch}: {}/{} kernels of the {} units both builds compile; {} units the AMD build leaves out ({}); {extra} kernels the CUDA build lacks",
            report.present,
            report.total,
            built.kernels.len(),
            left_out.len(),
            left_out.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
        );
        for missing in &report.missing {
            println!("  missing on {arch}: {missing}");
        }
        let unexpected: Vec<&&String> = left_out.iter().filter(|m| !args.left_out.iter().any(|g| glob_matches(g, m))).collect();
        for unit in &unexpected {
            println!("  not built on {arch}, and not named by --left-out: {unit}");
        }
        complete &= report.missing.is_empty() && unexpected.is_empty();
    }
    Ok(if complete { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `pattern` with `*` matching any text (none else special) against the whole of `text`.
fn glob_matches(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(after) = text.strip_prefix(head) else { return false };
            (0..=after.len()).filter(|&i| after.is_char_boundary(i)).any(|i| glob_matches(rest, &after[i..]))
        }
    }
}

/// `<target>/{release,debug}/build/<crate>-<hash>/out`: the build script's output folders.
fn out_dirs(target: &Path, krate: &str) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for profile in ["release", "debug"] {
        let build = target.join(profile).join("build");
        let Ok(entries) = std::fs::read_dir(&build) else { continue };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let is_crate = name.strip_prefix(krate).and_then(|rest| rest.strip_prefix('-')).is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
            if is_crate && e.path().join("out").is_dir() {
                dirs.push(e.path().join("out"));
            }
        }
    }
    if dirs.is_empty() {
        bail!("{}: no build-script output of {krate} (build it first)", target.display());
    }
    dirs.sort();
    Ok(dirs)
}

/// A unit's name from its object's file name: `afq-0123abcd.o` (cudaforge), `afq.o` or `afq.co`.
fn unit_of(file: &str) -> String {
    let stem = Path::new(file).file_stem().map_or(file.to_string(), |s| s.to_string_lossy().into_owned());
    let stem = stem.as_str();
    match stem.rsplit_once('-') {
        Some((unit, hash)) if hash.len() >= 8 && hash.chars().all(|c| c.is_ascii_hexdigit()) => unit.to_string(),
        _ => stem.to_string(),
    }
}

/// Unit → kernels (mangled) of `krate`'s static libraries in the stock CUDA build.
fn cuda_kernels(cuobjdump: &Path, target: &Path, krate: &str) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let mut units: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for out in out_dirs(target, krate)? {
        let mut libs: Vec<PathBuf> = std::fs::read_dir(&out)?.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "a")).collect();
        libs.sort();
        for lib in libs {
            let output = Command::new(cuobjdump).arg("-res-usage").arg(&lib).output().with_context(|| format!("running {}", cuobjdump.display()))?;
            if !output.status.success() {
                bail!("cuobjdump -res-usage {} failed: {}", lib.display(), String::from_utf8_lossy(&output.stderr).lines().next().unwrap_or(""));
            }
            units.extend(parse_res_usage(&String::from_utf8_lossy(&output.stdout)));
        }
    }
    Ok(units)
}

/// cuobjdump -res-usage of an archive: `member LIB:UNIT-HASH.o:` lines, then ` Function NAME:`.
fn parse_res_usage(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut units: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut unit = None;
    for line in text.lines() {
        if let Some(member) = line.strip_prefix("member ") {
            let file = member.trim_end_matches(':').rsplit(':').next().unwrap_or("");
            unit = Some(unit_of(file));
        } else if let (Some(name), Some(u)) = (line.trim_start().strip_prefix("Function ").map(|n| n.trim_end_matches(':')), &unit) {
            units.entry(u.clone()).or_default().insert(name.to_string());
        }
    }
    units
}

/// Unit → kernels (demangled) of `arch` in the host objects hipcc compiled for `krate`.
fn amd_kernels(target: &Path, krate: &str, arch: &str) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let mut units: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for out in out_dirs(target, krate)? {
        for object in crate::bench::kernel_resources::code_object_files(&out)? {
            // nvcc's objects and cubins of a hip-on-cuda build carry no AMD bundle
            if hip_build::code_object::bundle_targets(&object).is_err() {
                continue;
            }
            let names = hip_build::code_object::kernel_symbols(&object, arch).map_err(|e| anyhow::anyhow!("{e}"))?;
            let file = object.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let names = demangle(&names.into_iter().collect::<Vec<_>>())?;
            units.entry(unit_of(&file)).or_default().extend(names.iter().filter(|n| !is_library_kernel(n)).map(|n| rename_identifiers(n)));
        }
    }
    Ok(units)
}

/// The reference's kernels demangled, then renamed as the translator renames identifiers.
fn translated(reference: &Reference) -> Result<Reference> {
    let mut kernels = BTreeMap::new();
    for (module, names) in &reference.kernels {
        let names: Vec<String> = names.iter().cloned().collect();
        kernels.insert(module.clone(), demangle(&names)?.into_iter().filter(|n| !is_library_kernel(n)).map(|n| rename_identifiers(&n)).collect());
    }
    Ok(Reference { kernels, launchers: reference.launchers.clone() })
}

/// A kernel of CUB's or thrust's own (a scan or sort a unit calls), named by its library
/// scope: each side has its library's, CUB's on CUDA and rocPRIM's on AMD, so neither is
/// compared.
fn is_library_kernel(demangled: &str) -> bool {
    // the function's name follows the return type, if the name has one
    let name = demangled.split_once(' ').filter(|(ret, _)| !ret.contains('(')).map_or(demangled, |(_, rest)| rest);
    ["cub::", "thrust::", "candle_cub::", "candle_thrust::", "rocprim::", "hipcub::"].iter().any(|scope| name.starts_with(scope))
}

/// Each identifier of `name` renamed by the translator's table (`IDENTIFIERS`); both
/// sides' names go through it, so a CUDA type and its HIP alias meet (`__half2` and
/// `candle_half2`, a typedef of it that the AMD symbol names as `__half2`).
fn rename_identifiers(name: &str) -> String {
    // c++filt writes `> >` where a template argument list ends in one
    let name = &cuda_vector_types(name).replace(" >", ">");
    // built once: every kernel name of both builds comes through here
    static RENAMES: std::sync::OnceLock<BTreeMap<&str, &str>> = std::sync::OnceLock::new();
    let renames = RENAMES.get_or_init(|| translator::kernels::mapping::IDENTIFIERS.iter().copied().collect());
    let mut out = String::with_capacity(name.len());
    let mut word = String::new();
    for c in name.chars().chain(std::iter::once('\0')) {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        out.push_str(renames.get(word.as_str()).copied().unwrap_or(&word));
        word.clear();
        if c != '\0' {
            out.push(c);
        }
    }
    out
}

/// HIP's vector types by their CUDA names: HIP defines `float2` as `HIP_vector_type<float, 2>`,
/// which a symbol names as such (`HIP_vector_type<float, 2u>`).
fn cuda_vector_types(name: &str) -> String {
    const ELEMENTS: &[(&str, &str)] = &[
        ("unsigned long long", "ulonglong"),
        ("long long", "longlong"),
        ("unsigned long", "ulong"),
        ("unsigned int", "uint"),
        ("unsigned short", "ushort"),
        ("unsigned char", "uchar"),
        ("signed char", "char"),
        ("float", "float"),
        ("double", "double"),
        ("long", "long"),
        ("int", "int"),
        ("short", "short"),
        ("char", "char"),
    ];
    let mut out = name.to_string();
    while let Some(start) = out.find("HIP_vector_type<") {
        let rest = &out[start + "HIP_vector_type<".len()..];
        let Some(end) = rest.find('>') else { break };
        let (element, count) = rest[..end].rsplit_once(", ").unwrap_or(("", ""));
        let count = count.trim_end_matches('u');
        let Some((_, cuda)) = ELEMENTS.iter().find(|(e, _)| *e == element) else { break };
        let replacement = format!("{cuda}{count}");
        out.replace_range(start..start + "HIP_vector_type<".len() + end + 1, &replacement);
    }
    out
}

/// c++filt over `names`, one line each (a name that is not mangled comes back as it is).
fn demangle(names: &[String]) -> Result<BTreeSet<String>> {
    if names.is_empty() {
        return Ok(BTreeSet::new());
    }
    let mut child = Command::new("c++filt").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().context("running c++filt (binutils)")?;
    // written from a thread while the output is read here: c++filt's output fills its pipe
    // before a large input is all written
    let mut stdin = child.stdin.take().expect("piped");
    let input = format!("{}\n", names.join("\n"));
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(input.as_bytes())
    });
    let output = child.wait_with_output()?;
    writer.join().expect("the writer thread")?;
    if !output.status.success() {
        bail!("c++filt failed");
    }
    Ok(String::from_utf8_lossy(&output.stdout).lines().map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn res_usage_gives_units_and_their_kernels() {
        let text = "\nmember /t/out/libx.a:copy_blocks_kernel-4ca37ef12df967b9.o:\n\nResource usage:\n Common:\n  GLOBAL:0\n Function copy_blocks_kernel_bf16:\n  REG:16\n Function _Z1kI13__nv_bfloat16EvPT_:\n  REG:8\nmember /t/out/libx.a:afq.o:\n Function afq_f32:\n";
        let units = parse_res_usage(text);
        assert_eq!(units.keys().collect::<Vec<_>>(), ["afq", "copy_blocks_kernel"]);
        assert_eq!(units["copy_blocks_kernel"].len(), 2);
        assert!(units["afq"].contains("afq_f32"));
    }

    #[test]
    fn cuda_type_names_become_the_translated_ones() {
        assert_eq!(rename_identifiers("void k<__nv_bfloat16>(__nv_bfloat16 const*, float)"), "void k<candle_bf16>(candle_bf16 const*, float)");
        assert_eq!(rename_identifiers("x__nv_bfloat16"), "x__nv_bfloat16");
    }

    #[test]
    fn many_names_are_demangled_in_order_of_their_set() {
        // more than a pipe's 64 KiB each way
        let names: Vec<String> = (0..5000).map(|i| format!("_Z20kernel_number_{i:06}Pf")).collect();
        let out = demangle(&names).unwrap();
        assert_eq!(out.len(), 5000);
        assert!(out.contains("kernel_number_000042(float*)"));
    }

    #[test]
    fn hip_vector_types_take_their_cuda_names() {
        assert_eq!(rename_identifiers("void g<float, HIP_vector_type<float, 2u>, 1>(float const*)"), "void g<float, float2, 1>(float const*)");
        assert_eq!(cuda_vector_types("k(HIP_vector_type<unsigned int, 4u>*)"), "k(uint4*)");
        assert_eq!(rename_identifiers("void k<float, HIP_vector_type<float, 4u> >()"), "void k<float, float4>()");
    }

    #[test]
    fn library_kernels_are_told_by_their_scope() {
        assert!(is_library_kernel("void candle_cub::CUB_300001_SM_900::detail::EmptyKernel<void>()"));
        assert!(is_library_kernel("void rocprim::detail::init_lookback_scan_state_kernel<int>(int)"));
        assert!(!is_library_kernel("void gemv_kernel_batched<__half, candle_half2, 32, 1>(__half const*, bool)"));
        assert!(!is_library_kernel("copy_blocks_kernel_f32"));
    }

    #[test]
    fn left_out_units_match_their_globs() {
        assert!(glob_matches("mistralrs-quant/marlin_*", "mistralrs-quant/marlin_repack"));
        assert!(glob_matches("mistralrs-quant/*_fp8", "mistralrs-quant/scalar_fp8"));
        assert!(!glob_matches("mistralrs-quant/*_fp8", "mistralrs-quant/blockwise_fp8_gemm"));
        assert!(!glob_matches("mistralrs-quant/ops", "mistralrs-paged-attn/ops"));
    }

    #[test]
    fn units_lose_cudaforge_hashes_only() {
        assert_eq!(unit_of("afq-0123456789abcdef.o"), "afq");
        assert_eq!(unit_of("marlin-repack.o"), "marlin-repack");
        assert_eq!(unit_of("ops.o"), "ops");
        assert_eq!(unit_of("ops.co"), "ops");
    }
}
