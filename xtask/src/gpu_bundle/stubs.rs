//! The ROCm 7.2 libraries the binaries are linked against and load: stubs made
//! from export lists (of a ROCm 7.2 root's libraries, or of the forwarder's
//! own exports) in the link directory, the bundle's `lib/` (the forwarder and
//! the empty libraries that depend on it), and the check of the binaries'
//! imports against the forwarder.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::binaries::TestBinary;
use crate::rocm;

/// The ROCm release whose ABI the binaries are linked against (what users run).
const ROCM_RELEASE: &str = "7.2";
/// Its libraries (`rocm-releases.toml`, `sonames` of the release): the HIP
/// runtime, rocBLAS, rocRAND, RCCL, with the `-l` name candle-rocm-hip's build
/// script links each by and the prefix of the entry points the forwarder
/// implements for it (RCCL keeps NCCL's names; `pnccl` are its profiling aliases).
pub const LIBRARIES: [RocmLibrary; 4] = [
    RocmLibrary { link_name: "amdhip64", soname: "libamdhip64.so.7", prefixes: &["hip", "__hip"] },
    RocmLibrary { link_name: "rocblas", soname: "librocblas.so.5", prefixes: &["rocblas_"] },
    RocmLibrary { link_name: "rocrand", soname: "librocrand.so.1", prefixes: &["rocrand_"] },
    RocmLibrary { link_name: "rccl", soname: "librccl.so.1", prefixes: &["nccl", "pnccl"] },
];
/// Where the ROCm 7.2 root's libraries are, below the root.
const ROOT_LIB_DIRS: [&str; 3] = ["usr/lib/x86_64-linux-gnu", "opt/rocm/lib", "usr/lib"];

pub struct RocmLibrary {
    link_name: &'static str,
    pub soname: &'static str,
    prefixes: &'static [&'static str],
}

impl RocmLibrary {
    fn owns(&self, symbol: &str) -> bool {
        self.prefixes.iter().any(|p| symbol.starts_with(p))
    }
}

/// The link directory: the stubs the binaries are linked against, what they
/// were made from (for BUNDLE.txt), and the forwarder's version nodes.
pub struct LinkDir {
    pub dir: PathBuf,
    pub linked_against: String,
    pub forwarder_nodes: Vec<(String, Option<String>)>,
}

/// Reads the forwarder's exports and writes the stubs of the four libraries
/// below `build_dir` (those of the ROCm 7.2 root `rocm_root` or at the default
/// place, else of the forwarder's own exports).
pub fn link_dir(root: &Path, build_dir: &Path, rocm_root: Option<&Path>, forwarder: &Path) -> Result<LinkDir> {
    let forwarder_exports = read_exports(forwarder)?;
    if forwarder_exports.soname != LIBRARIES[0].soname {
        bail!("{} has soname {}, not {} (hip-on-cuda/build.rs)", forwarder.display(), forwarder_exports.soname, LIBRARIES[0].soname);
    }

    // The libraries the binaries are linked against (candle-rocm-hip's build
    // script links amdhip64, rocblas and rocrand from CANDLE_ROCM_LIB_DIR):
    // stubs with the sonames and exports of ROCm 7.2's, or of the forwarder.
    let (rocm_libs, linked_against, link_dir) = match rocm_root_libraries(root, rocm_root)? {
        Some((rocm_root, libs)) => {
            let mut exports = Vec::new();
            for path in &libs {
                exports.push(read_exports(path)?);
            }
            let nodes: Vec<&str> = exports[0].nodes.iter().map(|(n, _)| n.as_str()).collect();
            let ours: Vec<&str> = forwarder_exports.nodes.iter().map(|(n, _)| n.as_str()).collect();
            if nodes != ours {
                bail!(
                    "the version nodes of {} ({}) are not the forwarder's ({}): update hip-on-cuda/hip-versions.map",
                    libs[0].display(), nodes.join(" "), ours.join(" ")
                );
            }
            let described = format!(
                "stubs of ROCm {ROCM_RELEASE}'s libraries in {} ({})",
                rocm_root.display(),
                exports.iter().map(|e| format!("{}: {} exports", e.soname, e.symbols.len())).collect::<Vec<_>>().join(", ")
            );
            (exports, described, format!("link/rocm-{ROCM_RELEASE}"))
        }
        None => {
            let default = root.join(default_rocm_root());
            eprintln!(
                "note: no ROCm {ROCM_RELEASE} root at {} (cargo xtask rocm-root {ROCM_RELEASE}, or --rocm-root DIR): \
                 the binaries are linked against stubs of the forwarder's own exports, with ROCm {ROCM_RELEASE}'s sonames \
                 and the version nodes of hip-on-cuda/hip-versions.map, not checked against ROCm {ROCM_RELEASE}'s libraries",
                default.display()
            );
            let exports = LIBRARIES.iter().map(|l| forwarder_exports.part(l)).collect();
            let described = format!(
                "stubs of the forwarder's own exports (no ROCm {ROCM_RELEASE} root at {}: not checked against ROCm {ROCM_RELEASE}'s libraries)",
                default.display()
            );
            (exports, described, "link/forwarder".to_string())
        }
    };
    // One folder per kind of stub: switching kinds changes CANDLE_ROCM_LIB_DIR, so the binaries are linked again.
    let lib = build_dir.join(link_dir);
    std::fs::create_dir_all(&lib).with_context(|| format!("creating {}", lib.display()))?;
    for (library, exports) in LIBRARIES.iter().zip(&rocm_libs) {
        write_stub(&lib, library, exports)?;
    }
    eprintln!("== linked against {linked_against}");
    Ok(LinkDir { dir: lib, linked_against, forwarder_nodes: forwarder_exports.nodes })
}

