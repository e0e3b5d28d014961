//! What a `build.rs` that compiles kernels for AMD GPUs needs besides compiling: hipcc
//! found with a message that says how to get it, its release checked, the arches chosen,
//! and outputs known to be up to date. Shared by candle-rocm-kernels' build script
//! (Candle's kernels) and candle-rocm-build (a user's kernels), so that both choose
//! the same arches and say the same things.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Hipcc;

/// [`Hipcc::locate`], failing with how to install the HIP SDK. `what` says what needs it
/// ("the `rocm` feature compiles Candle's kernels for AMD GPUs"), `without` what does not.
pub fn locate_hipcc(what: &str, without: &str) -> Result<Hipcc, String> {
    Hipcc::locate().map_err(|e| {
        format!(
            "{e}\n{what} and needs hipcc (the HIP SDK):\n  \
             install ROCm (https://rocm.docs.amd.com), or on Debian/Ubuntu `apt-get install hipcc`,\n  \
             or point ROCM_PATH/HIP_PATH at an installation.\n{without}."
        )
    })
}

/// hipcc's release, refused when unsupported, a `cargo:warning` when untested.
pub fn check_version(hipcc: &Hipcc) -> Result<String, String> {
    let version = hipcc.version().map_err(|e| e.to_string())?;
    match crate::releases::check_hip_version(&version) {
        Ok(crate::releases::Support::Tested) => {}
        Ok(crate::releases::Support::Untested(note)) => println!("cargo:warning={note}"),
        Err(e) => return Err(format!("{} ({}): {e}", hipcc.path().display(), version)),
    }
    Ok(version)
}

/// `CANDLE_ROCM_ARCHS`, else the GPUs `rocm_agent_enumerator`/`amdgpu-arch` report, else
/// the current arches ([`crate::CURRENT_ARCHES`]) hipcc supports (with a `cargo:warning`).
/// An arch hipcc does not support is an error naming it and the ones it does.
pub fn choose_arches(hipcc: &Hipcc, version: &str) -> Result<Vec<String>, String> {
    let defaults = crate::CURRENT_ARCHES;
    let (arches, from) = if let Some(a) = crate::arches_from_env() {
        (a, "CANDLE_ROCM_ARCHS")
    } else if let Some(a) = detect("rocm_agent_enumerator").or_else(|| detect("amdgpu-arch")) {
        (a, "the GPUs of this machine")
    } else {
        let (ok, dropped): (Vec<String>, Vec<String>) = defaults.iter().map(|a| a.to_string()).partition(|a| hipcc.check_arch(a).is_ok());
        println!("cargo:warning=CANDLE_ROCM_ARCHS is not set and no AMD GPU was detected: compiling for the default arches {}", ok.join(","));
        if !dropped.is_empty() {
            println!("cargo:warning={} left out: {} does not support them", dropped.join(","), hipcc.path().display());
        }
        if ok.is_empty() {
            return Err(format!("{} supports none of the default arches {}: set CANDLE_ROCM_ARCHS", hipcc.path().display(), defaults.join(",")));
        }
        return Ok(ok);
    };
    for arch in &arches {
        if let Err(e) = hipcc.check_arch(arch) {
            let has: Vec<&str> = defaults.iter().copied().filter(|a| hipcc.check_arch(a).is_ok()).collect();
            return Err(format!(
                "{arch} (from {from}) is not an arch of hipcc {version} ({}): {e}\n\
                 of the current AMD arches it supports: {}\n\
                 set CANDLE_ROCM_ARCHS to those, or use a newer ROCm",
                hipcc.path().display(),
                if has.is_empty() { "none".to_string() } else { has.join(",") }
            ));
        }
    }
    Ok(arches)
}

/// The distinct gfx arches a detection tool prints (gfx000, the CPU agent, dropped); None if it fails or finds none.
/// The tool is looked for in ROCm's directories (`$ROCM_PATH`, else `/opt/rocm`:
/// `bin`, and `llvm/bin`, where ROCm 7 keeps `amdgpu-arch`), then on PATH.
fn detect(tool: &str) -> Option<Vec<String>> {
    let rocm = std::env::var("ROCM_PATH").unwrap_or_else(|_| "/opt/rocm".into());
    let program = [format!("{rocm}/bin"), format!("{rocm}/llvm/bin")].iter().map(|d| Path::new(d).join(tool)).find(|p| p.is_file()).unwrap_or_else(|| PathBuf::from(tool));
    let out = Command::new(program).stderr(std::process::Stdio::null()).output().ok()?;
    let mut arches: Vec<String> = Vec::new();
    for arch in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        if arch.starts_with("gfx") && arch != "gfx000" && !arches.iter().any(|a| a == arch) {
            arches.push(arch.to_string());
        }
    }
    (out.status.success() && !arches.is_empty()).then_some(arches)
}

