//! Candle's GPU kernels for AMD GPUs: the ROCm twin of `candle-kernels`.
//!
//! The build script compiles the HIP translation of candle-kernels
//! (`generated/kernels`, written by `cargo xtask regen`) with hipcc. Each
//! code-object unit (`affine.hip`, …) becomes a clang offload bundle with one
//! image per arch, embedded here and loaded at run time like candle-kernels'
//! PTX: [`Module::code_object`] replaces `Module::ptx`. The units upstream links
//! as a static library (listed in `generated/MANIFEST.toml`, `[kernels]
//! static_library`: MoE, MMVQ and MMQ GGUF kernels) become host objects in a
//! static library, called through the launchers in [`ffi`]. [`Id`], [`ALL_IDS`]
//! and the module constants are generated from the file list, with the names
//! candle-kernels uses (`affine.hip` → `Id::Affine`, [`AFFINE`]).
//!
//! # Environment
//!
//! * `CANDLE_ROCM_ARCHS`: comma list of offload arches or target IDs to
//!   compile for (`gfx90a,gfx1100`, `gfx90a:xnack+`).
//! * `CANDLE_ROCM_KERNELS_DIR`: the kernel sources (default
//!   `../../generated/kernels` from this crate; relative paths are taken from
//!   this crate's directory). `MANIFEST.toml` is read from its parent.
//! * `ROCM_PATH`, `HIP_PATH`: where hipcc is looked for after `PATH`
//!   (then `/opt/rocm/bin/hipcc`).
//! * `AR`: the archiver for the static library (else `ar`, else `llvm-ar`).
//! * `CANDLE_ROCM_LAUNCHERS`: `static` (default) links the launchers' units
//!   as a static library; `shared` links them into
//!   `libcandle_rocm_launchers.so` (same soname), loaded at run time from the
//!   library path, so that another build of the same sources can stand in for
//!   it (the NVIDIA run of `hip-on-cuda/`).
//!
//! * `CANDLE_ROCM_KERNELS_CACHE`: a directory where compiled units are kept,
//!   keyed by everything that makes them (hipcc and its version, the arches,
//!   every file of the kernel directory, the defines): another build of this
//!   crate (another workspace or target directory) takes them instead of
//!   compiling again. The GPU bundle's test builds share one.
//!
//! * `CANDLE_ROCM_MMQ_MFMA`: `0` compiles ggml's dp4a tiles for quantized
//!   matmul on CDNA (gfx90a, gfx942, gfx950) instead of its MFMA tiles, the
//!   default as in ggml. RDNA3/RDNA4 take ggml's WMMA tiles always.
//!
//! At run time, `CANDLE_ROCM_CODE_OBJECTS_DIR=DIR` makes [`Module::code_object`]
//! return the bytes of `DIR/<module>.co` (`affine.co`, …) instead of the
//! embedded bundle: the same load path (`hipModuleLoadData`, the backend's
//! module cache) then runs code objects built elsewhere, such as the cubins
//! `hip-on-cuda/build-kernels.sh` makes with nvcc from the same sources.
//!
//! # Arches
//!
//! `CANDLE_ROCM_ARCHS` if set; else the GPUs `rocm_agent_enumerator` or
//! `amdgpu-arch` report; else the default list `gfx90a` (CDNA2: MI200),
//! `gfx942` (CDNA3: MI300), `gfx1030` (RDNA2: RX 6000, W6800) and `gfx1100`
//! (RDNA3: RX 7900), which covers both wavefront sizes (64 on CDNA, 32 on
//! RDNA) and the data-center and desktop parts ROCm supports; arches the
//! found hipcc cannot target are left out with a warning (Debian's HIP 5.2.3
//! knows gfx90a and gfx1030 only). A detected arch is not re-detected until
//! the kernels, the manifest or an env var above change: set
//! `CANDLE_ROCM_ARCHS` when building for another machine.
//!
//! Building needs hipcc (the HIP SDK); only the `rocm` feature of candle-core
//! depends on this crate.

/// The bundled code object of each module (`code_objects::AFFINE`, …).
mod code_objects {
    include!(concat!(env!("OUT_DIR"), "/code_objects.rs"));
}

/// A kernel module: its position in [`ALL_IDS`] and its code object.
#[derive(Debug, Clone, Copy)]
pub struct Module {
    index: usize,
    name: &'static str,
    code_object: &'static [u8],
}

impl Module {
    /// The position of this module's [`Id`] in [`ALL_IDS`].
    pub fn index(&self) -> usize {
        self.index
    }

    /// The module's name: its source file's stem (`affine`, …).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A clang offload bundle (`__CLANG_OFFLOAD_BUNDLE__`) with one code
    /// object per compiled arch, for `hipModuleLoadData`; or, when
    /// `CANDLE_ROCM_CODE_OBJECTS_DIR` is set, the bytes of `<dir>/<name>.co`
    /// (empty when that file cannot be read: loading it then fails with the
    /// HIP error, after a message naming the file on stderr).
    pub fn code_object(&self) -> &'static [u8] {
        match code_objects_from_dir() {
            Some(loaded) => loaded[self.index],
            None => self.code_object,
        }
    }

    /// The code object embedded at build time, whatever the environment says.
    pub fn embedded_code_object(&self) -> &'static [u8] {
        self.code_object
    }
}

