//! The "AMD static cost" section of BENCHMARKS.md: a per-arch and per-family
//! summary of the `kernel-resources-<rocm>-<arch>.tsv` files that
//! `cargo xtask bench kernel-resources` writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use hip_build::kernel_resources::KernelResources;
use hip_build::occupancy::{arch_limits, RegisterBound, AMD_ARCH_LIMITS};

use super::table::markdown_table;
use super::results::Table;

const COMMAND: &str = "cargo xtask bench kernel-resources";
const FILE_PREFIX: &str = "kernel-resources-";

/// One kernel of one arch, as the summary needs it.
struct Kernel {
    family: String,
    key: (String, String),
    spills: bool,
    scratch_without_spills: bool,
    /// `None` where upstream's sm_90 build has no such kernel.
    below_sm90: Option<bool>,
    /// Below sm_90: what binds the kernel here ("96 VGPRs: 5 of 8 waves (62.5%)") and upstream's
    /// figure on sm_90 ("30 registers, 100.0%").
    below_sm90_why: Option<(String, String)>,
    lds_starved: bool,
    dot4: u32,
    dot4_mnemonics: Vec<String>,
    mfma: u32,
    wmma: u32,
    /// 16-byte global loads (`load_x4`).
    load_x4: u32,
}

/// The families of the contiguous elementwise kernels, whose loops move 16-byte packs
/// (kernel rule `elementwise-packs`).
const ELEMENTWISE_FAMILIES: &[&str] = &["affine", "binary", "cast", "unary"];

struct ArchFile {
    name: String,
    arch: String,
    kernels: Vec<Kernel>,
    /// Whether its sources have changed since it was measured (`provenance::read_for_report`).
    freshness: (String, String),
}

/// Families: the module, with the ten MMQ instance modules as one.
fn family(module: &str) -> String {
    if module.starts_with("mmq_instance_") {
        "mmq_instance_*".to_string()
    } else {
        module.to_string()
    }
}

