//! How many wavefronts per SIMD a kernel's resources allow on an AMD arch:
//! the per-arch limits as data ([`AMD_ARCH_LIMITS`]), and the arithmetic.
//!
//! Two figures, kept apart because only one of them is a property of the
//! kernel alone:
//! * [`waves_per_simd_by_registers`]: VGPRs (allocated in granules from the
//!   SIMD's register file) and, before GFX10, SGPRs. This is what LLVM's
//!   `-Rpass-analysis=kernel-resource-usage` reports as "Occupancy
//!   [waves/SIMD]" for a kernel without LDS (the hipcc test checks our
//!   figure against it for every arch in the table).
//! * [`waves_per_simd_by_lds`]: the static LDS of a workgroup against the
//!   LDS of a CU (CDNA) or WGP (RDNA, HIP's default WGP mode), with
//!   workgroups of the kernel's `max_flat_workgroup_size` threads spread
//!   evenly over the SIMDs. The launch's real block size and any dynamic
//!   LDS are not known here.

use crate::kernel_resources::KernelResources;

/// The per-arch limits that bound occupancy. Sources:
/// * register file, VGPR granule, max waves: LLVM `AMDGPUBaseInfo.cpp`
///   (`IsaInfo::getTotalNumVGPRs`, `getVGPRAllocGranule`, `getMaxWavesPerEU`):
///   gfx90a/gfx942/gfx950 have a 512-entry unified VGPR/AGPR file per SIMD
///   lane, granule 8, at most 8 waves per SIMD; GFX10.3+ wave32 has 1024
///   VGPRs per lane, granule 16, 16 waves, and 1536/granule 24 where the
///   processor has `Feature1_5xVGPRs` (gfx1100, gfx1101, gfx1151, gfx1200,
///   gfx1201: `GCNProcessors.td`/`AMDGPU.td`);
/// * SGPRs limit occupancy on GFX9 only (`GCNSubtarget::getOccupancyWithNumSGPRs`,
///   see [`GFX9_SGPR_WAVES`]); from GFX10 on every wave gets its SGPRs;
/// * LDS: 64 KiB per CU on CDNA2/CDNA3 (AMD "CDNA3 ISA" guide, LDS chapter),
///   160 KiB on gfx950 (CDNA4 ISA guide; LLVM `FeatureAddressableLocalMemorySize163840`),
///   128 KiB per WGP on RDNA2/3/4 (RDNA ISA guides, "LDS": 128 KiB per WGP,
///   at most 64 KiB per workgroup); allocation granule from LLVM AMDGPUUsage,
///   `COMPUTE_PGM_RSRC2.LDS_SIZE`: 128 dwords (512 bytes) on GFX7-GFX12,
///   320 dwords (1280 bytes) on GFX950;
/// * SIMDs: 4 per CU on CDNA, 4 SIMD32 per WGP on RDNA (2 per CU);
/// * wave size: HIP compiles CDNA for wave64 and RDNA for wave32.
pub const AMD_ARCH_LIMITS: &[ArchLimits] = &[
    ArchLimits { arch: "gfx90a", wave_size: 64, max_waves_per_simd: 8, vgprs_per_simd: 512, vgpr_granule: 8, sgprs_limit_occupancy: true, lds_bytes_per_cu: 64 << 10, lds_granule: 512, simds_per_cu: 4 },
    ArchLimits { arch: "gfx942", wave_size: 64, max_waves_per_simd: 8, vgprs_per_simd: 512, vgpr_granule: 8, sgprs_limit_occupancy: true, lds_bytes_per_cu: 64 << 10, lds_granule: 512, simds_per_cu: 4 },
    ArchLimits { arch: "gfx950", wave_size: 64, max_waves_per_simd: 8, vgprs_per_simd: 512, vgpr_granule: 8, sgprs_limit_occupancy: true, lds_bytes_per_cu: 160 << 10, lds_granule: 1280, simds_per_cu: 4 },
    ArchLimits { arch: "gfx1030", wave_size: 32, max_waves_per_simd: 16, vgprs_per_simd: 1024, vgpr_granule: 16, sgprs_limit_occupancy: false, lds_bytes_per_cu: 128 << 10, lds_granule: 512, simds_per_cu: 4 },
    ArchLimits { arch: "gfx1100", wave_size: 32, max_waves_per_simd: 16, vgprs_per_simd: 1536, vgpr_granule: 24, sgprs_limit_occupancy: false, lds_bytes_per_cu: 128 << 10, lds_granule: 512, simds_per_cu: 4 },
    ArchLimits { arch: "gfx1101", wave_size: 32, max_waves_per_simd: 16, vgprs_per_simd: 1536, vgpr_granule: 24, sgprs_limit_occupancy: false, lds_bytes_per_cu: 128 << 10, lds_granule: 512, simds_per_cu: 4 },
    ArchLimits { arch: "gfx1151", wave_size: 32, max_waves_per_simd: 16, vgprs_per_simd: 1536, vgpr_granule: 24, sgprs_limit_occupancy: false, lds_bytes_per_cu: 128 << 10, lds_granule: 512, simds_per_cu: 4 },
    ArchLimits { arch: "gfx1200", wave_size: 32, max_waves_per_simd: 16, vgprs_per_simd: 1536, vgpr_granule: 24, sgprs_limit_occupancy: false, lds_bytes_per_cu: 128 << 10, lds_granule: 512, simds_per_cu: 4 },
    ArchLimits { arch: "gfx1201", wave_size: 32, max_waves_per_simd: 16, vgprs_per_simd: 1536, vgpr_granule: 24, sgprs_limit_occupancy: false, lds_bytes_per_cu: 128 << 10, lds_granule: 512, simds_per_cu: 4 },
];

