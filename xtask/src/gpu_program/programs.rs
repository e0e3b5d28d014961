//! The programs built here and run on the GPU machine (which has no Rust): one row
//! each. A program is a folder carried there (`OUT`, packed into `OUT.tar.xz`) holding
//! its ROCm binaries (linked as the GPU bundle's binaries are), the stock CUDA
//! binaries it is compared with, host tools, and the bundle's `lib/` (the forwarder).

/// Which binaries a cargo build makes.
pub enum Targets {
    /// `[[bin]]` targets of the package.
    Bins(&'static [&'static str]),
    /// candle-examples' `[[example]]` targets: the names in the environment variable
    /// EXAMPLES (space-separated), else the default list.
    Examples(&'static [&'static str]),
}

/// A package built with feature `rocm` as the GPU bundle's binaries are.
pub struct RocmBuild {
    pub manifest: &'static str,
    pub features: &'static [&'static str],
    pub targets: Targets,
    /// The folder of OUT the binaries go to ("" for OUT itself).
    pub into: &'static str,
    /// `strip` the copies.
    pub strip: bool,
    /// The ROCm libraries each binary must need, resolved to OUT/lib.
    pub sonames: &'static [&'static str],
    /// NEEDED entries no binary may have (a library that must be loaded at run time).
    pub refused: &'static [&'static str],
    /// The package's own kernels, built by candle-rocm-build (candle-examples' custom-ops):
    /// as cubins for the H100 through hip-on-cuda (`CANDLE_ROCM_BUILD_HIP_ON_CUDA=sm_90`,
    /// nvcc from CUDA 13's toolchain), as hip-on-cuda/build-kernels.sh builds generated/kernels.
    pub own_kernels: bool,
    /// Crates written for CUDA that `cargo xtask port-crate` ports first: the last one into
    /// the folder of `manifest`.
    pub ported_from: Option<Port>,
}

/// Where the crates a ROCm build ports come from.
pub enum Port {
    /// A crate of this repository, ported against generated/.
    Repo(&'static str),
    /// crates.io packages of one version, ported in order (dependencies first, each beside
    /// the folder of `manifest`, the last into it) against a regen of the Candle release
    /// they depend on (into `target/generated-<candle>`, whose kernels the kernels crate
    /// then builds and OUT carries for the GPU machine's nvcc build).
    Registry { crates: &'static [&'static str], version: &'static str, candle: &'static str },
}

/// Where a stock CUDA build's sources come from.
pub enum CudaSource {
    /// A manifest of this repository.
    Manifest(&'static str),
    /// A crates.io package copied out of the registry (under target/, never written
    /// in the registry), built with its published Cargo.lock (`--locked`).
    Registry { name: &'static str, version: &'static str },
}

/// A stock build with feature `cuda` (CUDA 13.0's nvcc: `cuda13`): crates.io Candle, or an
/// application over it (mistral.rs).
pub struct CudaBuild {
    pub source: CudaSource,
    pub features: &'static [&'static str],
    pub targets: Targets,
    /// Relative to the repository root: sharing one with another program shares
    /// candle-kernels' nvcc build.
    pub target_dir: &'static str,
    pub into: &'static str,
    /// Stock candle-flash-attn among the dependencies: its kernels compiled on the GPU
    /// machine, the binary linked here against a stub of their library (`dao`).
    pub dao_flash_attn: bool,
    /// Folders of this repository nvcc searches first (NVCC_PREPEND_FLAGS), each a stated
    /// shim for a source written for an older CUDA; the sources stay as published.
    pub nvcc_include: &'static [&'static str],
}

/// A host program run on the GPU machine's CPU (release, no GPU feature).
pub struct HostBuild {
    pub manifest: &'static str,
    pub bin: &'static str,
    pub target_dir: &'static str,
}

/// A C shared library compiled with gcc (OUT-relative output).
pub struct CLibrary {
    pub source: &'static str,
    pub output: &'static str,
    pub libs: &'static [&'static str],
}

