//! Logits: the `.logits` file (u32 steps, u32 vocab, then every step's f32 values, little
//! endian), and the comparison of logits against a reference (top-1 agreement and NMSE)
//! within a dtype's bounds: what the one-device shard check asserts and what
//! `tensor-parallel --compare` answers for run.sh's teacher-forced rows.

use candle_core::DType;
use std::path::Path;

/// The index of the largest value (the first of equals).
pub fn argmax(x: &[f32]) -> u32 {
    x.iter().enumerate().fold(0, |b, (i, v)| if *v > x[b] { i } else { b }) as u32
}

/// `sum (x - reference)^2 / sum reference^2`, in f64.
pub fn nmse(reference: &[f32], x: &[f32]) -> f64 {
    let err: f64 = reference.iter().zip(x).map(|(a, b)| (*a as f64 - *b as f64).powi(2)).sum();
    err / reference.iter().map(|a| (*a as f64).powi(2)).sum::<f64>()
}

/// How close logits computed another way (split over ranks) must stay to the reference.
pub struct Bounds {
    /// The share of steps whose top-1 must be the reference's.
    pub min_top1: f64,
    pub max_nmse: f64,
}

/// f32: every top-1 and NMSE <= 1e-9 (only the order of the sums differs); bf16: top-1 at
/// 90% of the steps or more and NMSE <= 2e-3 (the partial outputs are rounded to bf16).
pub fn bounds(dtype: DType) -> Result<Bounds, String> {
    match dtype {
        DType::F32 => Ok(Bounds { min_top1: 1.0, max_nmse: 1e-9 }),
        DType::BF16 => Ok(Bounds { min_top1: 0.9, max_nmse: 2e-3 }),
        other => Err(format!("no comparison bounds for {other:?} (f32, bf16)")),
    }
}

/// Logits of several steps against the reference's.
pub struct Comparison {
    pub steps: usize,
    pub same_top1: usize,
    pub worst_nmse: f64,
}

impl Comparison {
    pub fn of(reference: &[Vec<f32>], got: &[Vec<f32>]) -> Result<Self, String> {
        if reference.len() != got.len() || reference.iter().zip(got).any(|(a, b)| a.len() != b.len()) {
            return Err(format!("{} steps of logits against a reference of {}, or another vocabulary", got.len(), reference.len()));
        }
        let same_top1 = reference.iter().zip(got).filter(|(a, b)| argmax(a) == argmax(b)).count();
        let worst_nmse = reference.iter().zip(got).map(|(a, b)| nmse(a, b)).fold(0f64, f64::max);
        Ok(Self { steps: reference.len(), same_top1, worst_nmse })
    }

    pub fn within(&self, b: &Bounds) -> bool {
        self.same_top1 as f64 >= b.min_top1 * self.steps as f64 && self.worst_nmse <= b.max_nmse
    }

    pub fn describe(&self, b: &Bounds) -> String {
        format!(
            "top-1 identical at {}/{} steps, logits NMSE max {:.2e} (bounds: top-1 >= {:.0}%, NMSE <= {:.0e})",
            self.same_top1, self.steps, self.worst_nmse, b.min_top1 * 100.0, b.max_nmse
        )
    }
}

pub fn write(path: &Path, steps: &[Vec<f32>], vocab: usize) -> Result<(), String> {
    let mut bytes = Vec::new();
    bytes.extend((steps.len() as u32).to_le_bytes());
    bytes.extend((vocab as u32).to_le_bytes());
    steps.iter().flatten().for_each(|x| bytes.extend(x.to_le_bytes()));
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn read(path: &Path) -> Result<Vec<Vec<f32>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let word = |i: usize| bytes.get(4 * i..4 * i + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize);
    let (Some(steps), Some(vocab)) = (word(0), word(1)) else { return Err(format!("{}: shorter than its 8-byte header", path.display())) };
    if bytes.len() != 8 + 4 * steps * vocab {
        return Err(format!("{}: {} bytes, the header says {steps} steps of {vocab} logits", path.display(), bytes.len()));
    }
    let values: Vec<f32> = bytes[8..].chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect();
    Ok(values.chunks(vocab.max(1)).map(<[f32]>::to_vec).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_logits_read_back_and_compare_within_bounds() {
        let dir = std::env::temp_dir().join(format!("tp-logits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let reference = vec![vec![0.0, 2.0, 1.0], vec![3.0, 1.0, 0.5]];
        write(&dir.join("a.logits"), &reference, 3).unwrap();
        let back = read(&dir.join("a.logits")).unwrap();
        assert_eq!(back, reference);
        let f32_bounds = bounds(DType::F32).unwrap();
        assert!(Comparison::of(&reference, &back).unwrap().within(&f32_bounds));
        // one step's top-1 moved: outside f32's bounds and bf16's (1 of 2 steps is below 90%)
        let moved = vec![vec![0.0, 2.0, 1.0], vec![1.0, 3.0, 0.5]];
        let c = Comparison::of(&reference, &moved).unwrap();
        assert_eq!(c.same_top1, 1);
        assert!(!c.within(&f32_bounds) && !c.within(&bounds(DType::BF16).unwrap()), "{}", c.describe(&f32_bounds));
        std::fs::write(dir.join("short.logits"), [1u8, 0, 0, 0, 3, 0, 0, 0, 0]).unwrap();
        let err = read(&dir.join("short.logits")).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("9 bytes, the header says 1 steps of 3 logits"), "{err}");
        assert!(Comparison::of(&reference, &moved[..1]).is_err());
    }
}
