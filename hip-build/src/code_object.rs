//! Reading what a build produced: the kernels of one arch, and the global
//! functions of a host object.
//!
//! Both outputs of [`crate::Hipcc::compile`] carry a clang offload bundle:
//! `--genco` writes the bundle itself, `-c` embeds it in the host object's
//! `.hip_fatbin` section. With HIP 5.2.3 (clang 15) the bundle's entries are
//! named `host-x86_64-unknown-linux` and `hipv4-amdgcn-amd-amdhsa--gfx90a`
//! (empty environment, hence `--`; with target features the arch part is a
//! target ID such as `gfx90a:xnack+`). Other releases have written `hip-…`
//! and `…-amdhsa-unknown-gfx90a`; [`arch_of_target`] accepts all of these.
//!
//! The uncompressed bundle format (magic, entry count, then offset, size and
//! name of each entry) is read here directly, so listing kernels needs no
//! external tool; [`extract_image_with_bundler`] does the same through
//! `clang-offload-bundler --unbundle` and is used for compressed bundles
//! (`CCOB`, newer ROCm), which are not parsed here. The tests check that both
//! ways give the same bytes.
//!
//! Each image is an AMDGPU ELF; its kernels are the symbols `NAME.kd`
//! (kernel descriptors). Names are returned as in the symbol table, so
//! C++ kernels come back mangled; candle's kernels are `extern "C"`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

use crate::HipBuildError;

const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
const COMPRESSED_MAGIC: &[u8] = b"CCOB";
/// The host-object section that holds the device bundle.
pub const FATBIN_SECTION: &str = ".hip_fatbin";

/// The kernels (`NAME.kd` symbols, suffix stripped) of `arch` in a code
/// object (`--genco` output) or a host object (`-c` output).
///
/// `arch` is a processor (`gfx90a`: matches that processor with any target
/// features, if only one such image exists) or a full target ID
/// (`gfx90a:xnack+`: matched exactly).
pub fn kernel_symbols(path: &Path, arch: &str) -> Result<BTreeSet<String>, HipBuildError> {
    let mut kernels = BTreeSet::new();
    for image in extract_images(path, arch)? {
        kernels.extend(kernels_of_image(path, arch, &image)?);
    }
    Ok(kernels)
}

/// The kernels of one AMDGPU ELF image (a single-arch code object).
pub fn kernels_of_image(path: &Path, arch: &str, image: &[u8]) -> Result<BTreeSet<String>, HipBuildError> {
    let file = object::File::parse(image).map_err(|e| bad(path, format!("the {arch} image is not an ELF file: {e}")))?;
    if !is_amdgpu_elf(image) {
        return Err(bad(path, format!("the {arch} image is not AMDGPU code ({:?})", file.architecture())));
    }
    Ok(file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok().and_then(|n| n.strip_suffix(".kd")).map(str::to_string))
        .collect())
}

/// The bundle entry names, e.g. `hipv4-amdgcn-amd-amdhsa--gfx90a`, of a code
/// object or of the bundle(s) in a host object's `.hip_fatbin`.
pub fn bundle_targets(path: &Path) -> Result<Vec<String>, HipBuildError> {
    let data = read(path)?;
    let mut targets = Vec::new();
    for bundle in bundles_in(path, &data)? {
        match bundle {
            Bundle::Plain(entries, _) => targets.extend(entries.into_iter().map(|e| e.target)),
            Bundle::Compressed(bytes) => targets.extend(list_with_bundler(path, bytes)?),
        }
    }
    Ok(targets)
}

/// The device images for `arch`, read natively from the bundle(s); compressed
/// bundles go through `clang-offload-bundler`. One image per bundle (a host
/// object has one bundle; a linked library may hold several).
pub fn extract_images(path: &Path, arch: &str) -> Result<Vec<Vec<u8>>, HipBuildError> {
    let data = read(path)?;
    let mut images = Vec::new();
    let mut seen_targets = Vec::new();
    for bundle in bundles_in(path, &data)? {
        match bundle {
            Bundle::Plain(entries, _) => {
                let names: Vec<String> = entries.iter().map(|e| e.target.clone()).collect();
                if let Some(target) = pick_target(path, &names, arch)? {
                    let e = entries.iter().find(|e| e.target == target).expect("picked from entries");
                    images.push(e.bytes.to_vec());
                }
                seen_targets.extend(names);
            }
            Bundle::Compressed(bytes) => {
                let names = list_with_bundler(path, bytes)?;
                if let Some(target) = pick_target(path, &names, arch)? {
                    images.push(unbundle_with_bundler(path, bytes, &target)?);
                }
                seen_targets.extend(names);
            }
        }
    }
    if images.is_empty() {
        return Err(bad(path, format!("no {arch} image in the bundle (targets: {})", seen_targets.join(", "))));
    }
    Ok(images)
}

