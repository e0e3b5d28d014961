//! What each kernel of a code object costs the GPU, as the compiler recorded
//! it: registers, scratch, LDS, spills, wavefront size.
//!
//! Every AMDGPU code object (code object v3 and later) carries an ELF note of
//! type `NT_AMDGPU_METADATA` (32), owner `AMDGPU`, whose payload is a
//! MessagePack map. Its `amdhsa.kernels` array has one map per kernel with
//! the keys read here (LLVM's AMDGPUUsage, "Code Object V3 Metadata", table
//! "AMDHSA Code Object V3 Kernel Metadata Map"). On gfx90a and later,
//! `.vgpr_count` is already the unified count (architected VGPRs rounded up
//! to 4, plus AGPRs) that occupancy depends on; `.agpr_count` is the AGPR
//! part of it.

use std::path::Path;

use object::elf::FileHeader64;
use object::read::elf::{FileHeader, SectionHeader};
use object::Endianness;
use rmpv::Value;

use crate::code_object::extract_images;
use crate::HipBuildError;

/// The ELF note type of the AMDGPU metadata (owner `AMDGPU`; LLVM `ELF.h`).
pub const NT_AMDGPU_METADATA: u32 = 32;

/// One kernel's entry of the code object metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelResources {
    /// `.name`: the kernel's source-level name (mangled for C++ kernels).
    pub name: String,
    /// `.vgpr_count`: vector registers per work-item (unified VGPR+AGPR count on gfx90a+).
    pub vgprs: u32,
    /// `.agpr_count`: accumulation registers (0 before gfx908 and on RDNA).
    pub agprs: u32,
    /// `.sgpr_count`: scalar registers per wavefront, VCC/flat scratch/XNACK included.
    pub sgprs: u32,
    /// `.private_segment_fixed_size`: scratch bytes per work-item (spills, stack arrays).
    pub scratch_bytes: u32,
    /// `.group_segment_fixed_size`: static LDS bytes per workgroup (dynamic LDS is a launch parameter).
    pub lds_bytes: u32,
    /// `.vgpr_spill_count`: VGPRs spilled to scratch.
    pub vgpr_spills: u32,
    /// `.sgpr_spill_count`: SGPRs spilled (to VGPR lanes, or scratch).
    pub sgpr_spills: u32,
    /// `.wavefront_size`: 32 or 64.
    pub wavefront_size: u32,
    /// `.max_flat_workgroup_size`: the largest workgroup the kernel was compiled for (1024 unless launch bounds say less).
    pub max_workgroup_size: u32,
}

/// The kernels' resources of `arch` in a code object (`--genco`) or a host
/// object (`-c`), sorted by name.
pub fn kernel_resources(path: &Path, arch: &str) -> Result<Vec<KernelResources>, HipBuildError> {
    let mut kernels = Vec::new();
    for image in extract_images(path, arch)? {
        kernels.extend(kernel_resources_of_image(path, &image)?);
    }
    kernels.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(kernels)
}

/// The kernels' resources in one AMDGPU ELF image; `path` names it in errors.
pub fn kernel_resources_of_image(path: &Path, image: &[u8]) -> Result<Vec<KernelResources>, HipBuildError> {
    let metadata = metadata_note(path, image)?;
    let document = rmpv::decode::read_value(&mut &metadata[..]).map_err(|e| bad(path, format!("the AMDGPU metadata note is not MessagePack: {e}")))?;
    let kernels = field(&document, "amdhsa.kernels").ok_or_else(|| bad(path, "the AMDGPU metadata has no amdhsa.kernels".to_string()))?;
    let Value::Array(kernels) = kernels else {
        return Err(bad(path, "amdhsa.kernels is not an array".to_string()));
    };
    kernels.iter().enumerate().map(|(i, k)| kernel_entry(path, i, k)).collect()
}

/// The payload of the `AMDGPU` note of type `NT_AMDGPU_METADATA`.
fn metadata_note<'a>(path: &Path, image: &'a [u8]) -> Result<&'a [u8], HipBuildError> {
    let header = FileHeader64::<Endianness>::parse(image).map_err(|e| bad(path, format!("not a 64-bit ELF image: {e}")))?;
    let endian = header.endian().map_err(|e| bad(path, format!("ELF header: {e}")))?;
    let sections = header.sections(endian, image).map_err(|e| bad(path, format!("ELF section table: {e}")))?;
    for section in sections.iter() {
        let Some(mut notes) = section.notes(endian, image).map_err(|e| bad(path, format!("ELF note section: {e}")))? else { continue };
        while let Some(note) = notes.next().map_err(|e| bad(path, format!("ELF note: {e}")))? {
            if note.name() == b"AMDGPU" && note.n_type(endian) == NT_AMDGPU_METADATA {
                return Ok(note.desc());
            }
        }
    }
    Err(bad(path, "no AMDGPU metadata note (NT_AMDGPU_METADATA): not a code object v3+ image".to_string()))
}

