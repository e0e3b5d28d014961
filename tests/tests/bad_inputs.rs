//! Bad kernel inputs: each fails with one clear line naming file, line and construct.

use candle_rocm_tests::translate_fixture;

fn error_of(rel: &str) -> String {
    match translate_fixture(rel) {
        Ok(_) => panic!("{rel} translated, but it must fail"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unmappable_construct_is_named() {
    let err = error_of("bad/unmappable.cu");
    assert!(err.starts_with("unmappable.cu:5: __dp2a_lo: CUDA-only construct"), "{err}");
    assert!(!err.contains('\n'));
}

#[test]
fn warp_intrinsic_with_missing_arguments_is_named() {
    let err = error_of("bad/warp_arguments.cu");
    assert!(err.starts_with("warp_arguments.cu:3: __shfl_xor_sync: unexpected number of arguments"), "{err}");
}

#[test]
fn unknown_arch_threshold_is_named() {
    let err = error_of("bad/unknown_arch_guard.cu");
    assert!(err.starts_with("unknown_arch_guard.cu:2: __CUDA_ARCH__ >= 610: no AMD meaning"), "{err}");
}
