// The crate's CUDA kernels for AMD GPUs (with cudaforge, the CUDA build would be
// `KernelBuilder::new().source_glob("kernels/*.cu").build_ptx()`).
fn main() {
    candle_rocm_build::Builder::new()
        .kernel_glob("kernels/*.cu")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
}
