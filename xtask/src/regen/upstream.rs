//! Where the Candle sources come from: the pinned crates.io release (from the
//! local cargo registry, fetched with cargo when absent) or a checkout.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// `upstream.toml`.
#[derive(Debug, Deserialize)]
pub struct UpstreamConfig {
    pub candle: CandlePin,
    pub kernels: KernelsConfig,
}

#[derive(Debug, Deserialize)]
pub struct CandlePin {
    pub version: String,
    pub kernels_crate: String,
    pub core_crate: String,
    pub nn_crate: String,
    pub flash_attn_crate: String,
    pub transformers_crate: String,
    pub examples_crate: String,
}

#[derive(Debug, Deserialize)]
pub struct KernelsConfig {
    /// Kernel units that upstream links as a static library (wildcards).
    pub static_library: Vec<String>,
}

/// The pin file at the workspace root.
pub const CONFIG: &str = "upstream.toml";

pub fn load_config(workspace: &Path) -> Result<UpstreamConfig> {
    Ok(load_config_and_text(workspace)?.0)
}

/// The pin file parsed, and its text (what regen's fingerprint hashes).
pub fn load_config_and_text(workspace: &Path) -> Result<(UpstreamConfig, String)> {
    let path = workspace.join(CONFIG);
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let config = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok((config, text))
}

/// One upstream crate's sources.
#[derive(Debug, Clone)]
pub struct CrateSource {
    pub name: String,
    pub version: String,
    pub root: PathBuf,
    pub license: String,
    pub repository: String,
}

/// Where the inputs came from. The manifest records only [`Origin::as_str`],
/// never a path; the checkout's directory is shown in the run report only.
#[derive(Debug, Clone)]
pub enum Origin {
    CratesIo,
    Checkout(PathBuf),
}

impl Origin {
    pub fn as_str(&self) -> &'static str {
        match self {
            Origin::CratesIo => "crates.io",
            Origin::Checkout(_) => "checkout",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Upstream {
    pub origin: Origin,
    pub kernels: CrateSource,
    pub core: CrateSource,
    pub nn: CrateSource,
    /// candle-flash-attn, candle-transformers and candle-examples: not
    /// published for every release (candle-examples 0.9.0 is not on
    /// crates.io), so they are mirrored when the release has them.
    pub flash_attn: Option<CrateSource>,
    pub transformers: Option<CrateSource>,
    pub examples: Option<CrateSource>,
}

impl Upstream {
    /// The upstream crates, in the order the manifest and NOTICE list them.
    pub fn crates(&self) -> Vec<&CrateSource> {
        [Some(&self.kernels), Some(&self.core), Some(&self.nn), self.flash_attn.as_ref(), self.transformers.as_ref(), self.examples.as_ref()].into_iter().flatten().collect()
    }

    /// The crates mirrored as whole packages (all but candle-kernels, whose
    /// translation is generated/kernels/).
    pub fn packages(&self) -> Vec<&CrateSource> {
        self.crates().into_iter().skip(1).collect()
    }

    /// One line for the run report.
    pub fn describe(&self) -> String {
        let crates = self.crates().iter().map(|c| format!("{} {}", c.name, c.version)).collect::<Vec<_>>().join(" + ");
        match &self.origin {
            Origin::CratesIo => format!("{crates} (crates.io, from the cargo registry)"),
            Origin::Checkout(dir) => format!("{crates} (checkout {})", dir.display()),
        }
    }
}

/// The crates.io release `version`.
pub fn from_registry(pin: &CandlePin, version: &str) -> Result<Upstream> {
    let names = pin.crate_names();
    let (required, optional) = names.split_at(3);
    if required.iter().any(|n| registry_dir(n, version).is_none()) {
        fetch(required, version)?;
    }
    let read = |n: &str| -> Result<CrateSource> {
        let dir = registry_dir(n, version).with_context(|| format!("{n} {version} is not in the cargo registry after cargo fetch"))?;
        read_crate(&dir, None)
    };
    let mut found = Vec::new();
    for n in optional {
        found.push(match registry_dir(n, version) {
            Some(_) => Some(read(n)?),
            None => match fetch(&[n], version) {
                Ok(()) => Some(read(n)?),
                // a release that did not publish this crate has no such package
                Err(e) if e.to_string().contains("failed to select a version") => None,
                Err(e) => return Err(e),
            },
        });
    }
    let examples = found.pop().flatten();
    let transformers = found.pop().flatten();
    let flash_attn = found.pop().flatten();
    Ok(Upstream { origin: Origin::CratesIo, kernels: read(required[0])?, core: read(required[1])?, nn: read(required[2])?, flash_attn, transformers, examples })
}

/// A Candle git checkout (its `candle-kernels/` and `candle-core/`).
pub fn from_checkout(pin: &CandlePin, dir: &Path) -> Result<Upstream> {
    let kernels_dir = dir.join(&pin.kernels_crate);
    if !kernels_dir.join("src").is_dir() {
        bail!("{} is not a Candle checkout: missing {}/src", dir.display(), pin.kernels_crate);
    }
    if !has_cuda_sources(&kernels_dir.join("src")) {
        bail!("{} is not a Candle checkout: no .cu files in {}/src", dir.display(), pin.kernels_crate);
    }
    let names = pin.crate_names();
    for name in &names[1..3] {
        if !dir.join(name).join("Cargo.toml").is_file() {
            bail!("{} is not a Candle checkout: missing {name}/Cargo.toml", dir.display());
        }
    }
    let workspace_manifest = dir.join("Cargo.toml");
    let workspace = std::fs::read_to_string(&workspace_manifest).ok().and_then(|t| t.parse::<toml::Table>().ok());
    let read = |name: &str| read_crate(&dir.join(name), workspace.as_ref());
    // candle-flash-attn, candle-transformers and candle-examples are mirrored when the checkout has them
    let optional = |name: &str| if dir.join(name).join("Cargo.toml").is_file() { read(name).map(Some) } else { Ok(None) };
    Ok(Upstream {
        origin: Origin::Checkout(dir.to_path_buf()),
        kernels: read(names[0])?,
        core: read(names[1])?,
        nn: read(names[2])?,
        flash_attn: optional(names[3])?,
        transformers: optional(names[4])?,
        examples: optional(names[5])?,
    })
}

impl CandlePin {
    /// The upstream packages regen reads, in [`Upstream::crates`] order.
    pub fn crate_names(&self) -> [&str; 6] {
        [&self.kernels_crate, &self.core_crate, &self.nn_crate, &self.flash_attn_crate, &self.transformers_crate, &self.examples_crate]
    }
}

fn has_cuda_sources(dir: &Path) -> bool {
    std::fs::read_dir(dir).map(|rd| rd.flatten().any(|e| e.path().extension().is_some_and(|x| x == "cu"))).unwrap_or(false)
}

fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        home.join(".cargo")
    })
}

