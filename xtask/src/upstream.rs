//! Where the Candle sources come from: the pinned crates.io release (from the
//! local cargo registry, fetched with cargo when absent) or a checkout.

use std::path::{Path, PathBuf};
use std::process::Command;

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
}

#[derive(Debug, Deserialize)]
pub struct KernelsConfig {
    /// Kernel units that upstream links as a static library (wildcards).
    pub static_library: Vec<String>,
}

pub fn load_config(workspace: &Path) -> Result<UpstreamConfig> {
    let path = workspace.join("upstream.toml");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
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

/// Where the inputs came from, for the report and the manifest (never an absolute path).
#[derive(Debug, Clone)]
pub enum Origin {
    CratesIo,
    Checkout,
}

#[derive(Debug, Clone)]
pub struct Upstream {
    pub origin: Origin,
    pub kernels: CrateSource,
    pub core: CrateSource,
}

/// The crates.io release `version`.
pub fn from_registry(pin: &CandlePin, version: &str) -> Result<Upstream> {
    let names = [pin.kernels_crate.as_str(), pin.core_crate.as_str()];
    if names.iter().any(|n| registry_dir(n, version).is_none()) {
        fetch(&names, version)?;
    }
    let mut found = names.iter().map(|n| {
        let dir = registry_dir(n, version).with_context(|| format!("{n} {version} is not in the cargo registry after cargo fetch"))?;
        read_crate(&dir, None)
    });
    let kernels = found.next().expect("two crates")?;
    let core = found.next().expect("two crates")?;
    Ok(Upstream { origin: Origin::CratesIo, kernels, core })
}

/// A Candle git checkout (its `candle-kernels/` and `candle-core/`).
pub fn from_checkout(pin: &CandlePin, dir: &Path) -> Result<Upstream> {
    let kernels_dir = dir.join(&pin.kernels_crate);
    if !kernels_dir.join("src").is_dir() || !has_cuda_sources(&kernels_dir.join("src")) {
        bail!("{} is not a Candle checkout: missing {}/src with .cu files", dir.display(), pin.kernels_crate);
    }
    let core_dir = dir.join(&pin.core_crate);
    if !core_dir.join("Cargo.toml").is_file() {
        bail!("{} is not a Candle checkout: missing {}/Cargo.toml", dir.display(), pin.core_crate);
    }
    let workspace_manifest = dir.join("Cargo.toml");
    let workspace = std::fs::read_to_string(&workspace_manifest).ok().and_then(|t| t.parse::<toml::Table>().ok());
    Ok(Upstream {
        origin: Origin::Checkout,
        kernels: read_crate(&kernels_dir, workspace.as_ref())?,
        core: read_crate(&core_dir, workspace.as_ref())?,
    })
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

/// `$CARGO_HOME/registry/src/<index>/<name>-<version>` (first index, sorted).
fn registry_dir(name: &str, version: &str) -> Option<PathBuf> {
    let src = cargo_home().join("registry/src");
    let mut indexes: Vec<PathBuf> = std::fs::read_dir(src).ok()?.flatten().map(|e| e.path()).collect();
    indexes.sort();
    indexes.into_iter().map(|i| i.join(format!("{name}-{version}"))).find(|d| d.join("Cargo.toml").is_file())
}

/// `cargo fetch` of a throwaway manifest that depends on exactly `version`.
fn fetch(names: &[&str], version: &str) -> Result<()> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let deps: String = names.iter().map(|n| format!("{n} = \"={version}\"\n")).collect();
    std::fs::write(dir.path().join("Cargo.toml"), format!("[package]\nname = \"candle-rocm-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n{deps}"))?;
    std::fs::create_dir_all(dir.path().join("src"))?;
    std::fs::write(dir.path().join("src/lib.rs"), "")?;
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .arg("fetch")
        .arg("--manifest-path")
        .arg(dir.path().join("Cargo.toml"))
        .output()
        .context("running cargo fetch")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let reason = stderr.lines().find(|l| l.contains("error")).unwrap_or("cargo fetch failed").trim().to_string();
        bail!("{} {version} is not on crates.io ({reason})", names[0]);
    }
    Ok(())
}

/// Name, version, license and repository of the crate at `dir`.
fn read_crate(dir: &Path, workspace: Option<&toml::Table>) -> Result<CrateSource> {
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
    Ok(CrateSource { name: field("name"), version, root: dir.to_path_buf(), license: field("license"), repository: field("repository") })
}