/// Whether `output` exists and is newer than everything in the depfile hip-build wrote beside it.
pub fn up_to_date(output: &Path) -> bool {
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(built) = mtime(output) else {
        return false;
    };
    let Ok(rule) = std::fs::read_to_string(crate::cache::depfile_of(output)) else {
        return false;
    };
    let deps = crate::deps::parse_make_deps(&rule);
    !deps.is_empty() && deps.iter().all(|d| mtime(Path::new(d)).is_some_and(|t| t <= built))
}

/// Writes `text` to `path` unless it already holds it (an unchanged file keeps its mtime,
/// so neither rustc nor an up-to-date check sees a change).
pub fn write_if_changed(path: &Path, text: &[u8]) -> Result<(), String> {
    if std::fs::read(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Archives host objects (launchers compiled with [`crate::OutputKind::Object`]) into the
/// static library `lib` with `$AR`, `ar`, or the `llvm-ar` beside hipcc (when given).
pub fn archive(hipcc: Option<&Hipcc>, lib: &Path, objects: &[&Path]) -> Result<(), String> {
    let _ = std::fs::remove_file(lib);
    let mut tools: Vec<PathBuf> = std::env::var_os("AR").map(PathBuf::from).into_iter().collect();
    tools.push("ar".into());
    tools.extend(hipcc.and_then(|h| h.path().parent()).map(|d| d.join("llvm-ar")));
    tools.push("llvm-ar".into());
    for tool in &tools {
        // `q`, not `r`: members with the same file name in different directories are all kept
        let Ok(out) = Command::new(tool).arg("qcs").arg(lib).args(objects).output() else {
            continue;
        };
        if out.status.success() {
            return Ok(());
        }
        return Err(format!("{} qcs {} failed:\n{}", tool.display(), lib.display(), String::from_utf8_lossy(&out.stderr)));
    }
    let tried = tools.iter().map(|t| t.display().to_string()).collect::<Vec<_>>().join(", ");
    Err(format!("no archiver found to build {} (tried {tried}): install binutils or set AR", lib.display()))
}

/// C++'s ABI runtime (libsupc++, inside libstdc++), which a launcher object must not need:
/// the static kernels library is linked without it, and Rust's linker (lld) adds no C++
/// library. Function-local statics with dynamic initialisation call `__cxa_guard_*`,
/// exceptions `__gxx_personality_v0` and `__cxa_throw`. glibc's own `__cxa_*` (static
/// destructors, `__cxa_atexit`) are allowed. The standard library's names (`_ZSt...`) are
/// not checked: a header such as a newer libstdc++'s <iostream> (through hipCUB, in the ROCm
/// 7.2 root) references its own initialiser, which the linker there resolves.
const CXX_RUNTIME_PREFIXES: &[&str] = &["__cxa_", "__gxx_"];
const GLIBC_CXA: &[&str] = &["__cxa_atexit", "__cxa_finalize", "__cxa_thread_atexit_impl"];

/// Fails naming the first source whose host object needs C++'s ABI runtime, and the symbol.
pub fn check_no_cxx_runtime(objects: &[(&Path, &Path)]) -> Result<(), String> {
    for (source, object) in objects {
        let undefined = crate::code_object::host_undefined_symbols(object).map_err(|e| e.to_string())?;
        let needs_runtime = |sym: &&String| CXX_RUNTIME_PREFIXES.iter().any(|p| sym.starts_with(p)) && !GLIBC_CXA.contains(&sym.as_str());
        if let Some(symbol) = undefined.iter().find(needs_runtime) {
            return Err(format!(
                "{}: its host code needs C++'s runtime ({symbol}), which the kernels library is linked without (a function-local static or an exception in a launcher)",
                source.display()
            ));
        }
    }
    Ok(())
}

/// Rust source embedding code objects: `pub const NAME: &[u8]` for each `(NAME, path)`,
/// 4096-aligned so that a code object can be loaded in place.
pub fn code_object_consts<'a>(objects: impl IntoIterator<Item = (&'a str, &'a Path)>) -> String {
    let mut s = String::from("#[repr(C, align(4096))]\nstruct Aligned<T: ?Sized>(T);\n");
    for (name, path) in objects {
        s.push_str(&format!("pub const {name}: &[u8] = &Aligned(*include_bytes!({:?})).0;\n", path.display().to_string()));
    }
    s
}
