//! `cargo xtask bench kernel-resources`: the static cost of every generated
//! kernel per AMD arch, from the code objects hipcc made (issue 13, item 5).
//!
//! Per arch it writes `bench/results/kernel-resources-rocm<X.Y>-<arch>.tsv`,
//! one row per kernel (sorted by module, then kernel): the registers, scratch,
//! LDS, spills and wavefront size from the code object metadata
//! ([`hip_build::kernel_resources`]), the waves per SIMD they allow
//! ([`hip_build::occupancy`]), the native dot-product, MFMA and WMMA
//! instructions in the kernel's disassembly ([`hip_build::disassembly`]), and
//! beside them upstream's CUDA build on sm_90 (registers, spills and the
//! occupancy those registers give, from the `ptxas -v` fixture made by
//! tools/cuda_kernel_resources.sh).
//!
//! Occupancy is compared by registers alone on both sides (the launch's
//! block size and dynamic shared memory are not known statically), as a
//! fraction of the hardware's maximum: AMD waves per SIMD over the arch's
//! maximum, NVIDIA warps per SM over 64.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use hip_build::disassembly::{count_instructions, Objdump};
use hip_build::kernel_resources::{kernel_resources_of_image, KernelResources};
use hip_build::occupancy::{arch_limits, ArchLimits, AMD_ARCH_LIMITS};
use hip_build::{code_object, compile_all_with_progress, plan, Hipcc};
use rayon::prelude::*;

use super::results::Table;
use crate::workspace::workspace_root;
use crate::regen::upstream;

#[derive(Args, Debug)]
pub struct KernelResourcesArgs {
    /// Offload arches, comma separated (default: every arch of the occupancy table).
    #[arg(long, value_delimiter = ',')]
    arch: Vec<String>,
    /// Read the code objects of an existing `cargo xtask build-kernels --out DIR` for these arches instead of compiling.
    #[arg(long, value_name = "DIR")]
    build_dir: Option<PathBuf>,
    /// The hipcc to compile with and whose version names the result files (default: found as build-kernels finds it).
    #[arg(long, value_name = "PATH")]
    hipcc: Option<PathBuf>,
    /// Compile and disassemble with this ROCm release's hipcc and llvm-objdump, in its root
    /// (`cargo xtask rocm-root`; made when absent). Overrides the default of --hipcc and --objdump.
    #[arg(long, value_name = "RELEASE")]
    rocm: Option<String>,
    /// The llvm-objdump command, words separated by blanks, e.g. "target/rocm/7.2/bin/in-root llvm-objdump-22"
    /// (default: llvm-objdump beside ROCm's LLVM or on PATH). It must know every arch asked for.
    #[arg(long, value_name = "COMMAND")]
    objdump: Option<String>,
    /// Upstream's sm_90 figures (default: tests/fixtures/cuda-kernel-resources-<pinned version>-sm_90.tsv).
    #[arg(long, value_name = "FILE")]
    cuda_reference: Option<PathBuf>,
    /// Where the result files go.
    #[arg(long, value_name = "DIR", default_value = "bench/results")]
    out_dir: PathBuf,
}

/// The instruction families counted in the disassembly: (column, mnemonic prefixes).
/// `v_dot4*` are the native byte dot products (`v_dot4_i32_i8`, `v_dot4c_i32_i8`,
/// `v_dot4_i32_iu8`, `v_dot4_u32_u8`) that `candle_dp4a` should become; `load_x4` the
/// 16-byte global loads (`global_load_dwordx4` on GFX9/GFX10, `global_load_b128` from
/// GFX11), which the elementwise kernels' packs should become.
pub const COUNTED_INSTRUCTIONS: &[(&str, &[&str])] = &[
    ("dot4", &["v_dot4"]),
    ("mfma", &["v_mfma"]),
    ("wmma", &["v_wmma"]),
    ("load_x4", &["global_load_dwordx4", "global_load_b128"]),
];

/// NVIDIA H100 (sm_90) limits for occupancy by registers: CUDA C Programming
/// Guide, "Technical Specifications per Compute Capability" (9.0: 64K 32-bit
/// registers per SM, 64 resident warps per SM, 255 registers per thread);
/// `cuda_occupancy.h` allocates registers per warp in units of 256 from each
/// of the SM's 4 sub-partitions (16384 registers each).
pub const SM90_REGISTERS_PER_SM: u32 = 65536;
pub const SM90_MAX_WARPS_PER_SM: u32 = 64;
pub const SM90_SUB_PARTITIONS: u32 = 4;
pub const SM90_REGISTER_ALLOCATION_UNIT: u32 = 256;