/// The bundle's `lib/` in `dir`: the forwarder as `libamdhip64.so.7`, and
/// `librocblas.so.5` / `librocrand.so.1` / `librccl.so.1` empty and depending on it.
pub fn bundle_lib(forwarder: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::copy(forwarder, dir.join(LIBRARIES[0].soname))
        .with_context(|| format!("copying {} into {}", forwarder.display(), dir.display()))?;
    for library in &LIBRARIES[1..] {
        soname_library(&dir.join(library.soname), dir, LIBRARIES[0].soname, &[])?;
    }
    Ok(())
}

/// `target/rocm/7.2/root`, where `cargo xtask rocm-root 7.2` makes the root.
fn default_rocm_root() -> PathBuf {
    // relative to the workspace root: where `cargo xtask rocm-root 7.2` makes it
    rocm::root::RocmRoot { release: ROCM_RELEASE.into(), dir: rocm::root::default_dir(Path::new(""), ROCM_RELEASE) }.root()
}

/// The ROCm 7.2 root and the paths of its four libraries (in `LIBRARIES`'
/// order), or `None` when no root was named and the default one is not there
/// (or lacks one of them).
fn rocm_root_libraries(root: &Path, named: Option<&Path>) -> Result<Option<(PathBuf, Vec<PathBuf>)>> {
    let dir = root.join(named.map(Path::to_path_buf).unwrap_or_else(default_rocm_root));
    let find = |soname: &str| ROOT_LIB_DIRS.iter().map(|d| dir.join(d).join(soname)).find(|p| p.is_file());
    let found: Vec<Option<PathBuf>> = LIBRARIES.iter().map(|l| find(l.soname)).collect();
    if found.iter().all(Option::is_some) {
        return Ok(Some((dir, found.into_iter().flatten().collect())));
    }
    if named.is_none() {
        return Ok(None);
    }
    let missing: Vec<&str> = LIBRARIES.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|(l, _)| l.soname).collect();
    bail!(
        "--rocm-root {}: no {} in {} below it (a ROCm {ROCM_RELEASE} root: cargo xtask rocm-root {ROCM_RELEASE})",
        dir.display(),
        missing.join(", "),
        ROOT_LIB_DIRS.join(", ")
    )
}

/// What a shared library's dynamic symbol table exports.
#[derive(Debug, Clone, PartialEq)]
struct Exports {
    soname: String,
    /// Version nodes (not the base one) with their parent, in definition order.
    nodes: Vec<(String, Option<String>)>,
    /// Defined symbols by name.
    symbols: BTreeMap<String, Symbol>,
}