/// [`extract_images`] done by `clang-offload-bundler --list` and
/// `--unbundle --type=o` (the first bundle only).
pub fn extract_image_with_bundler(path: &Path, arch: &str) -> Result<Vec<u8>, HipBuildError> {
    let data = read(path)?;
    let bytes = bundles_in(path, &data)?
        .into_iter()
        .next()
        .map(|b| match b {
            Bundle::Plain(_, bytes) | Bundle::Compressed(bytes) => bytes,
        })
        .expect("bundles_in returns at least one bundle");
    let names = list_with_bundler(path, bytes)?;
    let target = pick_target(path, &names, arch)?.ok_or_else(|| bad(path, format!("no {arch} image in the bundle (targets: {})", names.join(", "))))?;
    unbundle_with_bundler(path, bytes, &target)
}

/// The arch part of a HIP bundle entry name (`gfx90a`, or a target ID such
/// as `gfx90a:xnack+`); `None` for the host entry and non-HIP entries.
/// Accepts `hipv4-amdgcn-amd-amdhsa--gfx90a`, `hip-amdgcn-amd-amdhsa-gfx90a`,
/// `hipv4-amdgcn-amd-amdhsa-unknown-gfx90a`.
pub fn arch_of_target(target: &str) -> Option<&str> {
    let (kind, rest) = target.split_once('-')?;
    if !kind.starts_with("hip") {
        return None;
    }
    let after = rest.strip_prefix("amdgcn-amd-amdhsa")?;
    let start = after.find("gfx")?;
    // what lies between the triple and the arch is dashes and an environment name only
    after[..start].split('-').all(|p| p.is_empty() || p.chars().all(|c| c.is_ascii_alphanumeric())).then_some(&after[start..])
}

/// The global functions a host object (`-c`) defines: its launchers.
pub fn host_functions(object_file: &Path) -> Result<BTreeSet<String>, HipBuildError> {
    let data = read(object_file)?;
    let file = object::File::parse(&*data).map_err(|e| bad(object_file, format!("not an object file: {e}")))?;
    Ok(file
        .symbols()
        .filter(|s| s.is_definition() && s.is_global() && s.kind() == SymbolKind::Text)
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect())
}

/// The symbols a host object (`-c`) uses without defining: what its linker must find.
pub fn host_undefined_symbols(object_file: &Path) -> Result<BTreeSet<String>, HipBuildError> {
    let data = read(object_file)?;
    let file = object::File::parse(&*data).map_err(|e| bad(object_file, format!("not an object file: {e}")))?;
    Ok(file
        .symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().filter(|n| !n.is_empty()).map(str::to_string))
        .collect())
}

/// One offload bundle holding every entry of the given single-arch bundles
/// (each `--genco --offload-arch=A` output: a host entry and one image):
/// one host entry (the first), then the device images in the order given.
/// This is the bundle a multi-arch `--genco` writes, built from per-arch
/// compiles that can run in parallel. Entries are 4096-aligned, as
/// clang-offload-bundler aligns them for HIP.
pub fn merge_bundles(parts: &[PathBuf]) -> Result<Vec<u8>, HipBuildError> {
    let data: Vec<Vec<u8>> = parts.iter().map(|p| read(p)).collect::<Result<_, _>>()?;
    let mut host: Option<Entry> = None;
    let mut images: Vec<Entry> = Vec::new();
    for (path, bytes) in parts.iter().zip(&data) {
        for bundle in bundles_at(path, bytes)? {
            let Bundle::Plain(entries, _) = bundle else {
                return Err(bad(path, "is a compressed bundle: per-arch bundles are merged uncompressed only".to_string()));
            };
            for e in entries {
                if arch_of_target(&e.target).is_none() {
                    host.get_or_insert(e);
                } else if images.iter().any(|i| i.target == e.target) {
                    return Err(bad(path, format!("a second {} image", e.target)));
                } else {
                    images.push(e);
                }
            }
        }
    }
    let entries: Vec<Entry> = host.into_iter().chain(images).collect();
    Ok(write_bundle(&entries))
}

const BUNDLE_ALIGN: usize = 4096;

