//! The shard math of world sizes 2 and 4 on one device: every rank's shard held in one
//! process, the row-parallel partial outputs summed here instead of all-reduced, against the
//! whole model, in f32 and bf16, teacher-forced on the whole model's greedy tokens; for the
//! tiny shape and for it with 4 key/value heads (grouped-query attention, as llama-7b's 8 of
//! 32: the key/value heads are split over the ranks with their query heads). Each
//! shard must be contiguous, as llama_multiprocess's sharded loading makes it: a narrowed
//! view of the full weight is refused by a GPU's matmul, which world size 1 (a narrow to the
//! full width) and bf16 (`to_dtype` copies) hid until two GPUs ran f32.
//! On the CPU always (CI runs it there through the GPU bundle); on ROCm device 0 when there
//! is one, else that test says it skipped.

use crate::model::{Config, Model, Ranks, Sum, SHAPES};
use crate::prompt;
use candle_core::rocm_backend::candle_rocm_hip::driver::HipContext;
use candle_core::{DType, Device};

const PROMPT_LEN: usize = 8;
const STEPS: usize = 6;

fn argmax(x: &[f32]) -> u32 {
    x.iter().enumerate().fold(0, |b, (i, v)| if *v > x[b] { i } else { b }) as u32
}

fn nmse(reference: &[f32], x: &[f32]) -> f64 {
    let err: f64 = reference.iter().zip(x).map(|(a, b)| (*a as f64 - *b as f64).powi(2)).sum();
    err / reference.iter().map(|a| (*a as f64).powi(2)).sum::<f64>()
}

/// The largest logits NMSE of world 2 and 4 against the whole model, per dtype; fails on a
/// non-contiguous shard, a different top-1 in f32, or an NMSE over the dtype's bound.
fn check(device: &Device) -> candle_core::Result<()> {
    let tiny = SHAPES[0];
    for config in [tiny, Config { name: "tiny-gqa", kv_heads: 4, ..tiny }] {
        check_config(device, config)?;
    }
    Ok(())
}

fn check_config(device: &Device, config: Config) -> candle_core::Result<()> {
    let max_len = PROMPT_LEN + STEPS;
    for (dtype, bound) in [(DType::F32, 1e-9), (DType::BF16, 2e-3)] {
        let whole = Model::new(config, Ranks::whole(), Sum::Here, dtype, device, max_len)?;
        let mut tokens = prompt(PROMPT_LEN, config.vocab);
        let mut reference = Vec::new();
        for _ in 0..STEPS {
            let logits = whole.next_logits(&tokens)?;
            tokens.push(argmax(&logits));
            reference.push(logits);
        }
        for world in [2, 4] {
            let shards = Model::new(config, Ranks::all(world), Sum::Here, dtype, device, max_len)?;
            let bad = shards.non_contiguous_shards();
            assert!(bad.is_empty(), "{device:?} {} {dtype:?} world {world}: shards kept as views of the full weight: {bad:?}", config.name);
            let (mut worst, mut same_top1) = (0f64, 0);
            for (step, reference) in reference.iter().enumerate() {
                let logits = shards.next_logits(&tokens[..PROMPT_LEN + step])?;
                worst = worst.max(nmse(reference, &logits));
                same_top1 += usize::from(argmax(&logits) == argmax(reference));
            }
            eprintln!("{device:?} {} {dtype:?} world {world}: logits NMSE max {worst:.2e}, top-1 identical at {same_top1}/{STEPS} steps", config.name);
            assert!(worst <= bound, "{device:?} {} {dtype:?} world {world}: logits NMSE {worst:.2e} over {bound:.0e}", config.name);
            if dtype == DType::F32 {
                assert_eq!(same_top1, STEPS, "{device:?} {} f32 world {world}: top-1 differs from the whole model", config.name);
            }
        }
    }
    Ok(())
}

#[test]
fn shards_of_world_2_and_4_sum_to_the_whole_model_cpu() -> candle_core::Result<()> {
    check(&Device::Cpu)
}

#[test]
fn shards_of_world_2_and_4_sum_to_the_whole_model_rocm() -> candle_core::Result<()> {
    match HipContext::device_count() {
        Ok(n) if n > 0 => check(&Device::new_rocm(0)?),
        other => {
            eprintln!("skipped: {}: no ROCm device ({other:?})", module_path!());
            Ok(())
        }
    }
}
