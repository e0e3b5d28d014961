//! What goes beside the bundle and around it: the AMD build of the launchers
//! (beside it), `BUNDLE.txt` (what was built, from which commit, against what,
//! and the sizes), and `<out>.tar.xz`, what is carried (within the limit).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::stubs::{dynamic_entries, readelf, soname_library, LIBRARIES};
use crate::workspace::{git_dirty, head_commit};

/// What can be carried to the GPU machine (the `device` tool's limit).
const BUNDLE_LIMIT_BYTES: u64 = 64 * 1024 * 1024;

/// xz's settings for a folder of binaries: preset 6, every core.
pub const XZ_BUNDLE: &str = "-6 -T0";

/// Writes `BUNDLE.txt` into the bundle `out` (shown as `shown`) and prints it.
pub fn write_report(root: &Path, out: &Path, shown: &Path, linked_against: &str, imports: &str) -> Result<()> {
    let mut sizes: Vec<(String, u64)> = Vec::new();
    collect_sizes(out, out, &mut sizes)?;
    sizes.sort();
    let total: u64 = sizes.iter().map(|(_, s)| s).sum();
    let commit = head_commit(root).unwrap_or_else(|| "unknown".into());
    let mut report = format!(
        "GPU bundle (cargo xtask gpu-bundle) from commit {commit}{}\nrun on the NVIDIA machine: bash hip-on-cuda/run-gpu-tests.sh {}\n\
         linked against {linked_against}\n{imports}\n\n",
        if git_dirty(root, &[]) { " with uncommitted changes" } else { "" },
        shown.display()
    );
    for (path, size) in &sizes {
        report.push_str(&format!("{:>10}  {path}\n", size));
    }
    report.push_str(&format!("{total:>10}  total ({:.1} MiB unpacked)\n", mib(total)));
    std::fs::write(out.join("BUNDLE.txt"), &report)?;
    print!("{report}");
    Ok(())
}

/// Packs the folder `out` into `<out>.tar.xz` (xz with the settings `xz_opt`) and
/// checks the packed size against what can be carried.
pub fn pack_within_limit(out: &Path, xz_opt: &str) -> Result<()> {
    let packed = pack(out, xz_opt)?;
    let packed_size = std::fs::metadata(&packed)?.len();
    println!("{}: {:.1} MiB (what is carried; the limit is {} MiB)", packed.display(), mib(packed_size), BUNDLE_LIMIT_BYTES >> 20);
    if packed_size > BUNDLE_LIMIT_BYTES {
        bail!("{} is {:.1} MiB, over the {} MiB that can be carried to the GPU machine", packed.display(), mib(packed_size), BUNDLE_LIMIT_BYTES >> 20);
    }
    Ok(())
}

/// `<out>.tar.xz` of the folder (written beside it, then renamed into place).
fn pack(out: &Path, xz_opt: &str) -> Result<PathBuf> {
    let name = out.file_name().context("the bundle folder has no name")?.to_string_lossy().into_owned();
    let parent = out.parent().context("the bundle folder has no parent")?;
    let packed = parent.join(format!("{name}.tar.xz"));
    let partial = parent.join(format!("{name}.tar.xz.partial"));
    let status = Command::new("tar")
        .env("XZ_OPT", xz_opt)
        .arg("-cJf")
        .arg(&partial)
        .arg("-C")
        .arg(parent)
        .arg(&name)
        .status()
        .context("running tar (with xz)")?;
    if !status.success() {
        bail!("tar -cJf {} failed ({status})", partial.display());
    }
    std::fs::rename(&partial, &packed)?;
    Ok(packed)
}

/// The AMD build of the launchers' shared library (beside the bundle, not in it):
/// what the bundle's binaries load when they run on a machine without an NVIDIA GPU.
/// hipcc built it against the host's HIP (Debian: HIP 5.2.3, `libamdhip64.so.5`),
/// so beside it goes an empty `libamdhip64.so.<n>` with that soname and the
/// forwarder's version nodes (a superset of 5.2.3's) that depends on the
/// forwarder in `bundle_lib`: its references bind to the forwarder, and the
/// host's HIP runtime is not loaded into the tests.
pub fn copy_amd_launchers(target_dir: &Path, dest: &Path, bundle_lib: &Path, nodes: &[(String, Option<String>)]) -> Result<()> {
    let build = target_dir.join("release/build");
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in
        std::fs::read_dir(&build).with_context(|| format!("reading {}", build.display()))?
    {
        let lib = entry?.path().join("out/libcandle_rocm_launchers.so");
        if let Ok(meta) = std::fs::metadata(&lib) {
            found.push((meta.modified()?, lib));
        }
    }
    let Some((_, newest)) = found.into_iter().max() else {
        bail!(
            "no libcandle_rocm_launchers.so under {}: candle-rocm-kernels did not build it",
            build.display()
        );
    };
    std::fs::create_dir_all(dest)?;
    std::fs::copy(&newest, dest.join("libcandle_rocm_launchers.so"))
        .with_context(|| format!("copying {}", newest.display()))?;
    for hip in dynamic_entries(&readelf(&["-W", "-d"], &newest)?, "NEEDED") {
        if hip.starts_with("libamdhip64.so") && hip != LIBRARIES[0].soname {
            soname_library(&dest.join(&hip), bundle_lib, LIBRARIES[0].soname, nodes)?;
        }
    }
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

pub fn collect_sizes(base: &Path, dir: &Path, out: &mut Vec<(String, u64)>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_sizes(base, &path, out)?;
        } else {
            let size = std::fs::metadata(&path)?.len();
            out.push((
                path.strip_prefix(base)
                    .unwrap_or(&path)
                    .display()
                    .to_string(),
                size,
            ));
        }
    }
    Ok(())
}
