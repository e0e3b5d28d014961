//! The bundle's `bin/<group>/<test>` and `tests.tsv`: for each binary its
//! group and the directory it runs in (relative to the repository root).

use std::path::Path;

use anyhow::{Context, Result};

use super::binaries::TestBinary;

/// Copies the binaries into `out/bin/<group>/` and lists them in `out/tests.tsv`.
pub fn write(out: &Path, binaries: &[TestBinary]) -> Result<()> {
    let mut tsv = String::from(
        "# group\tworking directory (from the repository root)\tbinary (from the bundle)\n",
    );
    for b in binaries {
        let rel = format!("bin/{}/{}", b.group, b.name);
        let dest = out.join(&rel);
        std::fs::create_dir_all(dest.parent().expect("bin/<group>"))?;
        std::fs::copy(&b.path, &dest).with_context(|| format!("copying {}", b.path.display()))?;
        tsv.push_str(&format!("{}\t{}\t{}\n", b.group, b.cwd, rel));
    }
    std::fs::write(out.join("tests.tsv"), tsv)?;
    Ok(())
}