pub struct Program {
    pub name: &'static str,
    /// What it is and what runs it on the GPU machine.
    pub about: &'static str,
    /// OUT's default, relative to the repository root.
    pub out: &'static str,
    pub rocm: &'static [RocmBuild],
    pub cuda: Option<CudaBuild>,
    pub host: &'static [HostBuild],
    pub c_libraries: &'static [CLibrary],
    /// xz's settings for OUT.tar.xz.
    pub xz: &'static str,
}

/// ROCm 7.2's sonames of the libraries every binary over generated candle-core needs.
const CANDLE_SONAMES: &[&str] = &["libamdhip64.so.7", "librocblas.so.5", "librocrand.so.1"];

const MAKE_MODELS: HostBuild = HostBuild {
    manifest: "bench/examples/make-models/Cargo.toml",
    bin: "make-models",
    target_dir: "target/examples-parity/make-models",
};

/// candle-kernels' nvcc build shared by the stock CUDA builds of candle-examples and numerics.
const EXAMPLES_CUDA_TARGET: &str = "target/examples-parity/cuda-target";

/// generated/candle-examples' examples `names` with `features`, into OUT/rocm.
const fn examples_rocm(features: &'static [&'static str], names: &'static [&'static str]) -> RocmBuild {
    RocmBuild {
        manifest: "generated/candle-examples/Cargo.toml",
        features,
        targets: Targets::Examples(names),
        into: "rocm",
        strip: true,
        sonames: CANDLE_SONAMES,
        refused: &[],
        own_kernels: true,
            ported_from: None,
    }
}

const TENSOR_PARALLEL: RocmBuild = RocmBuild {
    manifest: "tests/tensor-parallel/Cargo.toml",
    features: &[],
    targets: Targets::Bins(&["tensor-parallel"]),
    into: "",
    strip: true,
    sonames: CANDLE_SONAMES,
    refused: &[],
    own_kernels: false,
            ported_from: None,
};