pub fn section(md: &mut String, results: &Path) -> Result<()> {
    md.push_str("## AMD static cost per kernel (registers, spills, occupancy, native dot products)\n\n");
    let files = read_files(results)?;
    if files.is_empty() {
        writeln!(md, "Not measured yet ({COMMAND}).\n")?;
        return Ok(());
    }
    let names: Vec<String> = files.iter().map(|f| format!("`{}`", f.name)).collect();
    writeln!(md, "From {}, written by `{COMMAND}` from the code objects hipcc makes (metadata note and `llvm-objdump -d`); upstream's figures are its CUDA build on sm_90 (`ptxas -v`, `tests/fixtures/cuda-kernel-resources-*-sm_90.tsv`, made by `tools/cuda_kernel_resources.sh`).\n", names.join(", "))?;
    let mut freshness: Vec<(&(String, String), Vec<&str>)> = Vec::new();
    for f in &files {
        match freshness.iter_mut().find(|(note, _)| *note == &f.freshness) {
            Some((_, archs)) => archs.push(&f.arch),
            None => freshness.push((&f.freshness, vec![&f.arch])),
        }
    }
    for ((key, value), archs) in freshness {
        writeln!(md, "- {key} ({}): {value}", archs.join(", "))?;
    }
    md.push_str("- *spilling*: VGPR or SGPR spills in the metadata; *scratch, no spills*: private segment used by stack arrays, not by spills.\n");
    md.push_str("- *below sm_90*: occupancy by registers alone (AMD: waves per SIMD over the arch's maximum, from `hip_build::occupancy::AMD_ARCH_LIMITS`; sm_90: warps per SM over 64) is lower than upstream's kernel gets on sm_90; kernels upstream lacks are not counted.\n");
    md.push_str("- *LDS-starved*: the static LDS allows fewer waves per SIMD than the registers (workgroups of the kernel's maximum size).\n");
    md.push_str("- *16-byte loads, elementwise*: of the unary, binary, affine and cast kernels, those with 16-byte global loads (`global_load_dwordx4`, from GFX11 `global_load_b128`): their contiguous loops move 16-byte packs of the wider element type (kernel rule `elementwise-packs`), so a widening cast (bf16 to f32, f32 to f64, ...) loads 8 or 4 bytes per pack and stores 16.\n");
    md.push_str("- *dot4*: kernels with native byte dot products (`v_dot4*`) and their instruction count; *dp4a fallback*: kernels with native dot products on another arch here and neither those nor matrix instructions on this one (the portable byte loop of `candle_dp4a`; a kernel that takes ggml's MFMA/WMMA tiles instead is not one). Where ggml's matrix tiles are on (MFMA on CDNA2/3, WMMA on RDNA3/4), its `mul_mat_q` instantiations for tile widths the arch never launches (mmq_x of 8, 24, 40, 56: not a multiple of the 16-column MFMA/WMMA granularity) compile to ggml's `NO_DEVICE_CODE` stub and count here too.\n\n");
    let elementwise = |k: &Kernel| ELEMENTWISE_FAMILIES.contains(&k.family.as_str());
    let with_dot4: BTreeSet<&(String, String)> = files.iter().flat_map(|f| f.kernels.iter().filter(|k| k.dot4 > 0).map(|k| &k.key)).collect();
    let mut rows = Vec::new();
    for f in &files {
        let count = |p: &dyn Fn(&Kernel) -> bool| f.kernels.iter().filter(|k| p(k)).count();
        let mnemonics: BTreeSet<&str> = f.kernels.iter().flat_map(|k| k.dot4_mnemonics.iter().map(String::as_str)).collect();
        let fallback = count(&|k| k.dot4 == 0 && k.mfma == 0 && k.wmma == 0 && with_dot4.contains(&k.key));
        rows.push(vec![
            f.arch.clone(),
            f.kernels.len().to_string(),
            count(&|k| k.spills).to_string(),
            count(&|k| k.scratch_without_spills).to_string(),
            count(&|k| k.below_sm90 == Some(true)).to_string(),
            count(&|k| k.lds_starved).to_string(),
            format!("{} ({})", count(&|k| k.dot4 > 0), f.kernels.iter().map(|k| k.dot4).sum::<u32>()),
            if mnemonics.is_empty() { "none".into() } else { mnemonics.into_iter().collect::<Vec<_>>().join(", ") },
            fallback.to_string(),
            count(&|k| k.mfma > 0).to_string(),
            count(&|k| k.wmma > 0).to_string(),
            format!("{} of {}", count(&|k| elementwise(k) && k.load_x4 > 0), count(&elementwise)),
        ]);
    }
    markdown_table(
        md,
        &["arch", "kernels", "spilling", "scratch, no spills", "below sm_90", "LDS-starved", "dot4 kernels (instructions)", "dot4 mnemonics", "dp4a fallback", "MFMA kernels", "WMMA kernels", "16-byte loads, elementwise"],
        &rows,
    )?;

    md.push_str("Per family: spilling / below sm_90 / dot4 kernels (of the family's kernels).\n\n");
    let families: BTreeSet<&str> = files.iter().flat_map(|f| f.kernels.iter().map(|k| k.family.as_str())).collect();
    let mut header = vec!["family".to_string(), "kernels".to_string()];
    header.extend(files.iter().map(|f| f.arch.clone()));
    let mut family_rows = Vec::new();
    for fam in families {
        let mut row = vec![fam.to_string(), files[0].kernels.iter().filter(|k| k.family == fam).count().to_string()];
        for f in &files {
            let of: Vec<&Kernel> = f.kernels.iter().filter(|k| k.family == fam).collect();
            let spills = of.iter().filter(|k| k.spills).count();
            let below = of.iter().filter(|k| k.below_sm90 == Some(true)).count();
            let dot4 = of.iter().filter(|k| k.dot4 > 0).count();
            row.push(format!("{spills} / {below} / {dot4}"));
        }
        family_rows.push(row);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    markdown_table(md, &header, &family_rows)?;
    below_sm90_section(md, &files)
}

/// One row per kernel below sm_90's occupancy on some arch: the register file that binds it
/// there, arches with the same figures together.
fn below_sm90_section(md: &mut String, files: &[ArchFile]) -> Result<()> {
    // kernel -> (sm_90 figure, [(figure here, arches)])
    let mut below: BTreeMap<&(String, String), (&str, Vec<(&str, Vec<&str>)>)> = BTreeMap::new();
    for f in files {
        for k in &f.kernels {
            let Some((here, sm90)) = &k.below_sm90_why else { continue };
            let (_, figures) = below.entry(&k.key).or_insert((sm90.as_str(), Vec::new()));
            match figures.iter_mut().find(|(figure, _)| *figure == here.as_str()) {
                Some((_, arches)) => arches.push(f.arch.as_str()),
                None => figures.push((here.as_str(), vec![f.arch.as_str()])),
            }
        }
    }
    if below.is_empty() {
        return Ok(());
    }
    writeln!(md, "Below sm_90's occupancy, per kernel ({}): the register file that holds it to fewer waves per SIMD on each arch (VGPRs in the granules of `hip_build::occupancy`, or GFX9's SGPR rule), beside upstream's registers and occupancy on sm_90. Why each needs those registers is in `bench/FINDINGS.md` (\"Below sm_90 occupancy\").\n", below.len())?;
    let rows: Vec<Vec<String>> = below
        .into_iter()
        .map(|((module, kernel), (sm90, figures))| {
            let here: Vec<String> = figures.into_iter().map(|(figure, arches)| format!("{}: {figure}", arches.join(", "))).collect();
            vec![module.clone(), format!("`{kernel}`"), sm90.to_string(), here.join("; ")]
        })
        .collect();
    markdown_table(md, &["module", "kernel", "sm_90", "AMD, where below sm_90"], &rows)
}

fn read_files(results: &Path) -> Result<Vec<ArchFile>> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(results) else { return Ok(files) };
    for entry in entries {
        let name = entry.with_context(|| format!("reading {}", results.display()))?.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_prefix(FILE_PREFIX).and_then(|s| s.strip_suffix(".tsv")) else { continue };
        let arch = stem.rsplit_once('-').map(|(_, a)| a.to_string()).with_context(|| format!("{name}: expected {FILE_PREFIX}<rocm>-<arch>.tsv"))?;
        let path = results.join(&name);
        let mut table = super::provenance::read_for_report(&path)?.with_context(|| format!("{} vanished", path.display()))?;
        let kernels = kernels_of(&table, &arch).with_context(|| path.display().to_string())?;
        let freshness = table.notes.remove(0);
        files.push(ArchFile { name, arch, kernels, freshness });
    }
    let order = |arch: &str| AMD_ARCH_LIMITS.iter().position(|l| l.arch == arch).unwrap_or(usize::MAX);
    files.sort_by(|a, b| (order(&a.arch), &a.name).cmp(&(order(&b.arch), &b.name)));
    Ok(files)
}