fn write_bundle(entries: &[Entry]) -> Vec<u8> {
    let header = BUNDLE_MAGIC.len() + 8 + entries.iter().map(|e| 24 + e.target.len()).sum::<usize>();
    let mut offsets = Vec::with_capacity(entries.len());
    let mut at = header;
    for e in entries {
        at = at.next_multiple_of(BUNDLE_ALIGN);
        offsets.push(at);
        at += e.bytes.len();
    }
    let mut out = BUNDLE_MAGIC.to_vec();
    out.extend((entries.len() as u64).to_le_bytes());
    for (e, offset) in entries.iter().zip(&offsets) {
        out.extend((*offset as u64).to_le_bytes());
        out.extend((e.bytes.len() as u64).to_le_bytes());
        out.extend((e.target.len() as u64).to_le_bytes());
        out.extend(e.target.as_bytes());
    }
    for (e, offset) in entries.iter().zip(&offsets) {
        out.resize(*offset, 0);
        out.extend(e.bytes);
    }
    out
}

struct Entry<'a> {
    target: String,
    bytes: &'a [u8],
}

enum Bundle<'a> {
    /// the entries, and the bundle's own bytes
    Plain(Vec<Entry<'a>>, &'a [u8]),
    Compressed(&'a [u8]),
}

/// The bundle(s) in a file: the file itself, or the `.hip_fatbin` section of
/// an ELF host object.
fn bundles_in<'a>(path: &Path, data: &'a [u8]) -> Result<Vec<Bundle<'a>>, HipBuildError> {
    if data.starts_with(BUNDLE_MAGIC) || data.starts_with(COMPRESSED_MAGIC) {
        return bundles_at(path, data);
    }
    let file = object::File::parse(data).map_err(|e| bad(path, format!("neither an offload bundle nor an object file: {e}")))?;
    if is_amdgpu_elf(data) {
        return Err(bad(path, "is a bare AMDGPU code object, not a bundle: use kernels_of_image".to_string()));
    }
    let section = file
        .section_by_name(FATBIN_SECTION)
        .ok_or_else(|| bad(path, format!("has no {FATBIN_SECTION} section (no HIP device code)")))?;
    let bytes = section.data().map_err(|e| bad(path, format!("reading {FATBIN_SECTION}: {e}")))?;
    bundles_at(path, bytes)
}

/// Bundles laid one after another (as in a linked library's `.hip_fatbin`),
/// zero padding between them.
fn bundles_at<'a>(path: &Path, mut data: &'a [u8]) -> Result<Vec<Bundle<'a>>, HipBuildError> {
    let mut bundles = Vec::new();
    loop {
        if data.starts_with(COMPRESSED_MAGIC) {
            // a compressed bundle's size is in its header only from format v2 on: take the rest
            bundles.push(Bundle::Compressed(data));
            break;
        }
        let (entries, end) = parse_bundle(path, data)?;
        bundles.push(Bundle::Plain(entries, &data[..end]));
        let rest = &data[end..];
        let next = rest.iter().position(|&b| b != 0).map(|i| &rest[i..]);
        match next {
            Some(next) if next.starts_with(BUNDLE_MAGIC) || next.starts_with(COMPRESSED_MAGIC) => data = next,
            _ => break,
        }
    }
    Ok(bundles)
}

/// Entries of one uncompressed bundle, and where the bundle's data ends.
fn parse_bundle<'a>(path: &Path, data: &'a [u8]) -> Result<(Vec<Entry<'a>>, usize), HipBuildError> {
    let corrupt = |what: &str| bad(path, format!("corrupt offload bundle: {what}"));
    if !data.starts_with(BUNDLE_MAGIC) {
        return Err(corrupt("no __CLANG_OFFLOAD_BUNDLE__ magic"));
    }
    let u64_at = |at: usize| -> Result<u64, HipBuildError> {
        data.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).ok_or_else(|| corrupt("header cut short"))
    };
    let count = u64_at(BUNDLE_MAGIC.len())?;
    if count > 4096 {
        return Err(corrupt("implausible entry count"));
    }
    let mut at = BUNDLE_MAGIC.len() + 8;
    let mut entries = Vec::new();
    let mut end = at;
    for _ in 0..count {
        let (offset, size, name_len) = (u64_at(at)? as usize, u64_at(at + 8)? as usize, u64_at(at + 16)? as usize);
        at += 24;
        let name = data.get(at..at.saturating_add(name_len)).ok_or_else(|| corrupt("entry name cut short"))?;
        at += name_len;
        let bytes = data.get(offset..offset.saturating_add(size)).ok_or_else(|| corrupt("entry outside the bundle"))?;
        end = end.max(offset + size).max(at);
        entries.push(Entry { target: String::from_utf8_lossy(name).into_owned(), bytes });
    }
    Ok((entries, end))
}

