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

use crate::logits::{argmax, bounds, Comparison};
use crate::model::{Config, Model, Ranks, Sum, SHAPES};
use crate::prompt;
use candle_core::rocm_backend::candle_rocm_hip::driver::HipContext;
use candle_core::{DType, Device};

const PROMPT_LEN: usize = 8;
const STEPS: usize = 6;

/// World 2 and 4 against the whole model, per dtype; fails on a non-contiguous shard or
/// logits outside the dtype's bounds (`logits::bounds`, as run.sh's teacher-forced rows).
fn check(device: &Device) -> candle_core::Result<()> {
    let tiny = SHAPES[0];
    for config in [tiny, Config { name: "tiny-gqa", kv_heads: 4, ..tiny }] {
        check_config(device, config)?;
    }
    Ok(())
}

fn check_config(device: &Device, config: Config) -> candle_core::Result<()> {
    let max_len = PROMPT_LEN + STEPS;
    for dtype in [DType::F32, DType::BF16] {
        let bounds = bounds(dtype).map_err(candle_core::Error::Msg)?;
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
            let got = (0..STEPS).map(|step| shards.next_logits(&tokens[..PROMPT_LEN + step])).collect::<candle_core::Result<Vec<_>>>()?;
            let c = Comparison::of(&reference, &got).map_err(candle_core::Error::Msg)?;
            eprintln!("{device:?} {} {dtype:?} world {world}: {}", config.name, c.describe(&bounds));
            assert!(c.within(&bounds), "{device:?} {} {dtype:?} world {world}: outside the bounds: {}", config.name, c.describe(&bounds));
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
