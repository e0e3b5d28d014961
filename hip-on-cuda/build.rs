//! Link arguments of the cdylib:
//!
//! * soname `libamdhip64.so.7` (ROCm 7.2's HIP runtime), so the file can be
//!   installed (or symlinked) under the name that HIP-linked binaries ask for;
//! * the version nodes of ROCm 7.2's `libamdhip64.so.7`, from `hip-versions.map`
//!   (see that file). This needs the `lld` linker, which rustc uses by default on
//!   x86_64 Linux since 1.90 (GNU ld rejects rustc's anonymous version script
//!   combined with named nodes, loudly).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=hip-versions.map");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libamdhip64.so.7");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/hip-versions.map");
}
