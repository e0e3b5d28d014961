//! Stock candle-flash-attn (Dao's CUTLASS kernels) for a stock CUDA build whose kernels
//! are compiled on the GPU machine: 53 CUTLASS units take hours on this machine's two
//! cores, minutes on the GPU machine's sixteen.
//!
//! Here the crate builds unchanged, its build script (cudaforge) run over a placeholder
//! nvcc for its own kernels and archive (every other nvcc call runs the real one), with
//! a CUTLASS checkout that holds only the commit the crate pins (nothing is compiled
//! against it here), and the binary is linked against a stub `libflashattention.so`
//! that exports `run_mha`. OUT/dao carries the crate's `kernels/` and the CUTLASS
//! headers (from `CUTLASS_SRC`, a checkout of that commit); bench/flash-attn/build-dao.sh
//! compiles them there with the flags the build script gives nvcc into the real
//! `libflashattention.so`, which the binary loads.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The stock crate and what its build script is run with.
pub struct DaoBuild {
    /// The environment the cargo build adds (NVCC, CUDAFORGE_HOME, CANDLE_FLASH_ATTN_BUILD_DIR).
    pub env: Vec<(&'static str, String)>,
}

/// The CUTLASS commit a candle-flash-attn build script pins (`CUTLASS_COMMIT: &str = "…"`).
fn cutlass_commit(build_rs: &Path) -> Result<String> {
    let text = std::fs::read_to_string(build_rs).with_context(|| format!("reading {}", build_rs.display()))?;
    let line = text.lines().find(|l| l.contains("CUTLASS_COMMIT: &str")).with_context(|| format!("{}: no CUTLASS_COMMIT", build_rs.display()))?;
    let commit = line.split('"').nth(1).filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()));
    commit.map(str::to_string).with_context(|| format!("{}: CUTLASS_COMMIT is not a commit: {line}", build_rs.display()))
}

/// Prepares the placeholder nvcc, the CUTLASS checkout and the stub library under
/// target/flash-attn-dao, and OUT/dao (kernels and CUTLASS headers for the GPU machine).
pub fn prepare(root: &Path, out: &Path, real_nvcc: &Path) -> Result<DaoBuild> {
    let registry = crate::regen::upstream::registry_dir("candle-flash-attn", "0.11.1")
        .context("candle-flash-attn 0.11.1 is not in the cargo registry: run cargo xtask regen (it fetches it)")?;
    let commit = cutlass_commit(&registry.join("build.rs"))?;
    let Some(cutlass_src) = std::env::var_os("CUTLASS_SRC").map(PathBuf::from) else {
        bail!("the stock flash-attention build needs CUTLASS {commit}'s headers for the GPU machine: set CUTLASS_SRC to a checkout of that commit");
    };
    for sub in ["include/cutlass", "tools/util/include"] {
        if !cutlass_src.join(sub).is_dir() {
            bail!("CUTLASS_SRC={}: no {sub}/ (a checkout of CUTLASS {commit} is needed)", cutlass_src.display());
        }
    }
    let work = root.join("target/flash-attn-dao");
    let _ = std::fs::remove_dir_all(&work);

    // cudaforge takes a checkout whose include/ exists and whose HEAD is the commit
    let checkout = work.join("cudaforge/git/checkouts").join(format!("cutlass-{}", &commit[..16]));
    for sub in ["include", "tools/util/include"] {
        std::fs::create_dir_all(checkout.join(sub))?;
    }
    super::step(Command::new("git").args(["init", "-q"]).arg(&checkout), "git init of the CUTLASS placeholder")?;
    std::fs::write(checkout.join(".git/HEAD"), format!("{commit}\n"))?;

    let nvcc = work.join("nvcc");
    std::fs::write(
        &nvcc,
        format!(
            "#!/bin/sh\n# Dao's kernels and their archive: empty placeholders (compiled on the GPU machine by\n\
             # bench/flash-attn/build-dao.sh); every other nvcc call runs the real one (candle-kernels'\n\
             # archives too: libmoe.a, built in the same target directory)\n\
             case \" $* \" in\n  *\" kernels/flash_\"*|*\" --lib \"*libflashattention*)\n    while [ $# -gt 0 ]; do\n      \
             if [ \"$1\" = -o ]; then : > \"$2\"; exit 0; fi\n      shift\n    done\n    exit 1 ;;\nesac\nexec {} \"$@\"\n",
            real_nvcc.display()
        ),
    )?;
    super::step(Command::new("chmod").arg("+x").arg(&nvcc), "chmod of the placeholder nvcc")?;

    let build = work.join("build");
    std::fs::create_dir_all(&build)?;
    let stub = work.join("run_mha_stub.c");
    std::fs::write(&stub, "/* links as Dao's libflashattention.so; the GPU machine's real one is loaded */\nvoid run_mha(void) {}\n")?;
    super::step(
        Command::new("gcc").args(["-shared", "-fPIC", "-Wl,-soname,libflashattention.so", "-o"]).arg(build.join("libflashattention.so")).arg(&stub),
        "gcc of the libflashattention.so stub",
    )?;

    let dao = out.join("dao");
    let _ = std::fs::remove_dir_all(&dao);
    std::fs::create_dir_all(dao.join("cutlass/tools/util"))?;
    super::step(Command::new("cp").arg("-r").arg(registry.join("kernels")).arg(dao.join("kernels")), "cp of candle-flash-attn's kernels")?;
    super::step(Command::new("cp").arg("-r").arg(cutlass_src.join("include")).arg(dao.join("cutlass/include")), "cp of CUTLASS's include/")?;
    super::step(
        Command::new("cp").arg("-r").arg(cutlass_src.join("tools/util/include")).arg(dao.join("cutlass/tools/util/include")),
        "cp of CUTLASS's tools/util/include/",
    )?;
    std::fs::write(dao.join("CUTLASS_COMMIT"), format!("{commit}\n"))?;

    Ok(DaoBuild {
        env: vec![
            ("NVCC", nvcc.display().to_string()),
            ("CUDAFORGE_HOME", work.join("cudaforge").display().to_string()),
            ("CANDLE_FLASH_ATTN_BUILD_DIR", build.display().to_string()),
        ],
    })
}

/// Fails unless `bin` needs `libflashattention.so` (the library build-dao.sh makes there).
pub fn check_binary(bin: &Path) -> Result<()> {
    let dynamic = crate::gpu_bundle::stubs::readelf(&["-W", "-d"], bin)?;
    if !crate::gpu_bundle::stubs::dynamic_entries(&dynamic, "NEEDED").iter().any(|n| n == "libflashattention.so") {
        bail!("{} does not need libflashattention.so: Dao's kernels would not be the GPU machine's build", bin.display());
    }
    Ok(())
}