/// How the same kernel's mangled name differs between our HIP build and
/// upstream's CUDA build: (ours, upstream's). Applied to our name to find the
/// upstream kernel. Kernels named with a translation-unit-local function
/// (moe_gguf's `vec_dot_*` template arguments: nvcc mangles them with its
/// `_INTERNAL_<hash>` namespace) find no match and show `-`.
pub const MANGLED_SPELLINGS: &[(&str, &str)] = &[
    // our bf16 type (translator/compat) in template arguments
    ("11candle_bf16", "13__nv_bfloat16"),
];
/// clang mangles `static __global__` kernels with internal linkage (`_ZL...`), nvcc does not (`_Z...`).
const INTERNAL_LINKAGE_PREFIX: (&str, &str) = ("_ZL", "_Z");

/// Upstream's name of one of our kernels.
pub fn upstream_kernel_name(ours: &str) -> String {
    let mut name = match ours.strip_prefix(INTERNAL_LINKAGE_PREFIX.0) {
        Some(rest) => format!("{}{rest}", INTERNAL_LINKAGE_PREFIX.1),
        None => ours.to_string(),
    };
    for (hip, cuda) in MANGLED_SPELLINGS {
        name = name.replace(hip, cuda);
    }
    name
}

/// The columns of a result file.
pub const COLUMNS: &[&str] = &[
    "module",
    "kernel",
    "vgprs",
    "agprs",
    "sgprs",
    "scratch_bytes",
    "lds_bytes",
    "vgpr_spills",
    "sgpr_spills",
    "wave_size",
    "max_workgroup_size",
    "waves_by_registers",
    "waves_by_lds",
    "occupancy_pct",
    "dot4",
    "dot4_mnemonics",
    "mfma",
    "wmma",
    "load_x4",
    "sm90_registers",
    "sm90_spill_store_bytes",
    "sm90_spill_load_bytes",
    "sm90_occupancy_pct",
];

pub fn run(args: KernelResourcesArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let config = upstream::load_config(&root)?;
    let at = |p: &Path| if p.is_absolute() { p.to_path_buf() } else { root.join(p) };
    let arches: Vec<String> = if args.arch.is_empty() { AMD_ARCH_LIMITS.iter().map(|l| l.arch.to_string()).collect() } else { args.arch.clone() };
    let limits: Vec<&ArchLimits> = arches
        .iter()
        .map(|a| arch_limits(a).with_context(|| format!("{a} is not in hip_build::occupancy::AMD_ARCH_LIMITS (known: {})", AMD_ARCH_LIMITS.iter().map(|l| l.arch).collect::<Vec<_>>().join(", "))))
        .collect::<Result<_>>()?;
    let rocm_root = args.rocm.as_deref().map(|r| crate::rocm::root::ensure(r, None, None)).transpose()?;
    let hipcc = match (&args.hipcc, &rocm_root) {
        (Some(p), _) => Hipcc::at(at(p)),
        (None, Some(r)) => Hipcc::at(r.hipcc()),
        (None, None) => Hipcc::locate()?,
    };
    let hip_version = hipcc.version()?;
    let rocm = rocm_label(&hip_version).with_context(|| format!("hipcc reports HIP version `{hip_version}`: no major.minor"))?;
    let objdump = match (&args.objdump, &rocm_root) {
        (Some(command), _) => Objdump::from_command(&command.split_whitespace().map(str::to_string).collect::<Vec<_>>()).context("--objdump is empty")?,
        (None, Some(r)) => {
            let tool = r.llvm_tool("llvm-objdump").with_context(|| format!("the ROCm {} root has no llvm-objdump", r.release))?;
            Objdump::from_command(&[r.in_root().display().to_string(), tool]).context("an empty objdump command")?
        }
        (None, None) => Objdump::locate()?,
    };
    let reference_path = args.cuda_reference.as_deref().map(at).unwrap_or_else(|| root.join(format!("tests/fixtures/cuda-kernel-resources-{}-sm_90.tsv", config.candle.version)));
    let cuda = CudaReference::read(&reference_path)?;
    let build_dir = match &args.build_dir {
        Some(dir) => at(dir),
        None => compile(&root, &hipcc, &arches, &crate::regen::kernels_manifest(&config.kernels.static_library), &rocm)?,
    };
    let files = code_object_files(&build_dir)?;
    if files.is_empty() {
        bail!("{} holds no code objects (*.co) or objects (*.o): build the kernels first", build_dir.display());
    }
    let out_dir = at(&args.out_dir);
    for (arch, limits) in arches.iter().zip(limits) {
        let mut rows: Vec<Vec<String>> = files.par_iter().map(|f| rows_of_file(f, arch, limits, &objdump, &cuda)).collect::<Result<Vec<_>>>()?.concat();
        rows.sort();
        let mut table = Table::new(COLUMNS);
        table.note("what", format!("static cost per kernel of the generated kernels for {arch}, from the code objects' metadata and llvm-objdump -d"));
        table.note("hipcc", format!("HIP {hip_version}"));
        table.note("command", format!("cargo xtask bench kernel-resources --arch {arch}"));
        table.note("arch limits", describe(limits));
        table.note("occupancy_pct", "waves per SIMD by registers (waves_by_registers) over the arch's maximum; waves_by_lds: what the static LDS allows with workgroups of max_workgroup_size");
        table.note("sm90", format!("upstream's CUDA build ({}): ptxas registers and spill bytes; sm90_occupancy_pct = warps per SM by registers over {SM90_MAX_WARPS_PER_SM}; '-' where the kernel is not in it", tree_name(&root, &reference_path)));
        for row in rows {
            table.push(row);
        }
        let path = out_dir.join(format!("kernel-resources-{rocm}-{arch}.tsv"));
        super::provenance::write_measured(&table, &path)?;
        println!("{arch}: {} kernels -> {}", table.rows.len(), tree_name(&root, &path));
    }
    Ok(ExitCode::SUCCESS)
}

