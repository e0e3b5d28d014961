//! Rule `own-kernel-builds`: a package's own CUDA kernels, built to PTX by its build
//! script with cudaforge and loaded in a `CustomOp`'s `cuda_fwd`, get a ROCm build
//! ([`OWN_KERNEL_BUILDS`], applied by [`replacements`](super::replacements) to the ROCm
//! code of a twinned file). candle-examples' build script is twinned as tests are (its
//! `cfg(feature = "cuda")` block gets a `rocm` twin); the rows make the twin's cudaforge
//! calls candle-rocm-build's (the same kernels translated and compiled with hipcc into
//! code objects, written as `&[u8]` constants of the names cudaforge gives), and the
//! custom-ops example's twinned kernels module includes them, so that its `rocm_fwd`
//! loads them with `get_or_load_custom_func` (rule `code-object-inputs`). From
//! [`OWN_KERNEL_BUILDS_SINCE`]: 0.9.x builds with bindgen_cuda, which no row maps.

use super::mapping::{OWN_KERNEL_BUILDS, OWN_KERNEL_BUILDS_SINCE};
use super::replacements::{self, Scope, Table};
use crate::TranslateError;

const TABLE: Table = Table { rule: "own-kernel-builds", path: "backend::mapping::OWN_KERNEL_BUILDS", rows: OWN_KERNEL_BUILDS };

/// Whether the release `label` names is one the rows are for.
fn applies(label: &str) -> bool {
    replacements::release(label).is_some_and(|r| r >= OWN_KERNEL_BUILDS_SINCE)
}

/// Whether `file` of the package and release `label` names (`candle-examples 0.11.1`)
/// is a build script this rule twins.
pub fn twins_build_script(label: &str, file: &str) -> bool {
    file == "build.rs" && applies(label) && replacements::has_rows(&TABLE, replacements::krate(label), file)
}

/// Applies the rows for `file` of the crate that `label` names (a twinned file).
pub fn rewrite(label: &str, file: &str, parsed: &mut syn::File) -> Result<usize, TranslateError> {
    if !applies(label) {
        return Ok(0);
    }
    replacements::apply(&TABLE, label, file, parsed, Scope::RocmCode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cudaforge_releases_twin_the_build_script() {
        assert!(twins_build_script("candle-examples 0.11.1", "build.rs"));
        assert!(twins_build_script("candle-examples 0.10.2", "build.rs"));
        assert!(!twins_build_script("candle-examples 0.9.1", "build.rs"));
        assert!(!twins_build_script("candle-nn 0.11.1", "build.rs"));
        assert!(!twins_build_script("candle-examples 0.11.1", "examples/custom-ops/main.rs"));
    }

    /// Before and after: upstream's build script block, twinned, then the rows.
    #[test]
    fn the_build_scripts_rocm_block_builds_with_candle_rocm_build() {
        let src = r#"fn main() {
    #[cfg(feature = "rocm")]
    {
        for kdir in KERNEL_DIRS.iter() {
            let bindings = rocmforge::KernelBuilder::new()
                .source_glob(kdir.kernel_glob)
                .build_ptx()
                .expect("Failed to build ptx");
            bindings.write(safe_target).expect("Failed to write ptx bindings");
        }
    }
}
"#;
        let mut parsed = syn::parse_file(src).unwrap();
        assert_eq!(rewrite("candle-examples 0.11.1 build.rs", "build.rs", &mut parsed).unwrap(), 2);
        let out = prettyplease::unparse(&parsed);
        assert!(out.contains("let bindings = candle_rocm_build::Builder::new()\n                .kernel_glob(kdir.kernel_glob)\n                .build()"), "{out}");
        assert!(out.contains("bindings\n                .write(safe_target.with_file_name(\"rocm_kernels.rs\"))"), "{out}");
        // outside ROCm code (the CUDA block) nothing is found: an error naming the row
        let cuda = src.replace("\"rocm\"", "\"cuda\"");
        let err = rewrite("candle-examples 0.11.1 build.rs", "build.rs", &mut syn::parse_file(&cuda).unwrap()).unwrap_err().to_string();
        assert!(err.contains("(0 times in ROCm code, expected 1)") && err.contains("rule own-kernel-builds"), "{err}");
        // 0.9.x: not this rule's
        assert_eq!(rewrite("candle-examples 0.9.1 build.rs", "build.rs", &mut syn::parse_file(&cuda).unwrap()).unwrap(), 0);
    }

    #[test]
    fn the_examples_rocm_kernels_module_includes_the_code_objects() {
        let src = "#[cfg(feature = \"rocm\")]\nmod rocm_kernels {\n    include!(concat!(env!(\"OUT_DIR\"), \"/cuda_kernels.rs\"));\n}\n";
        let mut parsed = syn::parse_file(src).unwrap();
        assert_eq!(rewrite("candle-examples 0.11.1 examples/custom-ops/main.rs", "examples/custom-ops/main.rs", &mut parsed).unwrap(), 1);
        assert!(prettyplease::unparse(&parsed).contains("include!(concat!(env!(\"OUT_DIR\"), \"/rocm_kernels.rs\"));"));
    }
}
