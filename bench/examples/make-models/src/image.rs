//! The input image of the convolutional examples: 224x224 RGB, a smooth deterministic
//! pattern (gradients and rings), written as PNG; and the tensor the `resnet` example makes
//! of it (candle_examples::imagenet::load_image224: /255, ImageNet mean and std; at 224x224
//! its resize is the identity).

use anyhow::Result;
use std::path::Path;

const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// Writes the image; returns it as the example's (3, 224, 224) input tensor.
pub fn write(path: &Path) -> Result<candle_core::Tensor> {
    let img = image::RgbImage::from_fn(224, 224, |x, y| {
        let (fx, fy) = (x as f32 / 223.0, y as f32 / 223.0);
        let r = ((fx - 0.5).powi(2) + (fy - 0.5).powi(2)).sqrt();
        image::Rgb([
            (255.0 * fx) as u8,
            (255.0 * fy) as u8,
            (127.5 + 127.5 * (r * 40.0).sin()) as u8,
        ])
    });
    img.save(path)?;
    let dev = candle_core::Device::Cpu;
    let data = candle_core::Tensor::from_vec(img.into_raw(), (224, 224, 3), &dev)?.permute((2, 0, 1))?;
    let mean = candle_core::Tensor::new(&MEAN, &dev)?.reshape((3, 1, 1))?;
    let std = candle_core::Tensor::new(&STD, &dev)?.reshape((3, 1, 1))?;
    Ok((data.to_dtype(candle_core::DType::F32)? / 255.)?.broadcast_sub(&mean)?.broadcast_div(&std)?)
}