#[derive(Debug, Clone, PartialEq)]
struct Symbol {
    /// The version node (`hip_4.2`), `None` for an unversioned symbol.
    version: Option<String>,
    kind: SymbolKind,
    weak: bool,
    /// For data only (a function's size does not reach a binary that imports it).
    size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SymbolKind {
    Function,
    Object,
    Tls,
}

/// Symbols a linker defines by itself in a shared library (GNU ld: `_edata` …):
/// not stubbed, not compared.
const LINKER_DEFINED: [&str; 5] = ["_edata", "_end", "__bss_start", "_init", "_fini"];

pub fn readelf(args: &[&str], path: &Path) -> Result<String> {
    let out = Command::new("readelf")
        .args(args)
        .arg(path)
        .output()
        .context("running readelf (binutils)")?;
    if !out.status.success() {
        bail!("readelf {} {} failed: {}", args.join(" "), path.display(), String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The `[...]` values of the `readelf -d` lines tagged `(TAG)`.
pub fn dynamic_entries(dynamic: &str, tag: &str) -> Vec<String> {
    let tag = format!("({tag})");
    dynamic
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(tag.as_str()))
        .filter_map(|l| Some(l[l.find('[')? + 1..l.rfind(']')?].to_string()))
        .collect()
}

/// The version definitions of `readelf -V`: (node, parent), the base one left out.
fn version_nodes(versions: &str) -> Vec<(String, Option<String>)> {
    let mut nodes: Vec<(String, Option<String>)> = Vec::new();
    let mut in_definitions = false;
    for line in versions.lines() {
        if line.starts_with("Version ") {
            in_definitions = line.starts_with("Version definition section");
            continue;
        }
        if !in_definitions {
            continue;
        }
        if let Some(name) = line.split("Name: ").nth(1) {
            if !line.contains("Flags: BASE") {
                nodes.push((name.trim().to_string(), None));
            }
        } else if let Some(parent) = line.split("Parent 1: ").nth(1) {
            if let Some(last) = nodes.last_mut() {
                last.1 = Some(parent.trim().to_string());
            }
        }
    }
    nodes
}

/// One symbol line of `readelf -W --dyn-syms`: (name, version, hidden-version, kind, bind, size, section).
fn parse_symbol_line(line: &str) -> Option<(String, Option<String>, &str, &str, u64, &str)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 8 || !f[0].ends_with(':') || f[0].trim_end_matches(':').parse::<u64>().is_err() {
        return None;
    }
    let size = match f[2].strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => f[2].parse().ok()?,
    };
    let (name, version) = match f[7].split_once('@') {
        Some((n, v)) => (n.to_string(), Some(v.to_string())),
        None => (f[7].to_string(), None),
    };
    Some((name, version, f[3], f[4], size, f[6]))
}

/// The exports of a shared library (soname, version nodes, defined dynamic symbols).
fn read_exports(path: &Path) -> Result<Exports> {
    let soname = dynamic_entries(&readelf(&["-W", "-d"], path)?, "SONAME")
        .pop()
        .with_context(|| format!("{} has no soname", path.display()))?;
    let nodes = version_nodes(&readelf(&["-W", "-V"], path)?);
    let mut symbols = BTreeMap::new();
    for line in readelf(&["-W", "--dyn-syms"], path)?.lines() {
        let Some((name, version, kind, bind, size, section)) = parse_symbol_line(line) else { continue };
        if section == "UND" || section == "ABS" || name.is_empty() || LINKER_DEFINED.contains(&name.as_str()) {
            continue; // imports, version node symbols
        }
        let version = match version {
            Some(v) => match v.strip_prefix('@') {
                Some(default) => Some(default.to_string()),
                None => bail!("{}: {name}@{v} is a non-default version, which the stubs do not reproduce", path.display()),
            },
            None => None,
        };
        let kind = match kind {
            "FUNC" => SymbolKind::Function,
            "OBJECT" => SymbolKind::Object,
            "TLS" => SymbolKind::Tls,
            other => bail!("{}: {name} is a {other} symbol, which the stubs do not reproduce", path.display()),
        };
        let weak = match bind {
            "GLOBAL" => false,
            "WEAK" => true,
            other => bail!("{}: {name} has binding {other}", path.display()),
        };
        let size = if kind == SymbolKind::Function { 0 } else { size };
        let symbol = Symbol { version, kind, weak, size };
        if let Some(old) = symbols.insert(name.clone(), symbol) {
            bail!("{}: {name} is defined twice ({:?} and more): the stubs do not reproduce that", path.display(), old.version);
        }
    }
    Ok(Exports { soname, nodes, symbols })
}

impl Exports {
    /// The forwarder's exports that stand for `library`: its entry points (the
    /// HIP runtime takes everything that is not rocBLAS's, rocRAND's or RCCL's), under
    /// its soname; only the HIP runtime has version nodes.
    fn part(&self, library: &RocmLibrary) -> Exports {
        let hip = library.soname == LIBRARIES[0].soname;
        let symbols = self
            .symbols
            .iter()
            .filter(|(name, _)| if hip { !LIBRARIES[1..].iter().any(|l| l.owns(name)) } else { library.owns(name) })
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect();
        Exports { soname: library.soname.to_string(), nodes: if hip { self.nodes.clone() } else { Vec::new() }, symbols }
    }

