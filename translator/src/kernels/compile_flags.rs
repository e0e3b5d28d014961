//! A build script's nvcc arguments as hipcc arguments ([`NVCC_FLAGS`]): what candle-rocm-build
//! does with cudaforge's and bindgen_cuda's `arg`.

use super::mapping::{NvccFlag, NVCC_FLAGS};

/// The hipcc arguments for `args` (nvcc's, in order). An argument no row of [`NVCC_FLAGS`]
/// covers is an error naming it.
pub fn hipcc_args<S: AsRef<str>>(args: &[S]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut args = args.iter().map(AsRef::as_ref);
    while let Some(arg) = args.next() {
        match row(arg) {
            Some(NvccFlag::Same) => out.push(arg.to_string()),
            Some(NvccFlag::To(to)) => out.push(to.to_string()),
            Some(NvccFlag::Drop(_)) => {}
            Some(NvccFlag::HostNext) => {
                let host = args.next().ok_or_else(|| format!("the nvcc argument `{arg}` is last: it needs the host compiler's flag after it"))?;
                out.extend(host.split(',').filter(|h| !h.is_empty()).map(str::to_string));
            }
            None => return Err(format!("the nvcc argument `{arg}` has no hipcc counterpart in translator::kernels::mapping::NVCC_FLAGS: add a row, or pass hipcc's own flag with `flag`")),
        }
    }
    Ok(out)
}

/// The row for `arg`: an exact key, or a `*` key it begins with.
pub fn row(arg: &str) -> Option<NvccFlag> {
    NVCC_FLAGS.iter().find(|(key, _)| key.strip_suffix('*').map_or(*key == arg, |prefix| arg.starts_with(prefix))).map(|(_, flag)| *flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before and after: candle-flash-attn's cudaforge arguments.
    #[test]
    fn nvcc_arguments_become_hipccs() {
        let nvcc = ["-std=c++17", "-O3", "-U__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr", "--use_fast_math", "--verbose", "-DX=0x1", "-Xcompiler", "-fPIC", "-UNDEBUG"];
        assert_eq!(hipcc_args(&nvcc).unwrap(), ["-std=c++17", "-O3", "-ffast-math", "-DX=0x1", "-fPIC", "-UNDEBUG"]);
        assert_eq!(hipcc_args(&["-Xcompiler", "-fPIC,-Wall"]).unwrap(), ["-fPIC", "-Wall"]);
    }

    #[test]
    fn an_unknown_argument_is_named() {
        let err = hipcc_args(&["-O3", "--keep"]).unwrap_err();
        assert!(err.contains("`--keep`") && err.contains("NVCC_FLAGS"), "{err}");
        assert!(hipcc_args(&["-Xcompiler"]).unwrap_err().contains("`-Xcompiler` is last"));
    }
}