fn kernel_entry(path: &Path, index: usize, kernel: &Value) -> Result<KernelResources, HipBuildError> {
    let name = match field(kernel, ".name") {
        Some(Value::String(s)) => s.as_str().map(str::to_string).ok_or_else(|| bad(path, format!("amdhsa.kernels[{index}].name is not UTF-8")))?,
        _ => return Err(bad(path, format!("amdhsa.kernels[{index}] has no .name string"))),
    };
    let number = |key: &str| -> Result<u32, HipBuildError> {
        match field(kernel, key) {
            Some(v) => v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| bad(path, format!("kernel {name}: {key} is not a 32-bit unsigned integer ({v})"))),
            None => Err(bad(path, format!("kernel {name}: no {key} in its metadata"))),
        }
    };
    // .agpr_count is written from code object v4 on, for every target; absent means none
    let agprs = if field(kernel, ".agpr_count").is_some() { number(".agpr_count")? } else { 0 };
    Ok(KernelResources {
        vgprs: number(".vgpr_count")?,
        agprs,
        sgprs: number(".sgpr_count")?,
        scratch_bytes: number(".private_segment_fixed_size")?,
        lds_bytes: number(".group_segment_fixed_size")?,
        vgpr_spills: number(".vgpr_spill_count")?,
        sgpr_spills: number(".sgpr_spill_count")?,
        wavefront_size: number(".wavefront_size")?,
        max_workgroup_size: number(".max_flat_workgroup_size")?,
        name,
    })
}

/// The value of a string key of a MessagePack map.
fn field<'v>(map: &'v Value, key: &str) -> Option<&'v Value> {
    map.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}

fn bad(path: &Path, what: String) -> HipBuildError {
    HipBuildError::CodeObject { path: path.to_path_buf(), what }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel_map(name: &str, vgprs: u64) -> Value {
        let entries = [
            (".name", Value::from(name)),
            (".vgpr_count", Value::from(vgprs)),
            (".agpr_count", Value::from(4u64)),
            (".sgpr_count", Value::from(20u64)),
            (".private_segment_fixed_size", Value::from(16u64)),
            (".group_segment_fixed_size", Value::from(4096u64)),
            (".vgpr_spill_count", Value::from(3u64)),
            (".sgpr_spill_count", Value::from(0u64)),
            (".wavefront_size", Value::from(64u64)),
            (".max_flat_workgroup_size", Value::from(256u64)),
        ];
        Value::Map(entries.into_iter().map(|(k, v)| (Value::from(k), v)).collect())
    }

    #[test]
    fn reads_a_kernel_entry() {
        let k = kernel_entry(Path::new("x.co"), 0, &kernel_map("soft_max_f32", 40)).unwrap();
        assert_eq!(
            k,
            KernelResources {
                name: "soft_max_f32".into(),
                vgprs: 40,
                agprs: 4,
                sgprs: 20,
                scratch_bytes: 16,
                lds_bytes: 4096,
                vgpr_spills: 3,
                sgpr_spills: 0,
                wavefront_size: 64,
                max_workgroup_size: 256
            }
        );
    }

    #[test]
    fn bad_entries_name_file_kernel_and_key() {
        let e = kernel_entry(Path::new("x.co"), 0, &kernel_map("k", 1 << 40)).unwrap_err().to_string();
        assert_eq!(e, "x.co: kernel k: .vgpr_count is not a 32-bit unsigned integer (1099511627776)");
        let mut m = kernel_map("k", 1);
        if let Value::Map(entries) = &mut m {
            entries.retain(|(k, _)| k.as_str() != Some(".sgpr_count"));
        }
        assert_eq!(kernel_entry(Path::new("x.co"), 0, &m).unwrap_err().to_string(), "x.co: kernel k: no .sgpr_count in its metadata");
        assert_eq!(kernel_entry(Path::new("x.co"), 7, &Value::from(3)).unwrap_err().to_string(), "x.co: amdhsa.kernels[7] has no .name string");
    }

    #[test]
    fn an_image_without_the_note_is_refused() {
        let e = kernel_resources_of_image(Path::new("x.co"), b"not an elf").unwrap_err().to_string();
        assert!(e.starts_with("x.co: not a 64-bit ELF image"), "{e}");
    }
}