/// `$CARGO_HOME/registry/src/<index>/<name>-<version>` (first index, sorted),
/// only when cargo finished unpacking it (it writes `.cargo-ok` last).
pub fn registry_dir(name: &str, version: &str) -> Option<PathBuf> {
    let src = cargo_home().join("registry/src");
    let mut indexes: Vec<PathBuf> = std::fs::read_dir(src).ok()?.flatten().map(|e| e.path()).collect();
    indexes.sort();
    indexes.into_iter().map(|i| i.join(format!("{name}-{version}"))).find(|d| d.join("Cargo.toml").is_file() && d.join(".cargo-ok").is_file())
}

/// The cargo registry's copy of the crates.io package `name` `version`, fetched when absent.
pub fn registry_crate(name: &str, version: &str) -> Result<PathBuf> {
    if let Some(dir) = registry_dir(name, version) {
        return Ok(dir);
    }
    fetch(&[name], version)?;
    registry_dir(name, version).with_context(|| format!("{name} {version} is not in the cargo registry after cargo fetch"))
}

/// `cargo fetch` of a throwaway manifest that depends on exactly `version`.
pub fn fetch(names: &[&str], version: &str) -> Result<()> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let deps: String = names.iter().map(|n| format!("{n} = \"={version}\"\n")).collect();
    std::fs::write(dir.path().join("Cargo.toml"), format!("[package]\nname = \"candle-rocm-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n{deps}"))?;
    std::fs::create_dir_all(dir.path().join("src"))?;
    std::fs::write(dir.path().join("src/lib.rs"), "")?;
    let out = crate::workspace::cargo_command()
        .arg("fetch")
        .arg("--manifest-path")
        .arg(dir.path().join("Cargo.toml"))
        .output()
        .context("running cargo fetch")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!("{} {version} is not on crates.io (cargo fetch failed: {})", names[0], first_error_line(&stderr));
    }
    Ok(())
}

/// The first line of cargo's stderr that says what went wrong, without its
/// `error:` prefix.
fn first_error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let line = lines.iter().find(|l| l.starts_with("error")).or(lines.last()).copied().unwrap_or("no output");
    line.strip_prefix("error:").unwrap_or(line).trim().to_string()
}

