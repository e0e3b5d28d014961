//! What built binaries import from a ROCm release, against what its libraries
//! export: every HIP, rocBLAS, rocRAND and RCCL symbol by name and ELF symbol
//! version (`hipMalloc@hip_4.2`), and the sonames they need.
//!
//! A binary linked against one release and run on another fails at load time
//! (`-z now`) on one missing symbol or version node; this check finds that at
//! build time. Read with the `object` crate: `.dynsym`, `.gnu.version`,
//! `.gnu.version_r`/`_d` and `DT_NEEDED`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use object::elf;
use object::read::elf::{Dyn, FileHeader, SectionTable, Sym};
use object::{Endianness, SymbolIndex};

type Elf = elf::FileHeader64<Endianness>;

/// One dynamic symbol: name and version node, if any.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct VersionedSymbol {
    pub name: String,
    pub version: Option<String>,
}

impl fmt::Display for VersionedSymbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}@{v}", self.name),
            None => write!(f, "{}", self.name),
        }
    }
}

/// What one ELF file declares dynamically.
#[derive(Debug, Default)]
pub struct DynamicSymbols {
    pub soname: Option<String>,
    pub needed: Vec<String>,
    /// Defined (exported) symbols; a versioned definition under its version.
    pub exports: BTreeSet<VersionedSymbol>,
    /// Undefined symbols, each with the library its version names (`vn_file`) if versioned.
    pub imports: Vec<(VersionedSymbol, Option<String>)>,
}

/// Reads the dynamic section and symbols of a 64-bit ELF file.
pub fn read(path: &Path) -> Result<DynamicSymbols> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let parse = || -> object::Result<DynamicSymbols> {
        let header = Elf::parse(&*data)?;
        let endian = header.endian()?;
        let sections: SectionTable<Elf> = header.sections(endian, &*data)?;
        let mut out = DynamicSymbols::default();
        if let Some((entries, link)) = sections.dynamic(endian, &*data)? {
            let strings = sections.strings(endian, &*data, link)?;
            for d in entries {
                let tag = d.d_tag(endian) as u32;
                if tag != elf::DT_NEEDED && tag != elf::DT_SONAME {
                    continue;
                }
                let value = d.string(endian, strings).map(|s| String::from_utf8_lossy(s).into_owned())?;
                if tag == elf::DT_NEEDED { out.needed.push(value) } else { out.soname = Some(value) }
            }
        }
        let symbols = sections.symbols(endian, &*data, elf::SHT_DYNSYM)?;
        let versions = sections.versions(endian, &*data)?;
        for (i, sym) in symbols.iter().enumerate().skip(1) {
            let name = String::from_utf8_lossy(sym.name(endian, symbols.strings())?).into_owned();
            let version = match &versions {
                Some(v) => v.version(v.version_index(endian, SymbolIndex(i)))?.map(|v| (String::from_utf8_lossy(v.name()).into_owned(), v.file().map(|f| String::from_utf8_lossy(f).into_owned()))),
                None => None,
            };
            let (version, file) = match version {
                Some((v, file)) => (Some(v), file),
                None => (None, None),
            };
            let symbol = VersionedSymbol { name, version };
            if sym.is_undefined(endian) {
                out.imports.push((symbol, file));
            } else if sym.st_bind() != elf::STB_LOCAL && sym.st_type() != elf::STT_SECTION {
                // a version node's own symbol (`hip_4.2`, ABS) is a definition too: harmless here
                out.exports.insert(symbol);
            }
        }
        Ok(out)
    };
    parse().map_err(|e| anyhow::anyhow!("{}: not a readable 64-bit ELF file: {e}", path.display()))
}

/// Whether an unversioned import is one of ROCm's (the libraries checked here).
fn is_rocm_name(name: &str) -> bool {
    ["hip", "rocblas_", "rocrand_", "nccl"].iter().any(|p| name.starts_with(p))
}

/// Whether a needed library is one a ROCm release provides.
fn is_rocm_library(soname: &str) -> bool {
    ["libamdhip64.so", "librocblas.so", "librocrand.so", "librccl.so", "libhiprtc.so", "libhsa-runtime64.so", "libhipblas.so"].iter().any(|p| soname.starts_with(p))
}

