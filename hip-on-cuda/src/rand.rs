//! rocRAND over cuRAND: `rocrand_generator` is `curandGenerator_t`. Both fill
//! device memory on the generator's stream; uniform values are in (0, 1] and the
//! pseudo-random normal generators need an even length in both libraries. The
//! sequences themselves differ (different algorithms behind the same names).
use crate::context::current;
use crate::status::{
    rocrand_from_curand, rocrand_status, ROCRAND_STATUS_INTERNAL_ERROR, ROCRAND_STATUS_NOT_CREATED,
    ROCRAND_STATUS_SUCCESS, ROCRAND_STATUS_TYPE_ERROR,
};
use crate::{catch, lookup};
use cudarc::curand::sys::{self as curand, curandGenerator_t, curandRngType as T};
use cudarc::driver::sys::CUstream;
use std::sync::OnceLock;

abi_table! {
    /// `rocrand_rng_type` → `curandRngType`. rocRAND's MRG31K3P, LFSR113 and
    /// ThreeFry generators have no cuRAND counterpart: `ROCRAND_STATUS_TYPE_ERROR`.
    RNG_TYPES: T, rng_types_vs_rocm_rs, rocrand::bindings::rocrand_rng_type_;
    ROCRAND_RNG_PSEUDO_DEFAULT = 400 => T::CURAND_RNG_PSEUDO_DEFAULT,
    ROCRAND_RNG_PSEUDO_XORWOW = 401 => T::CURAND_RNG_PSEUDO_XORWOW,
    ROCRAND_RNG_PSEUDO_MRG32K3A = 402 => T::CURAND_RNG_PSEUDO_MRG32K3A,
    ROCRAND_RNG_PSEUDO_MTGP32 = 403 => T::CURAND_RNG_PSEUDO_MTGP32,
    ROCRAND_RNG_PSEUDO_PHILOX4_32_10 = 404 => T::CURAND_RNG_PSEUDO_PHILOX4_32_10,
    ROCRAND_RNG_PSEUDO_MT19937 = 407 => T::CURAND_RNG_PSEUDO_MT19937,
    ROCRAND_RNG_QUASI_DEFAULT = 500 => T::CURAND_RNG_QUASI_DEFAULT,
    ROCRAND_RNG_QUASI_SOBOL32 = 501 => T::CURAND_RNG_QUASI_SOBOL32,
    ROCRAND_RNG_QUASI_SCRAMBLED_SOBOL32 = 502 => T::CURAND_RNG_QUASI_SCRAMBLED_SOBOL32,
    ROCRAND_RNG_QUASI_SOBOL64 = 504 => T::CURAND_RNG_QUASI_SOBOL64,
    ROCRAND_RNG_QUASI_SCRAMBLED_SOBOL64 = 505 => T::CURAND_RNG_QUASI_SCRAMBLED_SOBOL64,
}

/// Body of a rocRAND function: a panic is `ROCRAND_STATUS_INTERNAL_ERROR`.
fn rand_call(f: impl FnOnce() -> Result<(), rocrand_status>) -> rocrand_status {
    catch(ROCRAND_STATUS_INTERNAL_ERROR, || f().err().unwrap_or(ROCRAND_STATUS_SUCCESS))
}

fn check(s: curand::curandStatus) -> Result<(), rocrand_status> {
    match rocrand_from_curand(s) {
        ROCRAND_STATUS_SUCCESS => Ok(()),
        e => Err(e),
    }
}

/// Checks `g` (null: `ROCRAND_STATUS_NOT_CREATED`) and that the thread has a
/// current context (cuRAND's runtime uses it, as rocRAND uses HIP's current device).
fn generator(g: curandGenerator_t) -> Result<curandGenerator_t, rocrand_status> {
    if g.is_null() {
        return Err(ROCRAND_STATUS_NOT_CREATED);
    }
    current().map_err(|_| ROCRAND_STATUS_INTERNAL_ERROR)?;
    Ok(g)
}

#[no_mangle]
pub unsafe extern "C" fn rocrand_create_generator(
    out: *mut curandGenerator_t, rng_type: u32,
) -> rocrand_status {
    rand_call(|| {
        if out.is_null() {
            return Err(ROCRAND_STATUS_NOT_CREATED);
        }
        let rng_type = lookup(RNG_TYPES, rng_type).ok_or(ROCRAND_STATUS_TYPE_ERROR)?;
        static LOADED: OnceLock<bool> = OnceLock::new();
        if !crate::loadable(&LOADED, "curand", curand::is_culib_present) {
            return Err(ROCRAND_STATUS_INTERNAL_ERROR);
        }
        current().map_err(|_| ROCRAND_STATUS_INTERNAL_ERROR)?;
        check(curand::curandCreateGenerator(out, rng_type))?;
        crate::watch_exit();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn rocrand_destroy_generator(g: curandGenerator_t) -> rocrand_status {
    rand_call(|| {
        let g = generator(g)?;
        if crate::exiting() {
            return Ok(());
        }
        check(curand::curandDestroyGenerator(g))
    })
}

#[no_mangle]
pub unsafe extern "C" fn rocrand_set_stream(
    g: curandGenerator_t, stream: CUstream,
) -> rocrand_status {
    rand_call(|| check(curand::curandSetStream(generator(g)?, stream as curand::cudaStream_t)))
}

/// Seed of a pseudo-random generator (quasi generators: `ROCRAND_STATUS_TYPE_ERROR`).
#[no_mangle]
pub unsafe extern "C" fn rocrand_set_seed(g: curandGenerator_t, seed: u64) -> rocrand_status {
    rand_call(|| check(curand::curandSetPseudoRandomGeneratorSeed(generator(g)?, seed)))
}

#[no_mangle]
pub unsafe extern "C" fn rocrand_generate_uniform(
    g: curandGenerator_t, out: *mut f32, n: usize,
) -> rocrand_status {
    rand_call(|| check(curand::curandGenerateUniform(generator(g)?, out, n)))
}

#[no_mangle]
pub unsafe extern "C" fn rocrand_generate_uniform_double(
    g: curandGenerator_t, out: *mut f64, n: usize,
) -> rocrand_status {
    rand_call(|| check(curand::curandGenerateUniformDouble(generator(g)?, out, n)))
}

#[no_mangle]
pub unsafe extern "C" fn rocrand_generate_normal(
    g: curandGenerator_t, out: *mut f32, n: usize, mean: f32, stddev: f32,
) -> rocrand_status {
    rand_call(|| check(curand::curandGenerateNormal(generator(g)?, out, n, mean, stddev)))
}

#[no_mangle]
pub unsafe extern "C" fn rocrand_generate_normal_double(
    g: curandGenerator_t, out: *mut f64, n: usize, mean: f64, stddev: f64,
) -> rocrand_status {
    rand_call(|| check(curand::curandGenerateNormalDouble(generator(g)?, out, n, mean, stddev)))
}