    /// The assembly and (for a versioned library) the version script of a stub with these exports.
    fn stub_sources(&self) -> (String, Option<String>) {
        let mut asm = String::from("# stub: the exports of one library (cargo xtask gpu-bundle), nothing behind them\n");
        for (name, s) in &self.symbols {
            let (section, kind) = match s.kind {
                SymbolKind::Function => (".text", "@function"),
                SymbolKind::Object => (".bss", "@object"),
                SymbolKind::Tls => (".section .tbss,\"awT\",@nobits", "@tls_object"),
            };
            let bind = if s.weak { ".weak" } else { ".globl" };
            let body = if s.kind == SymbolKind::Function { "ret".to_string() } else { format!(".zero {}", s.size) };
            let size = if s.kind == SymbolKind::Function { 1 } else { s.size };
            let _ = writeln!(asm, "{section}\n{bind} \"{name}\"\n.type \"{name}\", {kind}\n.size \"{name}\", {size}\n\"{name}\": {body}");
        }
        asm.push_str(".section .note.GNU-stack,\"\",@progbits\n");
        if self.nodes.is_empty() {
            return (asm, None);
        }
        let mut map = String::new();
        for (node, parent) in &self.nodes {
            let names: Vec<String> = self
                .symbols
                .iter()
                .filter(|(_, s)| s.version.as_deref() == Some(node.as_str()))
                .map(|(n, _)| format!("\"{n}\";"))
                .collect();
            let global = if names.is_empty() { String::new() } else { format!(" global: {} ", names.join(" ")) };
            let _ = writeln!(map, "{node} {{{global}}}{};", parent.as_ref().map(|p| format!(" {p}")).unwrap_or_default());
        }
        (asm, Some(map))
    }
}

/// `dir/<soname>`: a stub with `exports` (checked by reading it back), and
/// `dir/lib<name>.so` -> it, what `-l<name>` finds. An unchanged stub is not rewritten.
fn write_stub(dir: &Path, library: &RocmLibrary, exports: &Exports) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let (asm, map) = exports.stub_sources();
    let asm_path = tmp.path().join("stub.s");
    std::fs::write(&asm_path, asm)?;
    let built = tmp.path().join(library.soname);
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-nostdlib", "-o"]).arg(&built).arg(&asm_path).arg(format!("-Wl,-soname,{}", library.soname));
    if let Some(map) = map {
        let map_path = tmp.path().join("stub.map");
        std::fs::write(&map_path, map)?;
        cc.arg(format!("-Wl,--version-script={}", map_path.display()));
    }
    let out = cc.output().context("running cc (the stub libraries are assembled and linked with it)")?;
    if !out.status.success() {
        bail!("building the stub {} failed:\n{}", library.soname, String::from_utf8_lossy(&out.stderr));
    }
    let got = read_exports(&built)?;
    if got != *exports {
        let diff: Vec<String> = exports
            .symbols
            .iter()
            .filter(|(n, s)| got.symbols.get(*n) != Some(s))
            .map(|(n, s)| format!("{n}: want {s:?}, stub has {:?}", got.symbols.get(n)))
            .chain(got.symbols.keys().filter(|n| !exports.symbols.contains_key(*n)).map(|n| format!("{n}: only in the stub")))
            .take(10)
            .collect();
        bail!(
            "the stub {} does not export what it should (nodes {:?} vs {:?}):\n  {}",
            library.soname, got.nodes, exports.nodes, diff.join("\n  ")
        );
    }
    let dest = dir.join(library.soname);
    if std::fs::read(&dest).ok() != Some(std::fs::read(&built)?) {
        std::fs::copy(&built, &dest).with_context(|| format!("writing {}", dest.display()))?;
    }
    let link = dir.join(format!("lib{}.so", library.link_name));
    if std::fs::read_link(&link).ok().as_deref() != Some(Path::new(library.soname)) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(library.soname, &link).with_context(|| format!("linking {}", link.display()))?;
    }
    Ok(())
}