/// The code objects of `CANDLE_ROCM_CODE_OBJECTS_DIR`, read once, in [`ALL_IDS`] order.
fn code_objects_from_dir() -> Option<&'static [&'static [u8]]> {
    static LOADED: std::sync::OnceLock<Option<Vec<&'static [u8]>>> = std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            let dir = std::path::PathBuf::from(std::env::var_os("CANDLE_ROCM_CODE_OBJECTS_DIR")?);
            let read = |m: &Module| -> &'static [u8] {
                let path = dir.join(format!("{}.co", m.name));
                match std::fs::read(&path) {
                    Ok(bytes) => Vec::leak(bytes),
                    Err(e) => {
                        eprintln!("candle-rocm-kernels: CANDLE_ROCM_CODE_OBJECTS_DIR: cannot read {}: {e}", path.display());
                        &[]
                    }
                }
            };
            Some(ALL_MODULES.iter().map(read).collect())
        })
        .as_deref()
}

include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// The `extern "C"` launchers of the static-library kernels (MoE, GGUF MMVQ/MMQ).
pub mod ffi {
    include!(concat!(env!("OUT_DIR"), "/ffi.rs"));
}

/// The tiles [`QUANTIZED`]'s `mul_mat_q*` kernels take on AMD: ggml's, chosen per
/// arch in each device pass, and here for the launcher by ggml compute capability
/// (`quantized_mmq_tiles.rs`, written by `cargo xtask regen` from the same
/// definitions: rule `quantized-mmq-tiles`).
pub mod quantized_mmq_tiles {
    include!(concat!(env!("OUT_DIR"), "/quantized_mmq_tiles.rs"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_in_order() {
        for (i, id) in ALL_IDS.iter().enumerate() {
            assert_eq!(*id as usize, i, "{id:?}");
        }
        assert_eq!(AFFINE.index(), Id::Affine as usize);
        assert_eq!(UNARY.index(), Id::Unary as usize);
    }

    #[test]
    fn every_module_is_an_offload_bundle() {
        let modules = [
            AFFINE, BINARY, CAST, CONV, FILL, INDEXING, QUANTIZED, REDUCE, SORT, TERNARY, UNARY,
        ];
        assert_eq!(modules.len(), ALL_IDS.len());
        for (i, m) in modules.iter().enumerate() {
            assert_eq!(m.index(), i);
            assert_eq!(ALL_MODULES[i].name(), m.name());
            let co = m.embedded_code_object();
            assert!(
                co.len() > 4096 && co.starts_with(b"__CLANG_OFFLOAD_BUNDLE__"),
                "{:?}: {} bytes",
                ALL_IDS[i],
                co.len()
            );
            assert_eq!(
                co.as_ptr() as usize % 4096,
                0,
                "{:?} is not page-aligned",
                ALL_IDS[i]
            );
            for arch in ARCHES {
                let entry = format!("hipv4-amdgcn-amd-amdhsa--{arch}");
                assert!(
                    co.windows(entry.len()).any(|w| w == entry.as_bytes()),
                    "{:?} has no {entry} image",
                    ALL_IDS[i]
                );
            }
        }
        let fill = FILL.embedded_code_object();
        assert!(
            fill.windows(8).any(|w| w == b"fill_f32"),
            "no fill_f32 kernel in FILL"
        );
    }

    /// The launcher's tile table names kernels of [`QUANTIZED`], and chooses by ggml
    /// compute capability: none on NVIDIA, the second tile on CDNA and RDNA1, the first
    /// from RDNA2 on.
    #[test]
    fn quantized_mmq_tiles_choose_by_compute_capability() {
        use quantized_mmq_tiles::{amd_tile, AMD_TILES};
        let co = QUANTIZED.embedded_code_object();
        assert!(!AMD_TILES.is_empty());
        for &(kernel, first, second) in AMD_TILES {
            assert!(co.windows(kernel.len()).any(|w| w == kernel.as_bytes()), "no {kernel} in QUANTIZED");
            let tile = |[x, y, w]: [u32; 3]| Some((x, y, w));
            assert_eq!(amd_tile(kernel, 900), None, "NVIDIA (sm_90 through hip-on-cuda)");
            for cc in [0x100090a, 0x1000942, 0x1000950, 0x1001010] {
                assert_eq!(amd_tile(kernel, cc), tile(second), "{kernel} at {cc:#x}");
            }
            for cc in [0x1001030, 0x1001100, 0x1001151, 0x1001201] {
                assert_eq!(amd_tile(kernel, cc), tile(first), "{kernel} at {cc:#x}");
            }
            assert_eq!(first[2] * 32 % 64, 0, "{kernel}: whole wave64 waves");
        }
        assert_eq!(amd_tile("no_such_kernel", 0x1001100), None);
    }
}
