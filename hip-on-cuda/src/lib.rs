//! A forwarding HIP runtime: the C entry points of the HIP runtime, rocBLAS,
//! rocRAND and RCCL that `candle-rocm-hip` calls, implemented over the CUDA
//! driver API, cuBLAS and cuRAND (loaded at run time through `cudarc`'s `sys`
//! modules) and NCCL (`libnccl.so.2`, loaded at run time: see [`nccl`]).
//!
//! Installed first on `LD_LIBRARY_PATH` as `libamdhip64.so.7` (its soname: ROCm
//! 7.2's HIP runtime), with `librocblas.so.5` / `librocrand.so.1` /
//! `librccl.so.1` as empty libraries that depend on it (`cargo xtask gpu-bundle` makes them: one copy of
//! the forwarder, so one copy of its state), it lets binaries linked against
//! ROCm 7.2 run on an NVIDIA GPU.
//!
//! Handles are the CUDA handles themselves: `hipStream_t` is `CUstream` (null =
//! legacy default stream, `hipStreamPerThread` = `(hipStream_t)2` =
//! `CU_STREAM_PER_THREAD`), `hipEvent_t` is `CUevent`, `hipModule_t` is
//! `CUmodule`, `hipFunction_t` is `CUfunction`, device pointers are `CUdeviceptr`,
//! `rocblas_handle` is `cublasHandle_t` and `rocrand_generator` is
//! `curandGenerator_t`. So code compiled separately with nvcc can be given our
//! streams.
//!
//! The ABI (argument types, enum values, status codes) is that of `rocm-rs` 0.5.2's
//! bindings; the unit tests check every value used here against them.
//!
//! The device is reported as what it is, an NVIDIA GPU, with one exception on
//! request: `HIP_ON_CUDA_GCN_ARCH_NAME=gfx1100` makes
//! `hipGetDevicePropertiesR0600` report that AMD arch name as `gcnArchName`
//! (see [`context::hipGetDevicePropertiesR0600`]), so that launchers compiled
//! for an AMD arch get that arch's ggml compute capability.
//!
//! Every exported function is `extern "C"`, catches panics and returns an error
//! status: nothing unwinds or aborts across the C boundary, and on a machine
//! without CUDA every call fails cleanly (`hipGetDeviceCount` says
//! `hipErrorNoDevice` with a count of 0).
//!
//! The HIP functions carry the ELF symbol versions of ROCm 7.2's
//! `libamdhip64.so.7` (`hipMalloc@@hip_4.2`, see the `hip_exports!` macro; the
//! rocBLAS, rocRAND and RCCL functions are unversioned, as in ROCm); they are exported on x86_64
//! Linux only. The CUDA libraries are found by `cudarc`'s
//! `get_lib_name_candidates` (first `libcuda.so` / `libcublas.so` /
//! `libcurand.so`, later `lib*.so.13`, `.so.12`, ..., `.so.1`) through the
//! normal `dlopen` search. `cargo xtask gpu-bundle` checks every binary's
//! HIP/rocBLAS/rocRAND imports against the built library (name and version).
// The exported functions keep their C names and take raw pointers; their safety
// contract is the one of the C API they implement.
#![allow(non_snake_case, non_camel_case_types, non_upper_case_globals, clippy::missing_safety_doc)]

/// `hipError_t`.
pub type hipError_t = u32;

/// Runs `f`, turning a panic into `on_panic` (a panic can only come from a CUDA
/// library whose loading failed inside `cudarc`, e.g. a missing symbol).
pub(crate) fn catch<S>(on_panic: S, f: impl FnOnce() -> S) -> S {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(on_panic)
}

/// Body of a HIP runtime function: `Ok` is `hipSuccess`, a panic `hipErrorUnknown`.
pub(crate) fn hip_call(f: impl FnOnce() -> Result<(), hipError_t>) -> hipError_t {
    catch(status::hipErrorUnknown, || match f() {
        Ok(()) => status::hipSuccess,
        Err(e) => e,
    })
}

/// Whether the CUDA library `name` (`"cublas"`, `"curand"`) can be loaded, checked
/// once with `present` (cudarc's `is_culib_present`, which tries the file names of
/// `cudarc::get_lib_name_candidates`). The first time it cannot, says so on stderr
/// (cudarc itself would panic on the first call).
pub(crate) fn loadable(
    cell: &std::sync::OnceLock<bool>, name: &str, present: unsafe fn() -> bool,
) -> bool {
    *cell.get_or_init(|| {
        let ok = catch(false, || unsafe { present() });
        if !ok {
            let tried = cudarc::get_lib_name_candidates(name).join(", ");
            eprintln!("hip-on-cuda: cannot load {name} (tried {tried}): add its directory to LD_LIBRARY_PATH");
        }
        ok
    })
}

static EXITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn mark_exiting() {
    EXITING.store(true, std::sync::atomic::Ordering::SeqCst);
}

extern "C" {
    fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
}

/// Registers (once) an exit handler that marks the process as exiting. Called after a
/// cuBLAS handle or cuRAND generator was created: the CUDA runtime those libraries carry
/// inside has registered its own exit handlers by then, and exit runs handlers in reverse
/// order, so this one runs before their teardown.
pub(crate) fn watch_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| unsafe {
        atexit(mark_exiting);
    });
}

/// Whether the process is exiting: cuBLAS and cuRAND may have torn down their state, so
/// destroying a handle there is skipped (the process frees it). A program whose threads
/// still drop their handles while `main` returns (mistral.rs's engine thread) otherwise
/// crashes inside `cublasDestroy` (bench/mistralrs/run.sh, `CRASH_HUNT`).
pub(crate) fn exiting() -> bool {
    EXITING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Declares a translation table from an ABI value of ours (a C enum value of
/// rocm-rs's bindings, given with its C name) to a CUDA-side value, and a test
/// helper listing (name, our value, rocm-rs's value) for every entry:
/// `abi_table!(TABLE: Target, check_fn, hip::bindings::hipDeviceAttribute_t_; name = 1 => x, ...)`
/// (the path is under `rocm_rs`: `rocm_rs::hip::bindings::hipDeviceAttribute_t_<name>`).
macro_rules! abi_table {
    ($(#[$m:meta])* $table:ident: $target:ty, $check:ident, $lib:ident :: $module:ident :: $prefix:ident;
     $($name:ident = $value:literal => $to:expr,)+) => {
        $(#[$m])*
        pub const $table: &[(u32, $target)] = &[$(($value, $to),)+];
        #[cfg(test)]
        pub(crate) fn $check() -> Vec<(&'static str, u32, u32)> {
            paste::paste! { vec![$((stringify!($name), $value, rocm_rs::$lib::$module::[<$prefix $name>] as u32),)+] }
        }
    };
}

/// Looks `key` up in a translation table.
pub(crate) fn lookup<K: PartialEq, T: Copy>(table: &[(K, T)], key: K) -> Option<T> {
    table.iter().find(|(k, _)| *k == key).map(|&(_, t)| t)
}

/// Exports each listed HIP function under its C name in the ELF version node that
/// ROCm 7.2's `libamdhip64.so.7` gives it (`hipMalloc@@hip_4.2`), so
/// that the references of HIP-linked binaries (`hipMalloc@hip_4.2`) bind here:
/// glibc refuses to bind a versioned reference to an unversioned definition in a
/// library of the same name. The nodes are defined in `hip-versions.map`.
///
/// A `.symver` directive must be in the object file that defines its symbol, and
/// rustc's codegen units give no such guarantee for Rust functions; so the
/// exported symbol is a one-instruction tail jump, defined in the same assembly,
/// to the Rust function (which keeps its mangled name: `#[no_mangle]` would
/// define the C name twice). Only x86_64 Linux exports the HIP functions.
macro_rules! hip_exports {
    ($($version:literal: $($name:ident),+;)+) => {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        std::arch::global_asm!(
            ".pushsection .text",
            $($(
                concat!(".globl ", stringify!($name), "_hip_export"),
                concat!(".type ", stringify!($name), "_hip_export, @function"),
                concat!(".p2align 4"),
                concat!(stringify!($name), "_hip_export: jmp {", stringify!($name), "}"),
                concat!(".symver ", stringify!($name), "_hip_export, ", stringify!($name), "@@", $version),
            )+)+
            ".popsection",
            $($($name = sym $name,)+)+
        );
        /// (function, version node), for the tests.
        #[cfg(test)]
        pub(crate) const SYMBOL_VERSIONS: &[(&str, &str)] = &[$($((stringify!($name), $version),)+)+];
    };
}

// After the macros above, which the modules use.
pub mod amd_host_code;
pub mod blas;
pub mod context;
pub mod memory;
pub mod module;
pub mod nccl;
pub mod rand;
pub mod status;
pub mod stream_event;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod nccl_tests;