/// `dest`: an empty library whose soname is its file name, that depends on
/// `needed` (in `needed_dir`) and defines the version `nodes` (none, or what the
/// binaries that load it require): what the binaries load as librocblas.so.5 /
/// librocrand.so.1, so that their rocBLAS/rocRAND references bind to the one
/// forwarder, not to a second copy of it (with a second copy of its state).
pub fn soname_library(dest: &Path, needed_dir: &Path, needed: &str, nodes: &[(String, Option<String>)]) -> Result<()> {
    let soname = dest.file_name().context("no file name")?.to_string_lossy().into_owned();
    let tmp = tempfile::tempdir()?;
    let asm = tmp.path().join("empty.s");
    std::fs::write(&asm, ".section .note.GNU-stack,\"\",@progbits\n")?;
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-nostdlib", "-o"])
        .arg(dest)
        .arg(&asm)
        .arg(format!("-Wl,-soname,{soname}"))
        .arg("-Wl,--no-as-needed")
        .arg(format!("-L{}", needed_dir.display()))
        .arg(format!("-l:{needed}"));
    if !nodes.is_empty() {
        let map = tmp.path().join("nodes.map");
        let nodes = Exports { soname: soname.clone(), nodes: nodes.to_vec(), symbols: BTreeMap::new() };
        std::fs::write(&map, nodes.stub_sources().1.unwrap_or_default())?;
        cc.arg(format!("-Wl,--version-script={}", map.display()));
    }
    let out = cc.output().context("running cc")?;
    if !out.status.success() {
        bail!("building {} failed:\n{}", dest.display(), String::from_utf8_lossy(&out.stderr));
    }
    let dynamic = readelf(&["-W", "-d"], &dest)?;
    if dynamic_entries(&dynamic, "NEEDED") != [needed] || dynamic_entries(&dynamic, "SONAME") != [soname.as_str()] {
        bail!("{}: expected soname {soname} and only {needed} needed:\n{dynamic}", dest.display());
    }
    Ok(())
}