/// The entry for `arch`: an exact target-ID match, else the single entry of
/// that processor. `Ok(None)` when there is none; an error when ambiguous.
fn pick_target(path: &Path, targets: &[String], arch: &str) -> Result<Option<String>, HipBuildError> {
    let hip: Vec<(&String, &str)> = targets.iter().filter_map(|t| arch_of_target(t).map(|a| (t, a))).collect();
    if let Some((t, _)) = hip.iter().find(|(_, a)| *a == arch) {
        return Ok(Some((*t).clone()));
    }
    if arch.contains(':') {
        return Ok(None);
    }
    let same_processor: Vec<&String> = hip.iter().filter(|(_, a)| a.split(':').next() == Some(arch)).map(|(t, _)| *t).collect();
    match same_processor.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).clone())),
        many => Err(bad(path, format!("several {arch} images ({}): name the target ID", many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")))),
    }
}

fn list_with_bundler(path: &Path, bundle: &[u8]) -> Result<Vec<String>, HipBuildError> {
    let input = temp_with(bundle)?;
    let bundler = offload_bundler();
    let out = Command::new(&bundler)
        .args(["--list", "--type=o"])
        .arg(format!("--input={}", input.path().display()))
        .output()
        .map_err(HipBuildError::io(format!("running {}", bundler.display())))?;
    if !out.status.success() {
        return Err(bad(path, format!("{} --list failed: {}", bundler.display(), String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect())
}

fn unbundle_with_bundler(path: &Path, bundle: &[u8], target: &str) -> Result<Vec<u8>, HipBuildError> {
    let input = temp_with(bundle)?;
    let output = tempfile::NamedTempFile::new().map_err(HipBuildError::io("creating a temporary file"))?;
    let bundler = offload_bundler();
    let out = Command::new(&bundler)
        .args(["--unbundle", "--type=o"])
        .arg(format!("--targets={target}"))
        .arg(format!("--input={}", input.path().display()))
        .arg(format!("--output={}", output.path().display()))
        .output()
        .map_err(HipBuildError::io(format!("running {}", bundler.display())))?;
    if !out.status.success() {
        return Err(bad(path, format!("unbundling {target} failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    std::fs::read(output.path()).map_err(HipBuildError::io(format!("reading the {target} image of {}", path.display())))
}

fn temp_with(bytes: &[u8]) -> Result<tempfile::NamedTempFile, HipBuildError> {
    let mut f = tempfile::NamedTempFile::new().map_err(HipBuildError::io("creating a temporary file"))?;
    std::io::Write::write_all(&mut f, bytes).map_err(HipBuildError::io("writing a temporary file"))?;
    Ok(f)
}

/// `clang-offload-bundler`: on PATH (also as `-15` … `-20`), else beside the
/// LLVM of a ROCm install or of Debian's hipcc (`/usr/lib/llvm-N/bin`).
pub fn offload_bundler() -> PathBuf {
    let names: Vec<String> = std::iter::once("clang-offload-bundler".to_string()).chain((15..=20).map(|v| format!("clang-offload-bundler-{v}"))).collect();
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    for var in ["ROCM_PATH", "HIP_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(Path::new(&root).join("llvm/bin"));
        }
    }
    dirs.push(PathBuf::from("/opt/rocm/llvm/bin"));
    dirs.extend((15..=20).rev().map(|v| PathBuf::from(format!("/usr/lib/llvm-{v}/bin"))));
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("clang-offload-bundler"))
}

/// An ELF file whose `e_machine` is `EM_AMDGPU` (object 0.36 maps it to no `Architecture`).
fn is_amdgpu_elf(data: &[u8]) -> bool {
    use object::read::elf::FileHeader;
    match object::FileKind::parse(data) {
        Ok(object::FileKind::Elf64) => object::elf::FileHeader64::<object::Endianness>::parse(data)
            .ok()
            .and_then(|h| h.endian().ok().map(|e| h.e_machine(e) == object::elf::EM_AMDGPU))
            .unwrap_or(false),
        _ => false,
    }
}

fn read(path: &Path) -> Result<Vec<u8>, HipBuildError> {
    std::fs::read(path).map_err(HipBuildError::io(format!("reading {}", path.display())))
}

fn bad(path: &Path, what: String) -> HipBuildError {
    HipBuildError::CodeObject { path: path.to_path_buf(), what }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names() {
        assert_eq!(arch_of_target("hipv4-amdgcn-amd-amdhsa--gfx90a"), Some("gfx90a"));
        assert_eq!(arch_of_target("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"), Some("gfx90a:xnack-"));
        assert_eq!(arch_of_target("hip-amdgcn-amd-amdhsa-gfx1030"), Some("gfx1030"));
        assert_eq!(arch_of_target("hipv4-amdgcn-amd-amdhsa-unknown-gfx1030"), Some("gfx1030"));
        assert_eq!(arch_of_target("host-x86_64-unknown-linux"), None);
        assert_eq!(arch_of_target("openmp-amdgcn-amd-amdhsa--gfx90a"), None);
    }

    #[test]
    fn picks_exact_then_unique_processor() {
        let p = Path::new("x");
        let t: Vec<String> = ["host-x86_64-unknown-linux", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", "hipv4-amdgcn-amd-amdhsa--gfx1030"].map(String::from).to_vec();
        assert_eq!(pick_target(p, &t, "gfx90a").unwrap().as_deref(), Some("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
        assert_eq!(pick_target(p, &t, "gfx90a:xnack-").unwrap(), None);
        assert_eq!(pick_target(p, &t, "gfx1030").unwrap().as_deref(), Some("hipv4-amdgcn-amd-amdhsa--gfx1030"));
        assert_eq!(pick_target(p, &t, "gfx103").unwrap(), None);
        let two: Vec<String> = ["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"].map(String::from).to_vec();
        assert!(pick_target(p, &two, "gfx90a").is_err());
    }

    #[test]
    fn merged_bundles_keep_one_host_entry_and_every_image() {
        let dir = tempfile::tempdir().unwrap();
        let part = |name: &str, target: &str, image: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, write_bundle(&[Entry { target: "host-x86_64-unknown-linux".into(), bytes: b"" }, Entry { target: target.into(), bytes: image }])).unwrap();
            path
        };
        let a = part("a", "hipv4-amdgcn-amd-amdhsa--gfx90a", b"AAAA");
        let b = part("b", "hipv4-amdgcn-amd-amdhsa--gfx1030", b"BB");
        let merged = merge_bundles(&[a.clone(), b]).unwrap();
        let path = Path::new("m");
        let bundles = bundles_at(path, &merged).unwrap();
        let [Bundle::Plain(entries, _)] = bundles.as_slice() else { panic!("one plain bundle") };
        let seen: Vec<(&str, &[u8])> = entries.iter().map(|e| (e.target.as_str(), e.bytes)).collect();
        assert_eq!(seen, [("host-x86_64-unknown-linux", &b""[..]), ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"AAAA"), ("hipv4-amdgcn-amd-amdhsa--gfx1030", b"BB")]);
        assert!(merged.len() > 2 * BUNDLE_ALIGN, "device images are 4096-aligned");
        let twice = merge_bundles(&[a.clone(), a]).unwrap_err().to_string();
        assert!(twice.contains("a second hipv4-amdgcn-amd-amdhsa--gfx90a image"), "{twice}");
    }

    #[test]
    fn parses_a_handmade_bundle() {
        let mut b = BUNDLE_MAGIC.to_vec();
        b.extend(2u64.to_le_bytes());
        let names = ["host-x86_64-unknown-linux", "hipv4-amdgcn-amd-amdhsa--gfx90a"];
        let header = b.len() + names.iter().map(|n| 24 + n.len()).sum::<usize>();
        let payloads: [&[u8]; 2] = [b"", b"IMAGE"];
        let mut offset = header;
        for (n, p) in names.iter().zip(payloads) {
            b.extend((offset as u64).to_le_bytes());
            b.extend((p.len() as u64).to_le_bytes());
            b.extend((n.len() as u64).to_le_bytes());
            b.extend(n.as_bytes());
            offset += p.len();
        }
        b.extend(payloads.concat());
        let bundles = bundles_at(Path::new("x"), &b).unwrap();
        let [Bundle::Plain(entries, whole)] = bundles.as_slice() else { panic!("one plain bundle") };
        assert_eq!(entries[1].target, names[1]);
        assert_eq!(entries[1].bytes, b"IMAGE");
        assert_eq!(whole.len(), b.len());
        // two bundles with zero padding between, as in a linked library
        let mut two = b.clone();
        two.resize(4096, 0);
        two.extend(&b);
        assert_eq!(bundles_at(Path::new("x"), &two).unwrap().len(), 2);
        assert!(parse_bundle(Path::new("x"), &b[..b.len() - 1]).is_err());
    }
}