/// GFX9 waves per SIMD by SGPRs per wave (`sgpr_count` at most the first
/// number allows the second); above the last step, [`GFX9_SGPR_WAVES_ABOVE`].
/// LLVM `GCNSubtarget::getOccupancyWithNumSGPRs` (VOLCANIC_ISLANDS..GFX9).
pub const GFX9_SGPR_WAVES: &[(u32, u32)] = &[(80, 10), (88, 9), (100, 8)];
pub const GFX9_SGPR_WAVES_ABOVE: u32 = 7;

/// One arch's limits; see [`AMD_ARCH_LIMITS`] for where each comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchLimits {
    pub arch: &'static str,
    /// The wavefront size HIP compiles this arch for.
    pub wave_size: u32,
    pub max_waves_per_simd: u32,
    /// VGPRs per lane of one SIMD's register file, at `wave_size`.
    pub vgprs_per_simd: u32,
    /// VGPRs are allocated to a wave in multiples of this.
    pub vgpr_granule: u32,
    /// Whether SGPRs per wave bound occupancy (GFX9) or not (GFX10+).
    pub sgprs_limit_occupancy: bool,
    /// LDS of one CU (CDNA) or WGP (RDNA in WGP mode).
    pub lds_bytes_per_cu: u32,
    /// A workgroup's LDS is allocated in multiples of this.
    pub lds_granule: u32,
    /// SIMDs that share that LDS.
    pub simds_per_cu: u32,
}

/// The limits of `arch` (a processor, or a target ID such as `gfx90a:xnack-`).
pub fn arch_limits(arch: &str) -> Option<&'static ArchLimits> {
    let processor = arch.split(':').next().unwrap_or(arch);
    AMD_ARCH_LIMITS.iter().find(|l| l.arch == processor)
}

/// Which register file holds a kernel below the arch's maximum waves per SIMD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterBound {
    /// The arch's maximum: registers bind nothing.
    None,
    Vgprs,
    /// GFX9's SGPR rule (a kernel whose VGPRs allow as few waves is counted under VGPRs).
    Sgprs,
}

impl ArchLimits {
    /// Waves per SIMD that the kernel's registers allow. An error when the
    /// kernel was compiled for another wavefront size than the table's.
    pub fn waves_per_simd_by_registers(&self, kernel: &KernelResources) -> Result<u32, String> {
        self.register_bound(kernel).map(|(waves, _)| waves)
    }

    /// [`Self::waves_per_simd_by_registers`] and the register file that bounds it.
    pub fn register_bound(&self, kernel: &KernelResources) -> Result<(u32, RegisterBound), String> {
        self.check_wave_size(kernel)?;
        let vgprs = kernel.vgprs.max(1).next_multiple_of(self.vgpr_granule);
        let by_vgprs = (self.vgprs_per_simd / vgprs).max(1);
        let by_sgprs = if self.sgprs_limit_occupancy { gfx9_waves_by_sgprs(kernel.sgprs) } else { self.max_waves_per_simd };
        let waves = by_vgprs.min(by_sgprs).min(self.max_waves_per_simd);
        let bound = if waves == self.max_waves_per_simd {
            RegisterBound::None
        } else if by_vgprs == waves {
            RegisterBound::Vgprs
        } else {
            RegisterBound::Sgprs
        };
        Ok((waves, bound))
    }

    /// Waves per SIMD that the kernel's static LDS allows with workgroups of
    /// `max_flat_workgroup_size` threads (the maximum when it uses none).
    pub fn waves_per_simd_by_lds(&self, kernel: &KernelResources) -> Result<u32, String> {
        self.check_wave_size(kernel)?;
        if kernel.lds_bytes == 0 {
            return Ok(self.max_waves_per_simd);
        }
        let lds = kernel.lds_bytes.next_multiple_of(self.lds_granule);
        let workgroups = self.lds_bytes_per_cu / lds;
        let waves_per_workgroup = kernel.max_workgroup_size.max(1).div_ceil(kernel.wavefront_size);
        Ok((workgroups * waves_per_workgroup / self.simds_per_cu).clamp(1, self.max_waves_per_simd))
    }