/// `rocm7.2` for HIP `7.2.53211-9999`.
fn rocm_label(hip_version: &str) -> Option<String> {
    hip_build::releases::major_minor(hip_version).map(|(major, minor)| format!("rocm{major}.{minor}"))
}

fn describe(l: &ArchLimits) -> String {
    format!(
        "wave{}, at most {} waves/SIMD, {} VGPRs per SIMD lane in granules of {}, SGPRs {}, LDS {} bytes per {} in granules of {}, {} SIMDs",
        l.wave_size,
        l.max_waves_per_simd,
        l.vgprs_per_simd,
        l.vgpr_granule,
        if l.sgprs_limit_occupancy { "limit occupancy" } else { "do not limit occupancy" },
        l.lds_bytes_per_cu,
        if l.wave_size == 64 { "CU" } else { "WGP" },
        l.lds_granule,
        l.simds_per_cu
    )
}

fn tree_name(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// Compiles generated/kernels for `arches` into target/kernel-resources/<rocm>/<arches>.
fn compile(root: &Path, hipcc: &Hipcc, arches: &[String], manifest: &plan::KernelsManifest, rocm: &str) -> Result<PathBuf> {
    let kernels = root.join("generated/kernels");
    let out = root.join("target/kernel-resources").join(rocm).join(arches.join("+"));
    for arch in arches {
        hipcc.check_arch(arch)?;
    }
    let jobs = plan::kernel_jobs(&kernels, &out, arches, manifest).with_context(|| format!("listing {}", kernels.display()))?;
    println!("kernel-resources: compiling {} files for {} into {}", jobs.len(), arches.join(","), tree_name(root, &out));
    let results = compile_all_with_progress(hipcc, jobs, hip_build::default_parallelism(), &|r| println!("  {:>6.1}s  {}", r.wall.as_secs_f64(), tree_name(root, &r.job.source)));
    let failed: Vec<String> = results.iter().filter_map(|r| r.result.as_ref().err().map(|e| format!("{}: {e}", tree_name(root, &r.job.source)))).collect();
    if !failed.is_empty() {
        bail!("{} kernel files failed to compile:\n{}", failed.len(), failed.join("\n"));
    }
    Ok(out)
}

/// The `*.co` and `*.o` files under a build directory, sorted.
pub(crate) fn code_object_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let path = entry.with_context(|| format!("reading {}", d.display()))?.path();
            if path.is_dir() {
                pending.push(path);
            } else if matches!(path.extension().and_then(|e| e.to_str()), Some("co" | "o")) {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The rows of one code object's kernels for `arch`.
fn rows_of_file(file: &Path, arch: &str, limits: &ArchLimits, objdump: &Objdump, cuda: &CudaReference) -> Result<Vec<Vec<String>>> {
    let module = file.file_stem().and_then(|s| s.to_str()).with_context(|| format!("{}: no UTF-8 file name", file.display()))?;
    let mut rows = Vec::new();
    for image in code_object::extract_images(file, arch)? {
        let kernels = kernel_resources_of_image(file, &image)?;
        let disassembly = objdump.disassemble(file, &image)?;
        let prefixes: Vec<&str> = COUNTED_INSTRUCTIONS.iter().flat_map(|(_, p)| p.iter().copied()).collect();
        let counts = count_instructions(&disassembly, &prefixes);
        for k in &kernels {
            let of_kernel = counts.get(&k.name).cloned().unwrap_or_default();
            rows.push(row(module, k, limits, &of_kernel, cuda.get(module, &k.name)).with_context(|| format!("{} ({arch})", file.display()))?);
        }
    }
    Ok(rows)
}

fn row(module: &str, k: &KernelResources, limits: &ArchLimits, instructions: &BTreeMap<String, u32>, cuda: Option<&CudaKernel>) -> Result<Vec<String>> {
    let by_registers = limits.waves_per_simd_by_registers(k).map_err(anyhow::Error::msg)?;
    let by_lds = limits.waves_per_simd_by_lds(k).map_err(anyhow::Error::msg)?;
    let counted = |prefixes: &[&str]| instructions.iter().filter(|(m, _)| prefixes.iter().any(|p| m.starts_with(p))).map(|(_, n)| n).sum::<u32>();
    let dot4_mnemonics: Vec<String> = instructions.iter().filter(|(m, _)| m.starts_with("v_dot4")).map(|(m, n)| format!("{m}:{n}")).collect();
    let mut cells: Vec<String> = vec![
        module.to_string(),
        k.name.clone(),
        k.vgprs.to_string(),
        k.agprs.to_string(),
        k.sgprs.to_string(),
        k.scratch_bytes.to_string(),
        k.lds_bytes.to_string(),
        k.vgpr_spills.to_string(),
        k.sgpr_spills.to_string(),
        k.wavefront_size.to_string(),
        k.max_workgroup_size.to_string(),
        by_registers.to_string(),
        by_lds.to_string(),
        percent(by_registers, limits.max_waves_per_simd),
    ];
    for (column, prefixes) in COUNTED_INSTRUCTIONS {
        cells.push(counted(prefixes).to_string());
        if *column == "dot4" {
            cells.push(if dot4_mnemonics.is_empty() { "-".into() } else { dot4_mnemonics.join(",") });
        }
    }
    match cuda {
        Some(c) => cells.extend([c.registers.to_string(), c.spill_store_bytes.to_string(), c.spill_load_bytes.to_string(), percent(sm90_warps_by_registers(c.registers), SM90_MAX_WARPS_PER_SM)]),
        None => cells.extend(["-", "-", "-", "-"].map(String::from)),
    }
    Ok(cells)
}

fn percent(part: u32, whole: u32) -> String {
    format!("{:.1}", 100.0 * part as f64 / whole as f64)
}

/// Warps per SM that `registers` per thread allow on sm_90.
pub fn sm90_warps_by_registers(registers: u32) -> u32 {
    let per_warp = (registers.max(1) * 32).next_multiple_of(SM90_REGISTER_ALLOCATION_UNIT);
    let per_sub_partition = SM90_REGISTERS_PER_SM / SM90_SUB_PARTITIONS;
    (SM90_SUB_PARTITIONS * (per_sub_partition / per_warp)).min(SM90_MAX_WARPS_PER_SM)
}

/// One kernel of upstream's sm_90 build.
#[derive(Debug, Clone, PartialEq)]
pub struct CudaKernel {
    pub registers: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
}

/// The fixture of tools/cuda_kernel_resources.sh, by (module, kernel).
pub struct CudaReference(HashMap<(String, String), CudaKernel>);

impl CudaReference {
    pub fn read(path: &Path) -> Result<Self> {
        let t = Table::read(path)?;
        let column = |name: &str| t.column(name).with_context(|| path.display().to_string());
        let (module, kernel, registers, stores, loads) = (column("module")?, column("kernel")?, column("registers")?, column("spill_store_bytes")?, column("spill_load_bytes")?);
        let mut kernels = HashMap::new();
        for (i, r) in t.rows.iter().enumerate() {
            let number = |c: usize| -> Result<u32> { r[c].parse().with_context(|| format!("{}: row {} ({}): `{}` in column {} is not a count", path.display(), i + 1, r[kernel], r[c], t.header[c])) };
            kernels.insert((r[module].clone(), r[kernel].clone()), CudaKernel { registers: number(registers)?, spill_store_bytes: number(stores)?, spill_load_bytes: number(loads)? });
        }
        Ok(CudaReference(kernels))
    }

    /// The upstream kernel of one of ours (see [`upstream_kernel_name`]).
    fn get(&self, module: &str, kernel: &str) -> Option<&CudaKernel> {
        self.0.get(&(module.to_string(), upstream_kernel_name(kernel)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sm90_register_occupancy() {
        assert_eq!(sm90_warps_by_registers(32), 64);
        assert_eq!(sm90_warps_by_registers(40), 48, "1280 registers per warp: 12 per sub-partition");
        assert_eq!(sm90_warps_by_registers(128), 16);
        assert_eq!(sm90_warps_by_registers(255), 8);
    }

    #[test]
    fn upstream_names() {
        assert_eq!(upstream_kernel_name("affine_f32"), "affine_f32");
        assert_eq!(upstream_kernel_name("_ZL17quantize_mmq_q8_1IL18mmq_q8_1_ds_layout0EEvPKfPKiPvlllllii"), "_Z17quantize_mmq_q8_1IL18mmq_q8_1_ds_layout0EEvPKfPKiPvlllllii");
        assert_eq!(upstream_kernel_name("_ZN7vllm_rs23moe_gemm_grouped_kernelI11candle_bf16Li8ELi32ELi1EEEvPKT_S4_PKiS6_PKfPS2_iiiii"), "_ZN7vllm_rs23moe_gemm_grouped_kernelI13__nv_bfloat16Li8ELi32ELi1EEEvPKT_S4_PKiS6_PKfPS2_iiiii");
    }

    #[test]
    fn rocm_labels() {
        assert_eq!(rocm_label("7.2.53211-9999").as_deref(), Some("rocm7.2"));
        assert_eq!(rocm_label("5.2.21153-0").as_deref(), Some("rocm5.2"));
        assert_eq!(rocm_label("unknown"), None);
    }

    #[test]
    fn a_row_joins_amd_and_cuda() {
        let k = KernelResources { name: "mul_mat_vec_q4_0_q8_1".into(), vgprs: 40, agprs: 0, sgprs: 30, scratch_bytes: 0, lds_bytes: 0, vgpr_spills: 0, sgpr_spills: 0, wavefront_size: 64, max_workgroup_size: 1024 };
        let instructions: BTreeMap<String, u32> =
            [("v_dot4c_i32_i8".to_string(), 6), ("v_dot4_i32_i8".to_string(), 2), ("global_load_dwordx4".to_string(), 3), ("global_load_b128".to_string(), 1)].into();
        let cuda = CudaKernel { registers: 40, spill_store_bytes: 0, spill_load_bytes: 0 };
        let r = row("mmvq_gguf", &k, arch_limits("gfx942").unwrap(), &instructions, Some(&cuda)).unwrap();
        assert_eq!(r.len(), COLUMNS.len());
        let cell = |name: &str| r[COLUMNS.iter().position(|c| *c == name).unwrap()].as_str();
        assert_eq!((cell("waves_by_registers"), cell("occupancy_pct"), cell("sm90_occupancy_pct")), ("8", "100.0", "75.0"));
        assert_eq!((cell("dot4"), cell("dot4_mnemonics"), cell("mfma")), ("8", "v_dot4_i32_i8:2,v_dot4c_i32_i8:6", "0"));
        // both spellings of the 16-byte load count in one column
        assert_eq!(cell("load_x4"), "4");
        let none = row("mmvq_gguf", &k, arch_limits("gfx942").unwrap(), &BTreeMap::new(), None).unwrap();
        assert_eq!(&none[none.len() - 4..], ["-", "-", "-", "-"]);
        assert!(row("m", &k, arch_limits("gfx1100").unwrap(), &BTreeMap::new(), None).unwrap_err().to_string().contains("is wave64 but the gfx1100 limits are for wave32"));
    }
}