/// The outcome of [`check`].
#[derive(Debug, Default)]
pub struct Report {
    pub libraries: Vec<(String, usize)>,
    /// Every ROCm symbol imported by any binary, with how many binaries import it.
    pub imported: BTreeMap<VersionedSymbol, usize>,
    /// Every ROCm library needed by any binary, with how many binaries need it.
    pub needed: BTreeMap<String, usize>,
    pub binaries: usize,
    /// Per binary: what it needs or imports that the release lacks.
    pub problems: Vec<(PathBuf, Vec<String>)>,
}

impl Report {
    pub fn is_complete(&self) -> bool {
        self.problems.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let libs: Vec<String> = self.libraries.iter().map(|(s, n)| format!("{s} ({n} exports)")).collect();
        writeln!(f, "imports of {} binaries against {}:", self.binaries, libs.join(", "))?;
        for (symbol, n) in &self.imported {
            writeln!(f, "  {symbol}  ({n} binaries)")?;
        }
        writeln!(f, "{} ROCm symbols imported, {} binaries with a symbol or library the release lacks", self.imported.len(), self.problems.len())?;
        for (binary, missing) in &self.problems {
            writeln!(f, "  {}: {}", binary.display(), missing.join(", "))?;
        }
        Ok(())
    }
}

/// Checks each binary's ROCm imports and needed ROCm libraries against `libraries` (a release's).
pub fn check(binaries: &[PathBuf], libraries: &[PathBuf]) -> Result<Report> {
    let mut report = Report { binaries: binaries.len(), ..Default::default() };
    let mut by_soname: BTreeMap<String, DynamicSymbols> = BTreeMap::new();
    for lib in libraries {
        let symbols = read(lib)?;
        let soname = symbols.soname.clone().with_context(|| format!("{} has no soname", lib.display()))?;
        report.libraries.push((soname.clone(), symbols.exports.len()));
        by_soname.insert(soname, symbols);
    }
    for binary in binaries {
        let symbols = read(binary)?;
        let rocm_needed: Vec<&String> = symbols.needed.iter().filter(|n| is_rocm_library(n)).collect();
        for n in &rocm_needed {
            *report.needed.entry(n.to_string()).or_default() += 1;
        }
        let mut missing: Vec<String> = rocm_needed.into_iter().filter(|n| !by_soname.contains_key(*n)).map(|n| format!("library {n}")).collect();
        for (symbol, file) in &symbols.imports {
            let rocm_file = file.as_deref().filter(|f| is_rocm_library(f));
            if rocm_file.is_none() && !(symbol.version.is_none() && is_rocm_name(&symbol.name)) {
                continue; // glibc, libstdc++, ...
            }
            *report.imported.entry(symbol.clone()).or_default() += 1;
            let found = match rocm_file {
                Some(f) => by_soname.get(f).is_some_and(|l| l.exports.contains(symbol)),
                None => by_soname.values().any(|l| l.exports.iter().any(|e| e.name == symbol.name)),
            };
            if !found {
                missing.push(symbol.to_string());
            }
        }
        if !missing.is_empty() {
            report.problems.push((binary.clone(), missing));
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary itself: glibc's versioned imports are read, with their file.
    #[test]
    fn reads_versioned_imports_and_needed_libraries() {
        let me = std::env::current_exe().unwrap();
        let s = read(&me).unwrap();
        assert!(s.needed.iter().any(|n| n.starts_with("libc.so")), "{:?}", s.needed);
        let (sym, file) = s.imports.iter().find(|(s, _)| s.name == "malloc" || s.name == "pthread_create").expect("a libc import");
        assert!(sym.version.as_deref().is_some_and(|v| v.starts_with("GLIBC_")), "{sym}");
        assert!(file.as_deref().is_some_and(|f| f.starts_with("libc.so")), "{file:?}");
    }

    #[test]
    fn glibc_imports_are_not_rocm_and_a_missing_library_is_named() {
        let me = std::env::current_exe().unwrap();
        let report = check(&[me.clone()], &[]).unwrap();
        assert!(report.imported.is_empty() && report.is_complete(), "{report}");
        assert!(is_rocm_library("libamdhip64.so.7") && is_rocm_library("librccl.so.1") && !is_rocm_library("libc.so.6"));
        assert!(is_rocm_name("ncclAllReduce") && is_rocm_name("rocrand_set_seed") && !is_rocm_name("malloc"));
        assert!(read(Path::new("/nonexistent")).unwrap_err().to_string().starts_with("reading /nonexistent"));
        let not_elf = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(not_elf.path(), b"not an ELF file at all").unwrap();
        assert!(read(not_elf.path()).unwrap_err().to_string().contains("not a readable 64-bit ELF file"));
    }
}