/// Name, version, license and repository of the crate at `dir`.
pub(crate) fn read_crate(dir: &Path, workspace: Option<&toml::Table>) -> Result<CrateSource> {
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
    let table: toml::Table = text.parse().with_context(|| format!("parsing {}", manifest.display()))?;
    let package = table.get("package").and_then(|p| p.as_table()).with_context(|| format!("{} has no [package]", manifest.display()))?;
    let field = |key: &str| -> String {
        match package.get(key) {
            Some(toml::Value::String(s)) => s.clone(),
            // `key.workspace = true` in a checkout
            Some(toml::Value::Table(_)) => workspace
                .and_then(|w| w.get("workspace")?.get("package")?.get(key)?.as_str().map(str::to_string))
                .unwrap_or_default(),
            _ => String::new(),
        }
    };
    let version = field("version");
    if version.is_empty() {
        bail!("{}: no package version", manifest.display());
    }
    let mut license = field("license");
    if license.is_empty() {
        let file = field("license-file");
        if !file.is_empty() {
            license = format!("see {file}");
        }
    }
    Ok(CrateSource { name: field("name"), version, root: dir.to_path_buf(), license, repository: field("repository") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin() -> CandlePin {
        CandlePin { version: "0.11.1".into(), kernels_crate: "candle-kernels".into(), core_crate: "candle-core".into(), nn_crate: "candle-nn".into(), flash_attn_crate: "candle-flash-attn".into(), transformers_crate: "candle-transformers".into(), examples_crate: "candle-examples".into() }
    }

    #[test]
    fn first_error_line_strips_the_prefix() {
        let stderr = "    Updating crates.io index\nerror: failed to select a version for the requirement `candle-kernels = \"=9.9.9\"`\ncandidate versions found which didn't match: 0.11.1\n";
        assert_eq!(first_error_line(stderr), "failed to select a version for the requirement `candle-kernels = \"=9.9.9\"`");
        assert_eq!(first_error_line("something odd\n"), "something odd");
        assert_eq!(first_error_line(""), "no output");
    }

    #[test]
    fn a_checkout_resolves_workspace_inherited_fields() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("Cargo.toml"), "[workspace.package]\nversion = \"0.12.0-alpha.1\"\nlicense = \"MIT OR Apache-2.0\"\nrepository = \"https://github.com/huggingface/candle\"\n").unwrap();
        std::fs::create_dir_all(root.join("candle-kernels/src")).unwrap();
        std::fs::write(root.join("candle-kernels/src/a.cu"), "").unwrap();
        std::fs::write(root.join("candle-kernels/Cargo.toml"), "[package]\nname = \"candle-kernels\"\nversion.workspace = true\nlicense.workspace = true\nrepository.workspace = true\n").unwrap();
        std::fs::create_dir_all(root.join("candle-core")).unwrap();
        std::fs::write(root.join("candle-core/Cargo.toml"), "[package]\nname = \"candle-core\"\nversion = \"0.12.0-alpha.1\"\nlicense-file = \"LICENSE\"\n").unwrap();
        std::fs::create_dir_all(root.join("candle-nn")).unwrap();
        for name in ["candle-nn", "candle-transformers", "candle-examples"] {
            std::fs::create_dir_all(root.join(name)).unwrap();
            std::fs::write(root.join(name).join("Cargo.toml"), format!("[package]\nname = \"{name}\"\nversion = \"0.12.0-alpha.1\"\n")).unwrap();
        }
        let up = from_checkout(&pin(), root).unwrap();
        assert_eq!(up.kernels.version, "0.12.0-alpha.1");
        assert_eq!(up.kernels.license, "MIT OR Apache-2.0");
        assert_eq!(up.kernels.repository, "https://github.com/huggingface/candle");
        assert_eq!(up.core.license, "see LICENSE");
        assert_eq!(up.origin.as_str(), "checkout");
    }

    #[test]
    fn not_a_checkout_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let e = from_checkout(&pin(), dir.path()).unwrap_err().to_string();
        assert_eq!(e, format!("{} is not a Candle checkout: missing candle-kernels/src", dir.path().display()));
        std::fs::create_dir_all(dir.path().join("candle-kernels/src")).unwrap();
        std::fs::write(dir.path().join("candle-kernels/src/a.cu"), "").unwrap();
        let e = from_checkout(&pin(), dir.path()).unwrap_err().to_string();
        assert!(e.ends_with("is not a Candle checkout: missing candle-core/Cargo.toml"), "{e}");
    }
}