    fn check_wave_size(&self, kernel: &KernelResources) -> Result<(), String> {
        if kernel.wavefront_size != self.wave_size {
            return Err(format!("kernel {} is wave{} but the {} limits are for wave{}", kernel.name, kernel.wavefront_size, self.arch, self.wave_size));
        }
        Ok(())
    }
}

fn gfx9_waves_by_sgprs(sgprs: u32) -> u32 {
    GFX9_SGPR_WAVES.iter().find(|(most, _)| sgprs <= *most).map_or(GFX9_SGPR_WAVES_ABOVE, |(_, waves)| *waves)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(vgprs: u32, sgprs: u32, lds_bytes: u32, wavefront_size: u32) -> KernelResources {
        KernelResources { name: "k".into(), vgprs, agprs: 0, sgprs, scratch_bytes: 0, lds_bytes, vgpr_spills: 0, sgpr_spills: 0, wavefront_size, max_workgroup_size: 1024 }
    }

    #[test]
    fn register_occupancy_follows_the_granules() {
        let cdna = arch_limits("gfx942:xnack-").unwrap();
        // LLVM's remark for a kernel using v0..v99: 4 waves on gfx90a/gfx950, 9 on gfx1030, 12 on gfx1100/gfx1151/gfx1201
        assert_eq!(cdna.waves_per_simd_by_registers(&kernel(100, 20, 0, 64)), Ok(4));
        assert_eq!(arch_limits("gfx1030").unwrap().waves_per_simd_by_registers(&kernel(100, 20, 0, 32)), Ok(9));
        assert_eq!(arch_limits("gfx1201").unwrap().waves_per_simd_by_registers(&kernel(100, 20, 0, 32)), Ok(12));
        assert_eq!(cdna.waves_per_simd_by_registers(&kernel(8, 20, 0, 64)), Ok(8));
        assert_eq!(cdna.waves_per_simd_by_registers(&kernel(512, 20, 0, 64)), Ok(1));
        assert_eq!(cdna.waves_per_simd_by_registers(&kernel(8, 102, 0, 64)), Ok(7), "more than 100 SGPRs on GFX9");
        assert_eq!(arch_limits("gfx1100").unwrap().waves_per_simd_by_registers(&kernel(8, 106, 0, 32)), Ok(16), "SGPRs do not bound GFX10+");
    }

    #[test]
    fn the_bound_names_the_register_file() {
        let cdna = arch_limits("gfx942").unwrap();
        assert_eq!(cdna.register_bound(&kernel(96, 20, 0, 64)), Ok((5, RegisterBound::Vgprs)));
        assert_eq!(cdna.register_bound(&kernel(8, 106, 0, 64)), Ok((7, RegisterBound::Sgprs)));
        // both bind at 7 waves: counted under VGPRs
        assert_eq!(cdna.register_bound(&kernel(70, 106, 0, 64)), Ok((7, RegisterBound::Vgprs)));
        assert_eq!(cdna.register_bound(&kernel(64, 100, 0, 64)), Ok((8, RegisterBound::None)));
        assert_eq!(arch_limits("gfx1030").unwrap().register_bound(&kernel(67, 106, 0, 32)), Ok((12, RegisterBound::Vgprs)));
    }

    #[test]
    fn lds_occupancy_counts_workgroups_per_cu() {
        let cdna = arch_limits("gfx90a").unwrap();
        // 1024 threads = 16 waves; 64 KiB / 16 KiB = 4 workgroups = 64 waves over 4 SIMDs: capped at 8
        assert_eq!(cdna.waves_per_simd_by_lds(&kernel(8, 20, 16 << 10, 64)), Ok(8));
        let mut small = kernel(8, 20, 40 << 10, 64);
        small.max_workgroup_size = 256; // 4 waves per workgroup, one workgroup fits
        assert_eq!(cdna.waves_per_simd_by_lds(&small), Ok(1));
        small.lds_bytes = 100; // rounded up to 512 bytes: 128 workgroups
        assert_eq!(cdna.waves_per_simd_by_lds(&small), Ok(8));
    }

    #[test]
    fn a_wave_size_mismatch_is_an_error() {
        let e = arch_limits("gfx1100").unwrap().waves_per_simd_by_registers(&kernel(8, 20, 0, 64)).unwrap_err();
        assert_eq!(e, "kernel k is wave64 but the gfx1100 limits are for wave32");
        assert!(arch_limits("gfx803").is_none());
    }
}