pub const PROGRAMS: &[Program] = &[
    Program {
        name: "bench-backend",
        about: "the backend benchmark (bench/backend/src/main.rs) over stock Candle's CUDA backend and over generated/ with \
                ROCm, and the LD_PRELOAD call counter of bench/backend/probe.sh; run by bench/backend/run-backend-bench.sh",
        out: "device-carry/bench-backend",
        rocm: &[RocmBuild {
            manifest: "bench/backend/rocm/Cargo.toml",
            features: &[],
            targets: Targets::Bins(&["backend-bench-rocm"]),
            into: "",
            strip: false,
            sonames: CANDLE_SONAMES,
            refused: &[],
            own_kernels: false,
            ported_from: None,
        }],
        cuda: Some(CudaBuild {
            source: CudaSource::Manifest("bench/backend/cuda/Cargo.toml"),
            features: &[],
            targets: Targets::Bins(&["backend-bench-cuda"]),
            target_dir: "target/bench-backend/cuda-target",
            into: "",
            dao_flash_attn: false,
            nvcc_include: &[],
        }),
        host: &[],
        c_libraries: &[CLibrary {
            source: "bench/backend/probe/backend_probe.c",
            output: "probe/libbackend_probe.so",
            libs: &["dl"],
        }],
        xz: "-6 -T0",
    },
    Program {
        name: "numerics",
        about: "quantized matmul errors and teacher-forced logits (bench/numerics/src/main.rs), stock CUDA Candle against \
                generated ROCm, both with feature flash-attn (stock: Dao's kernels compiled there by \
                bench/flash-attn/build-dao.sh), and the made-up models' maker; run by bench/numerics/run.sh and \
                run-amd-emulated.sh",
        out: "device-carry/numerics",
        rocm: &[RocmBuild {
            manifest: "bench/numerics/rocm/Cargo.toml",
            features: &["flash-attn"],
            targets: Targets::Bins(&["numerics-rocm"]),
            into: "",
            strip: true,
            sonames: CANDLE_SONAMES,
            refused: &[],
            own_kernels: false,
            ported_from: None,
        }],
        cuda: Some(CudaBuild {
            source: CudaSource::Manifest("bench/numerics/cuda/Cargo.toml"),
            features: &["flash-attn"],
            targets: Targets::Bins(&["numerics-cuda"]),
            target_dir: EXAMPLES_CUDA_TARGET,
            into: "",
            dao_flash_attn: true,
            nvcc_include: &[],
        }),
        host: &[MAKE_MODELS],
        c_libraries: &[],
        xz: "-6 -T0",
    },
    Program {
        name: "collectives",
        about: "the all-reduce bandwidth benchmark (bench/collectives: our RCCL layer and NCCL side by side; cudarc's CUDA \
                13.0 bindings, every CUDA library loaded at run time) and the tensor-parallel program; run by \
                bench/collectives/run.sh",
        out: "device-carry/collectives",
        rocm: &[
            RocmBuild {
                manifest: "bench/collectives/Cargo.toml",
                features: &[],
                targets: Targets::Bins(&["allreduce-bandwidth"]),
                into: "",
                strip: true,
                sonames: &["libamdhip64.so.7", "librccl.so.1"],
                refused: &["libcuda", "libnccl", "libcudart"],
                own_kernels: false,
            ported_from: None,
            },
            TENSOR_PARALLEL,
        ],
        cuda: None,
        host: &[],
        c_libraries: &[],
        xz: "-6 -T0",
    },
    Program {
        name: "examples-parity",
        about: "unchanged candle-examples 0.11.1 programs, stock with feature cuda (rocm/ and cuda/), and the made-up \
                models' maker; run by bench/examples/run-examples.sh",
        out: "device-carry/examples-parity",
        rocm: &[examples_rocm(&["rocm"], &["quantized", "qwen", "bert", "t5", "resnet", "mamba", "custom-ops"])],
        cuda: Some(CudaBuild {
            source: CudaSource::Registry { name: "candle-examples", version: "0.11.1" },
            features: &["cuda"],
            targets: Targets::Examples(&["quantized", "qwen", "bert", "t5", "resnet", "mamba", "custom-ops"]),
            target_dir: EXAMPLES_CUDA_TARGET,
            into: "cuda",
            dao_flash_attn: false,
            nvcc_include: &[],
        }),
        host: &[MAKE_MODELS],
        c_libraries: &[],
        // one stream, one thread and a window larger than a binary: the binaries of a side
        // share most of their bytes (the CUDA ones each embed candle-kernels' PTX), so each
        // is stored mostly as references to the one before it
        xz: "--lzma2=preset=9,dict=256MiB -T1",
    },
    Program {
        name: "examples-flash-attn",
        about: "candle-examples 0.11.1's llama and llama_multiprocess with feature flash-attn on both sides (stock: Dao's \
                kernels compiled there by bench/flash-attn/build-dao.sh, NCCL through cudarc, llama_multiprocess with \
                regen's upstream repairs; ours: generated/candle-flash-attn, RCCL), and the made-up models' maker; run by \
                bench/examples/run-examples.sh with SET=flash-attn (one GPU) and SET=multiprocess (two)",
        out: "device-carry/examples-flash-attn",
        rocm: &[examples_rocm(&["rocm", "flash-attn", "rccl"], &["llama", "llama_multiprocess"])],
        cuda: Some(CudaBuild {
            source: CudaSource::Registry { name: "candle-examples", version: "0.11.1" },
            features: &["cuda", "flash-attn", "nccl"],
            targets: Targets::Examples(&["llama", "llama_multiprocess"]),
            target_dir: EXAMPLES_CUDA_TARGET,
            into: "cuda",
            dao_flash_attn: true,
            nvcc_include: &[],
        }),
        host: &[MAKE_MODELS],
        c_libraries: &[],
        xz: "-6 -T0",
    },
    Program {
        name: "flash-attn",
        about: "flash attention, ours (generated/candle-flash-attn over candle-rocm's run_mha) against Dao's (stock \
                candle-flash-attn, its kernels compiled there by bench/flash-attn/build-dao.sh): errors against the f32 \
                reference and speed beside the unfused path (bench/flash-attn/src/main.rs); run by bench/flash-attn/run.sh",
        out: "device-carry/flash-attn",
        rocm: &[RocmBuild {
            manifest: "bench/flash-attn/rocm/Cargo.toml",
            features: &[],
            targets: Targets::Bins(&["flash-attn-bench-rocm"]),
            into: "",
            strip: true,
            sonames: CANDLE_SONAMES,
            refused: &[],
            own_kernels: false,
            ported_from: None,
        }],
        cuda: Some(CudaBuild {
            source: CudaSource::Manifest("bench/flash-attn/cuda/Cargo.toml"),
            features: &[],
            targets: Targets::Bins(&["flash-attn-bench-cuda"]),
            // candle-kernels' nvcc build shared with the backend benchmark's
            target_dir: "target/bench-backend/cuda-target",
            into: "",
            dao_flash_attn: true,
            nvcc_include: &[],
        }),
        host: &[],
        c_libraries: &[],
        xz: "-6 -T0",
    },
    Program {
        name: "user-custom-op",
        about: "a user's crate with custom ops of its own (tests/user-custom-op: its kernels built by candle-rocm-build, \
                here as sm_90 cubins through hip-on-cuda, loaded with get_or_load_custom_func), checked against its CPU \
                ops; run by tests/user-custom-op/run.sh",
        out: "device-carry/user-custom-op",
        rocm: &[RocmBuild {
            manifest: "tests/user-custom-op/Cargo.toml",
            features: &[],
            targets: Targets::Bins(&["user-custom-op-check"]),
            into: "",
            strip: true,
            sonames: CANDLE_SONAMES,
            refused: &[],
            own_kernels: true,
            ported_from: None,
        }],
        cuda: None,
        host: &[],
        c_libraries: &[],
        xz: "-6 -T0",
    },
    Program {
        name: "user-ffi-rotary",
        about: "a Candle extension crate written for CUDA (tests/user-ffi-rotary: a fused rotary kernel, extern \"C\" \
                launchers called through FFI in cuda_fwd, a cudaforge build_lib), ported by `cargo xtask port-crate` into \
                target/ported/user-ffi-rotary, its launchers built by candle-rocm-build (nvcc through hip-on-cuda here), \
                checked against its CPU op; run by tests/user-ffi-rotary/run.sh",
        out: "device-carry/user-ffi-rotary",
        rocm: &[RocmBuild {
            manifest: "target/ported/user-ffi-rotary/Cargo.toml",
            features: &["rocm"],
            targets: Targets::Bins(&["user-ffi-rotary-check"]),
            into: "",
            strip: true,
            sonames: CANDLE_SONAMES,
            refused: &[],
            own_kernels: true,
            ported_from: Some(Port::Repo("tests/user-ffi-rotary")),
        }],
        cuda: None,
        host: &[],
        c_libraries: &[],
        xz: "-6 -T0",
    },
    Program {
        name: "tensor-parallel",
        about: "the tensor-parallel program (tests/tensor-parallel: features rocm and rccl, RCCL forwarded to NCCL); run \
                by tests/tensor-parallel/run.sh",
        out: "device-carry/tensor-parallel",
        rocm: &[TENSOR_PARALLEL],
        cuda: None,
        host: &[],
        c_libraries: &[],
        xz: "-6 -T0",
    },
    Program {
        name: "mistralrs",
        about: "mistral.rs 0.8.1's CLI (`mistralrs`): its five crates from crates.io ported by `cargo xtask port-crate` against \
                a regen of Candle 0.10.2 into target/mistralrs-port, built with feature rocm (the ported crates' kernels as \
                sm_90 cubins through hip-on-cuda, Candle 0.10.2's kernels carried in candle-0.10.2/ for the GPU machine's \
                nvcc), the stock CLI with feature cuda (cuda/; CUB's iterators that CUDA 13 removed from \
                hip-on-cuda/cccl2-iterators), and the made-up models' maker; run by bench/mistralrs/run.sh",
        out: "device-carry/mistralrs",
        rocm: &[RocmBuild {
            manifest: "target/mistralrs-port/mistralrs-cli/Cargo.toml",
            features: &["rocm"],
            targets: Targets::Bins(&["mistralrs"]),
            into: "rocm",
            strip: true,
            sonames: CANDLE_SONAMES,
            refused: &[],
            own_kernels: true,
            ported_from: Some(Port::Registry { crates: MISTRALRS_CRATES, version: "0.8.1", candle: "0.10.2" }),
        }],
        cuda: Some(CudaBuild {
            source: CudaSource::Registry { name: "mistralrs-cli", version: "0.8.1" },
            features: &["cuda"],
            targets: Targets::Bins(&["mistralrs"]),
            target_dir: "target/mistralrs-cuda",
            into: "cuda",
            dao_flash_attn: false,
            // mistralrs-quant's ops.cu names two CUB iterators that CUDA 13 removed
            nvcc_include: &["hip-on-cuda/cccl2-iterators"],
        }),
        host: &[MAKE_MODELS],
        c_libraries: &[],
        // the ROCm and the CUDA binary share most of their bytes (mistral.rs's Rust code): one stream
        // with a window larger than both stores the second mostly as references to the first
        xz: "--lzma2=preset=9,dict=256MiB -T1",
    },
];