/// Checks what the binaries import from the ROCm libraries: their `DT_NEEDED`
/// ROCm libraries are the sonames of `LIBRARIES`, and each HIP/rocBLAS/rocRAND/RCCL
/// symbol they import is defined by the forwarder with the same version, and by
/// the library they were linked against. Returns a summary for BUNDLE.txt.
pub fn check_imports(binaries: &[TestBinary], forwarder: &Path, link_dir: &Path) -> Result<String> {
    let paths: Vec<PathBuf> = binaries.iter().map(|b| b.path.clone()).collect();
    let linked: Vec<PathBuf> = LIBRARIES.iter().map(|l| link_dir.join(l.soname)).collect();
    // the sonames they need and every ROCm import, against the libraries they were linked against
    let report = rocm::abi::check(&paths, &linked)?;
    let forwarded = rocm::abi::read(forwarder)?;
    let mut errors: Vec<String> = report.problems.iter().map(|(b, missing)| format!("{}: {} (not in {})", b.display(), missing.join(", "), link_dir.display())).collect();
    errors.extend(report.imported.keys().filter(|s| !forwarded.exports.contains(s)).map(|s| format!("{s}: imported, not defined by the forwarder (with that version)")));
    if !errors.is_empty() {
        bail!("the binaries' imports from the ROCm libraries:\n  {}", errors.join("\n  "));
    }
    let versions: BTreeSet<&str> = report.imported.keys().filter_map(|s| s.version.as_deref()).collect();
    Ok(format!(
        "imports checked: {} binaries need {}; they import {} HIP/rocBLAS/rocRAND/RCCL symbols ({} versioned, nodes {}), \
         each defined by the forwarder (lib/{}) with the same version",
        binaries.len(),
        report.needed.iter().map(|(l, n)| format!("{l} ({n})")).collect::<Vec<_>>().join(", "),
        report.imported.len(),
        report.imported.keys().filter(|s| s.version.is_some()).count(),
        versions.into_iter().collect::<Vec<_>>().join(" "),
        LIBRARIES[0].soname
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::workspace_root;

    #[test]
    fn sonames_are_those_of_rocm_releases_toml() {
        let text = std::fs::read_to_string(workspace_root().join("rocm-releases.toml")).unwrap();
        let releases: toml::Value = toml::from_str(&text).unwrap();
        let sonames: Vec<&str> = releases["release"][ROCM_RELEASE]["sonames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert_eq!(sonames, LIBRARIES.map(|l| l.soname));
    }

    /// A stub exports what it is made from: versions (with parents), kinds,
    /// bindings, data sizes; and an unversioned library stays unversioned.
    #[test]
    fn stubs_export_what_they_are_made_from() {
        let sym = |version: Option<&str>, kind, weak, size| Symbol { version: version.map(String::from), kind, weak, size };
        let hip = Exports {
            soname: "libamdhip64.so.7".into(),
            nodes: vec![("hip_4.2".into(), None), ("hip_4.3".into(), Some("hip_4.2".into())), ("hip_7.2".into(), Some("hip_4.3".into()))],
            symbols: BTreeMap::from([
                ("hipMalloc".into(), sym(Some("hip_4.2"), SymbolKind::Function, false, 0)),
                ("hipStreamIsCapturing".into(), sym(Some("hip_4.3"), SymbolKind::Function, false, 0)),
                ("hipWeak".into(), sym(Some("hip_4.3"), SymbolKind::Function, true, 0)),
                ("hipTable".into(), sym(Some("hip_4.2"), SymbolKind::Object, false, 40)),
            ]),
        };
        let blas = Exports {
            soname: "librocblas.so.5".into(),
            nodes: Vec::new(),
            symbols: BTreeMap::from([
                ("rocblas_sgemm".into(), sym(None, SymbolKind::Function, false, 0)),
                ("_ZN7rocblas5tableE".into(), sym(None, SymbolKind::Object, true, 100000)),
                ("_ZZ7rocblasE3tls".into(), sym(None, SymbolKind::Tls, true, 8)),
            ]),
        };
        let dir = tempfile::tempdir().unwrap();
        for (library, exports) in [(&LIBRARIES[0], &hip), (&LIBRARIES[1], &blas)] {
            write_stub(dir.path(), library, exports).unwrap();
            assert_eq!(read_exports(&dir.path().join(format!("lib{}.so", library.link_name))).unwrap(), *exports);
        }
        soname_library(&dir.path().join("librocrand.so.1"), dir.path(), "libamdhip64.so.7", &[]).unwrap();
        let rand = read_exports(&dir.path().join("librocrand.so.1")).unwrap();
        assert!(rand.symbols.is_empty() && rand.nodes.is_empty() && rand.soname == "librocrand.so.1");
        soname_library(&dir.path().join("libamdhip64.so.5"), dir.path(), "libamdhip64.so.7", &hip.nodes).unwrap();
        let compat = read_exports(&dir.path().join("libamdhip64.so.5")).unwrap();
        assert!(compat.symbols.is_empty() && compat.nodes == hip.nodes);
    }

    /// Without a root, the forwarder's exports are split by entry-point prefix
    /// under the four sonames; only the HIP runtime keeps the version nodes.
    #[test]
    fn forwarder_parts() {
        let f = |v: Option<&str>| Symbol { version: v.map(String::from), kind: SymbolKind::Function, weak: false, size: 0 };
        let forwarder = Exports {
            soname: "libamdhip64.so.7".into(),
            nodes: vec![("hip_4.2".into(), None)],
            symbols: BTreeMap::from([
                ("hipMalloc".into(), f(Some("hip_4.2"))),
                ("__hipRegisterFatBinary".into(), f(Some("hip_4.2"))),
                ("rocblas_sgemm".into(), f(None)),
                ("rocrand_set_seed".into(), f(None)),
                ("ncclAllReduce".into(), f(None)),
            ]),
        };
        let parts: Vec<Exports> = LIBRARIES.iter().map(|l| forwarder.part(l)).collect();
        let names = |e: &Exports| e.symbols.keys().cloned().collect::<Vec<_>>();
        assert_eq!(names(&parts[0]), ["__hipRegisterFatBinary", "hipMalloc"]);
        assert_eq!(names(&parts[1]), ["rocblas_sgemm"]);
        assert_eq!(names(&parts[2]), ["rocrand_set_seed"]);
        assert_eq!(names(&parts[3]), ["ncclAllReduce"]);
        assert_eq!((parts[0].nodes.len(), parts[1].nodes.len(), parts[2].soname.as_str()), (1, 0, "librocrand.so.1"));
    }

    /// With a ROCm 7.2 root at the default place, its libraries' stubs are exact
    /// (write_stub reads each back) and its version nodes are the forwarder's map's.
    #[test]
    fn stubs_of_the_rocm_root() {
        let Some((dir, libs)) = rocm_root_libraries(&workspace_root(), None).unwrap() else {
            println!("skipped: no ROCm {ROCM_RELEASE} root at {}", default_rocm_root().display());
            return;
        };
        let out = tempfile::tempdir().unwrap();
        for (library, path) in LIBRARIES.iter().zip(&libs) {
            let exports = read_exports(path).unwrap();
            assert_eq!(exports.soname, library.soname);
            write_stub(out.path(), library, &exports).unwrap();
        }
        let map = std::fs::read_to_string(workspace_root().join("hip-on-cuda/hip-versions.map")).unwrap();
        let ours: Vec<&str> = map.lines().filter(|l| l.starts_with("hip_")).filter_map(|l| l.split_whitespace().next()).collect();
        let nodes = read_exports(&libs[0]).unwrap().nodes;
        assert_eq!(ours, nodes.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), "{}", dir.display());
    }

    #[test]
    fn readelf_lines_are_parsed() {
        let (name, version, kind, bind, size, section) =
            parse_symbol_line("   42: 0000000000012340    24 FUNC    GLOBAL DEFAULT   12 hipMalloc@@hip_4.2").unwrap();
        assert_eq!((name.as_str(), version.as_deref(), kind, bind, size, section), ("hipMalloc", Some("@hip_4.2"), "FUNC", "GLOBAL", 24, "12"));
        let (name, version, .., section) =
            parse_symbol_line("    7: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND hipFree@hip_4.2 (3)").unwrap();
        assert_eq!((name.as_str(), version.as_deref(), section), ("hipFree", Some("hip_4.2"), "UND"));
        assert_eq!(parse_symbol_line("   9: 00000000000a0000 0x186a0 OBJECT  WEAK   DEFAULT   20 table").unwrap().4, 100000);
        assert!(parse_symbol_line("   Num:    Value          Size Type    Bind   Vis      Ndx Name").is_none());
        let nodes = version_nodes(
            "Version definition section '.gnu.version_d' contains 3 entries:\n \
             Addr: 0x0  Offset: 0x0  Link: 4 (.dynstr)\n  \
             000000: Rev: 1  Flags: BASE  Index: 1  Cnt: 1  Name: libamdhip64.so.7\n  \
             0x001c: Rev: 1  Flags: none  Index: 2  Cnt: 1  Name: hip_4.2\n  \
             0x0038: Rev: 1  Flags: none  Index: 3  Cnt: 2  Name: hip_4.3\n  \
             0x0054: Parent 1: hip_4.2\n\n\
             Version needs section '.gnu.version_r' contains 1 entry:\n  \
             000000: Version: 1  File: libc.so.6  Cnt: 1\n  \
             0x0010:   Name: GLIBC_2.2.5  Flags: none  Version: 4\n",
        );
        assert_eq!(nodes, [("hip_4.2".to_string(), None), ("hip_4.3".to_string(), Some("hip_4.2".to_string()))]);
        let d = " 0x0000000000000001 (NEEDED)             Shared library: [libamdhip64.so.7]\n 0x000000000000000e (SONAME)             Library soname: [librocblas.so.5]\n";
        assert_eq!(dynamic_entries(d, "NEEDED"), ["libamdhip64.so.7"]);
        assert_eq!(dynamic_entries(d, "SONAME"), ["librocblas.so.5"]);
    }
}
