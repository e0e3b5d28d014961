// Compiles the rotary kernels and their extern "C" launchers into librotary.a.
use cudaforge::{KernelBuilder, Result};
use std::path::PathBuf;

fn main() -> Result<()> {
    println!("cargo::rerun-if-changed=build.rs");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR not set"));
    let builder = KernelBuilder::new()
        .source_glob("kernels/*.cu")
        .out_dir(&out_dir)
        .arg("-std=c++17")
        .arg("-O3")
        .arg("-U__CUDA_NO_HALF_OPERATORS__")
        .arg("-U__CUDA_NO_BFLOAT16_CONVERSIONS__")
        .arg("--expt-relaxed-constexpr")
        .arg("-Xcompiler")
        .arg("-fPIC")
        .thread_percentage(0.5);
    builder.build_lib(out_dir.join("librotary.a"))?;
    println!("cargo::rustc-link-search={}", out_dir.display());
    println!("cargo::rustc-link-lib=rotary");
    println!("cargo::rustc-link-lib=dylib=cudart");
    println!("cargo::rustc-link-lib=dylib=stdc++");
    Ok(())
}