/// mistral.rs's crates on the way from its CUDA kernels to its CLI, dependencies first.
pub const MISTRALRS_CRATES: &[&str] = &["mistralrs-quant", "mistralrs-paged-attn", "mistralrs-core", "mistralrs-server-core", "mistralrs-cli"];

pub fn find(name: &str) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.name == name)
}

impl Targets {
    /// The target names (EXAMPLES, when set, for examples).
    pub fn names(&self) -> Vec<String> {
        match self {
            Targets::Bins(bins) => bins.iter().map(|b| b.to_string()).collect(),
            Targets::Examples(default) => match std::env::var("EXAMPLES") {
                Ok(list) if !list.trim().is_empty() => list.split_whitespace().map(str::to_string).collect(),
                _ => default.iter().map(|e| e.to_string()).collect(),
            },
        }
    }

    /// cargo's arguments selecting them.
    pub fn cargo_args(&self) -> Vec<String> {
        let flag = match self {
            Targets::Bins(_) => "--bin",
            Targets::Examples(_) => "--example",
        };
        self.names().into_iter().flat_map(|n| [flag.to_string(), n]).collect()
    }

    /// Where cargo puts them, below the target directory.
    pub fn built(&self, target_dir: &std::path::Path, name: &str) -> std::path::PathBuf {
        match self {
            Targets::Bins(_) => target_dir.join("release").join(name),
            Targets::Examples(_) => target_dir.join("release/examples").join(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::workspace_root;

    #[test]
    fn every_row_names_files_that_exist() {
        let root = workspace_root();
        let mut names = std::collections::BTreeSet::new();
        for p in PROGRAMS {
            assert!(names.insert(p.name), "{} twice", p.name);
            for r in p.rocm {
                // a ported crate's manifest exists once port-crate has run: its source's then
                match &r.ported_from {
                    None => assert!(root.join(r.manifest).is_file(), "{}: {}", p.name, r.manifest),
                    Some(Port::Repo(src)) => assert!(root.join(src).join("Cargo.toml").is_file(), "{}: {src}", p.name),
                    // the registry's crates are fetched when the program is built
                    Some(Port::Registry { crates, .. }) => assert!(r.manifest.ends_with(&format!("{}/Cargo.toml", crates.last().unwrap())), "{}", p.name),
                }
            }
            if let Some(CudaBuild { source: CudaSource::Manifest(m), .. }) = &p.cuda {
                assert!(root.join(m).is_file(), "{}: {m}", p.name);
            }
            for dir in p.cuda.iter().flat_map(|c| c.nvcc_include) {
                assert!(root.join(dir).is_dir(), "{}: {dir}", p.name);
            }
            for h in p.host {
                assert!(root.join(h.manifest).is_file(), "{}: {}", p.name, h.manifest);
            }
            for c in p.c_libraries {
                assert!(root.join(c.source).is_file(), "{}: {}", p.name, c.source);
            }
        }
    }

    #[test]
    fn targets_select_bins_and_examples() {
        assert_eq!(Targets::Bins(&["a", "b"]).cargo_args(), ["--bin", "a", "--bin", "b"]);
        let t = std::path::Path::new("/t");
        assert_eq!(Targets::Bins(&["a"]).built(t, "a"), t.join("release/a"));
        assert_eq!(Targets::Examples(&["e"]).built(t, "e"), t.join("release/examples/e"));
    }
}