fn kernels_of(t: &Table, arch: &str) -> Result<Vec<Kernel>> {
    let limits = arch_limits(arch).with_context(|| format!("{arch}: not in hip_build::occupancy::AMD_ARCH_LIMITS"))?;
    let c: BTreeMap<&str, usize> = ["module", "kernel", "vgprs", "agprs", "sgprs", "scratch_bytes", "lds_bytes", "vgpr_spills", "sgpr_spills", "wave_size", "max_workgroup_size", "waves_by_registers", "waves_by_lds", "occupancy_pct", "dot4", "dot4_mnemonics", "mfma", "wmma", "load_x4", "sm90_registers", "sm90_occupancy_pct"]
        .into_iter()
        .map(|name| t.column(name).map(|i| (name, i)))
        .collect::<Result<_>>()?;
    t.rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let cell = |name: &str| r[c[name]].as_str();
            let number = |name: &str| -> Result<f64> { cell(name).parse().with_context(|| format!("row {} ({}): `{}` in column {name} is not a number", i + 1, cell("kernel"), cell(name))) };
            let spills = number("vgpr_spills")? + number("sgpr_spills")? > 0.0;
            let below_sm90 = match cell("sm90_occupancy_pct") {
                "-" => None,
                _ => Some(number("occupancy_pct")? < number("sm90_occupancy_pct")?),
            };
            let below_sm90_why = match below_sm90 {
                Some(true) => {
                    let int = |name: &str| -> Result<u32> { Ok(number(name)? as u32) };
                    let resources = KernelResources {
                        name: cell("kernel").to_string(),
                        vgprs: int("vgprs")?,
                        agprs: int("agprs")?,
                        sgprs: int("sgprs")?,
                        scratch_bytes: int("scratch_bytes")?,
                        lds_bytes: int("lds_bytes")?,
                        vgpr_spills: int("vgpr_spills")?,
                        sgpr_spills: int("sgpr_spills")?,
                        wavefront_size: int("wave_size")?,
                        max_workgroup_size: int("max_workgroup_size")?,
                    };
                    let (waves, bound) = limits.register_bound(&resources).map_err(anyhow::Error::msg)?;
                    if waves != int("waves_by_registers")? {
                        anyhow::bail!("row {} ({}): waves_by_registers {} but its registers give {waves} on {arch}", i + 1, cell("kernel"), cell("waves_by_registers"));
                    }
                    let register_file = match bound {
                        RegisterBound::Vgprs => format!("{} VGPRs", resources.vgprs),
                        RegisterBound::Sgprs => format!("{} SGPRs", resources.sgprs),
                        RegisterBound::None => anyhow::bail!("row {} ({}): below sm_90 at the arch's maximum waves", i + 1, cell("kernel")),
                    };
                    let here = format!("{register_file}: {waves} of {} waves ({}%)", limits.max_waves_per_simd, cell("occupancy_pct"));
                    Some((here, format!("{} registers, {}%", cell("sm90_registers"), cell("sm90_occupancy_pct"))))
                }
                _ => None,
            };
            Ok(Kernel {
                family: family(cell("module")),
                key: (cell("module").to_string(), cell("kernel").to_string()),
                spills,
                scratch_without_spills: !spills && number("scratch_bytes")? > 0.0,
                below_sm90,
                below_sm90_why,
                lds_starved: number("waves_by_lds")? < number("waves_by_registers")?,
                dot4: number("dot4")? as u32,
                dot4_mnemonics: match cell("dot4_mnemonics") {
                    "-" => vec![],
                    list => list.split(',').filter_map(|m| m.split(':').next()).map(str::to_string).collect(),
                },
                mfma: number("mfma")? as u32,
                wmma: number("wmma")? as u32,
                load_x4: number("load_x4")? as u32,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::kernel_resources::COLUMNS;

    fn file(dir: &Path, arch: &str, dot4: &str) {
        file_with(dir, arch, dot4, "0");
    }

    fn file_with(dir: &Path, arch: &str, dot4: &str, wmma: &str) {
        let mut t = Table::new(COLUMNS);
        let mut row: Vec<String> = COLUMNS.iter().map(|_| "0".to_string()).collect();
        let set = |row: &mut Vec<String>, name: &str, v: &str| row[COLUMNS.iter().position(|c| *c == name).unwrap()] = v.to_string();
        set(&mut row, "module", "mmvq_gguf");
        set(&mut row, "kernel", "mul_mat_vec_q4_0_q8_1");
        set(&mut row, "dot4", dot4);
        set(&mut row, "wmma", wmma);
        set(&mut row, "dot4_mnemonics", if dot4 == "0" { "-" } else { "v_dot4_i32_i8:4" });
        // 50% by VGPRs on either kind of arch: CDNA 4 of 8 waves, RDNA3 8 of 16
        let (wave, vgprs, waves, lds_waves) = if arch.starts_with("gfx9") { ("64", "128", "4", "8") } else { ("32", "192", "8", "16") };
        set(&mut row, "waves_by_lds", lds_waves);
        set(&mut row, "wave_size", wave);
        set(&mut row, "vgprs", vgprs);
        set(&mut row, "waves_by_registers", waves);
        set(&mut row, "sgprs", "20");
        set(&mut row, "max_workgroup_size", "256");
        set(&mut row, "occupancy_pct", "50.0");
        set(&mut row, "sm90_registers", "80");
        set(&mut row, "sm90_occupancy_pct", "75.0");
        set(&mut row, "vgpr_spills", "2");
        t.push(row);
        std::fs::write(dir.join(format!("kernel-resources-rocm7.2-{arch}.tsv")), t.render()).unwrap();
    }

    #[test]
    fn summarises_per_arch_and_finds_dp4a_fallbacks() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), "gfx942", "4");
        file(dir.path(), "gfx90a", "0");
        let mut md = String::new();
        section(&mut md, dir.path()).unwrap();
        // gfx90a first (table order); its kernel has no dot4 while gfx942's has: one fallback
        assert!(md.contains("| gfx90a | 1 | 1 | 0 | 1 | 0 | 0 (0) | none | 1 | 0 | 0 | 0 of 0 |"), "{md}");
        assert!(md.contains("| gfx942 | 1 | 1 | 0 | 1 | 0 | 1 (4) | v_dot4_i32_i8 | 0 | 0 | 0 | 0 of 0 |"), "{md}");
        assert!(md.contains("| mmvq_gguf | 1 | 1 / 1 / 0 | 1 / 1 / 1 |"), "{md}");
    }

    #[test]
    fn matrix_instructions_are_no_dp4a_fallback() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), "gfx942", "4");
        file_with(dir.path(), "gfx1100", "0", "8");
        let mut md = String::new();
        section(&mut md, dir.path()).unwrap();
        assert!(md.contains("| gfx1100 | 1 | 1 | 0 | 1 | 0 | 0 (0) | none | 0 | 0 | 1 | 0 of 0 |"), "{md}");
    }

    #[test]
    fn each_kernel_below_sm90_is_named_with_what_binds_it() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), "gfx942", "4");
        file(dir.path(), "gfx90a", "0");
        file_with(dir.path(), "gfx1100", "0", "8");
        let mut md = String::new();
        section(&mut md, dir.path()).unwrap();
        assert!(
            md.contains("| mmvq_gguf | `mul_mat_vec_q4_0_q8_1` | 80 registers, 75.0% | gfx90a, gfx942: 128 VGPRs: 4 of 8 waves (50.0%); gfx1100: 192 VGPRs: 8 of 16 waves (50.0%) |"),
            "{md}"
        );
    }

    #[test]
    fn waves_that_the_registers_do_not_give_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), "gfx942", "4");
        let path = dir.path().join("kernel-resources-rocm7.2-gfx942.tsv");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut t = Table::read(&path).unwrap();
        let col = t.column("waves_by_registers").unwrap();
        t.rows[0][col] = "5".into();
        std::fs::write(&path, t.render()).unwrap();
        let err = format!("{:#}", section(&mut String::new(), dir.path()).unwrap_err());
        assert!(err.contains("mul_mat_vec_q4_0_q8_1") && err.contains("waves_by_registers 5 but its registers give 4"), "{err}\n{text}");
    }

    #[test]
    fn no_files_says_which_command_makes_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut md = String::new();
        section(&mut md, dir.path()).unwrap();
        assert!(md.contains("Not measured yet (cargo xtask bench kernel-resources)."));
    }
}
