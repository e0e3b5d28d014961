//! Code objects, modules and kernel functions (cudarc's `Ptx`, `CudaModule`,
//! `CudaFunction`).
use super::context::HipContext;
use super::result::{check, HipError};
use super::sys::{self, hip};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// A compiled AMDGPU code object (ELF) or offload bundle, as accepted by
/// `hipModuleLoadData`. This takes the place of cudarc's `Ptx`.
///
/// A `&str`/`String` is taken as the raw image bytes (HIP cannot load source text;
/// anything that is not an image is rejected by the runtime when loading).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObject(std::borrow::Cow<'static, [u8]>);

impl CodeObject {
    /// Reads an image from a file (e.g. a `.hsaco` or `.co`).
    pub fn from_file(path: impl AsRef<std::path::Path>) -> std::io::Result<Self> {
        Ok(Self(std::fs::read(path)?.into()))
    }
    pub fn as_bytes(&self) -> &[u8] { &self.0 }
}

impl From<&'static [u8]> for CodeObject {
    fn from(bytes: &'static [u8]) -> Self { Self(bytes.into()) }
}
impl From<Vec<u8>> for CodeObject {
    fn from(bytes: Vec<u8>) -> Self { Self(bytes.into()) }
}
impl From<&str> for CodeObject {
    fn from(s: &str) -> Self { Self(s.as_bytes().to_vec().into()) }
}
impl From<String> for CodeObject {
    fn from(s: String) -> Self { Self(s.into_bytes().into()) }
}

/// Bytes of zero padding after the copied image: `hipModuleLoadData` takes no
/// length, so a short non-image input must not make the runtime read past the end
/// while it checks the magic numbers (ELF: 4 bytes, offload bundle: 24 bytes).
const IMAGE_PADDING: usize = 64;

/// A loaded module, unloaded on drop. Keeps an 8-byte aligned copy of the image
/// alive for as long as the module.
#[derive(Debug)]
pub struct HipModule {
    pub(crate) module: sys::CUmodule,
    pub(crate) ctx: Arc<HipContext>,
    pub(crate) _image: Box<[u64]>,
    /// The functions looked up so far, by name: Candle looks its kernel up before every
    /// launch, and a function handle stays valid as long as its module.
    pub(crate) functions: RwLock<HashMap<Box<str>, FunctionHandle>>,
}

/// A kernel function handle (a pointer into the module), kept in the module's cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FunctionHandle(pub(crate) sys::CUfunction);
unsafe impl Send for FunctionHandle {}
unsafe impl Sync for FunctionHandle {}
unsafe impl Send for HipModule {}
unsafe impl Sync for HipModule {}

impl Drop for HipModule {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        self.ctx.record_err(check(unsafe { hip::hipModuleUnload(self.module) }));
    }
}

/// Copies `bytes` into a zero-padded, 8-byte aligned buffer.
pub(crate) fn aligned_image(bytes: &[u8]) -> Box<[u64]> {
    let mut words = vec![0u64; (bytes.len() + IMAGE_PADDING).div_ceil(8)];
    for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *word = u64::from_ne_bytes(b);
    }
    words.into_boxed_slice()
}

impl HipContext {
    /// Loads a code object. An empty input is rejected with `hipErrorInvalidImage`
    /// without calling HIP; other invalid inputs get the runtime's error.
    pub fn load_module(self: &Arc<Self>, image: CodeObject) -> Result<Arc<HipModule>, HipError> {
        if image.0.is_empty() {
            return Err(HipError(hip::hipError_t_hipErrorInvalidImage));
        }
        self.bind_to_thread()?;
        let words = aligned_image(&image.0);
        let mut module = std::ptr::null_mut();
        check(unsafe { hip::hipModuleLoadData(&mut module, words.as_ptr() as *const _) })?;
        Ok(Arc::new(HipModule { module, ctx: self.clone(), _image: words, functions: Default::default() }))
    }

    /// Loads a module a user brought (candle's `get_or_load_custom_func`): `image` must
    /// be a code object (candle-rocm-build makes them), and every failure is a message
    /// naming the module and this device's arch: empty, PTX text (what the CUDA build
    /// tools give, which no AMD GPU runs), or an image the runtime refuses (most often
    /// one built for other arches).
    pub fn load_custom_module(self: &Arc<Self>, module_name: &str, image: &[u8]) -> Result<Arc<HipModule>, String> {
        let arch = || unsafe { super::result::device::gcn_arch_name(self.device) }.unwrap_or_else(|e| format!("an arch HIP does not name ({e})"));
        if let Some(problem) = custom_image_problem(image) {
            return Err(format!("custom module {module_name}: {problem}; this device is {}", arch()));
        }
        self.load_module(image.to_vec().into()).map_err(|e| {
            format!(
                "custom module {module_name}: the runtime refused its code object ({e}): is it built for this device, {}? \
                 (candle-rocm-build compiles for CANDLE_ROCM_ARCHS, else the GPUs it finds)",
                arch()
            )
        })
    }
}

/// Why `image` cannot be a code object, if it plainly cannot: empty, or PTX text.
pub fn custom_image_problem(image: &[u8]) -> Option<&'static str> {
    if image.is_empty() {
        return Some("the image is empty");
    }
    let head = &image[..image.len().min(4096)];
    let text = std::str::from_utf8(head).unwrap_or("");
    if !text.is_empty() && !head.contains(&0) && text.contains(".version") && text.contains(".target") {
        return Some("the image is PTX text, which AMD GPUs do not run: build the kernels with candle-rocm-build and pass its code object");
    }
    None
}

/// A kernel of a loaded module.
#[derive(Debug, Clone)]
pub struct HipFunction {
    pub(crate) function: sys::CUfunction,
    pub(crate) module: Arc<HipModule>,
}
unsafe impl Send for HipFunction {}
unsafe impl Sync for HipFunction {}

impl HipModule {
    /// Looks up a kernel by its (unmangled, `extern "C"`) name; a name containing a
    /// NUL byte is `hipErrorInvalidValue`, a missing one `hipErrorNotFound`. The
    /// runtime is asked once per name (the module handle names the device: no
    /// `hipSetDevice`, as cudarc's `load_function` binds nothing either).
    pub fn load_function(self: &Arc<Self>, fn_name: &str) -> Result<HipFunction, HipError> {
        if let Some(f) = self.functions.read().unwrap_or_else(|e| e.into_inner()).get(fn_name) {
            return Ok(HipFunction { function: f.0, module: self.clone() });
        }
        let name = std::ffi::CString::new(fn_name)
            .map_err(|_| HipError(hip::hipError_t_hipErrorInvalidValue))?;
        let mut function = std::ptr::null_mut();
        check(unsafe { hip::hipModuleGetFunction(&mut function, self.module, name.as_ptr()) })?;
        self.functions.write().unwrap_or_else(|e| e.into_inner()).insert(fn_name.into(), FunctionHandle(function));
        Ok(HipFunction { function, module: self.clone() })
    }
    pub fn context(&self) -> &Arc<HipContext> { &self.ctx }
}

impl HipFunction {
    pub fn cu_function(&self) -> sys::CUfunction { self.function }
    pub fn module(&self) -> &Arc<HipModule> { &self.module }
}

#[cfg(test)]
mod tests {
    use super::custom_image_problem;

    #[test]
    fn custom_images_that_cannot_be_code_objects_are_named() {
        assert_eq!(custom_image_problem(b""), Some("the image is empty"));
        let ptx = b"//\n// Generated by NVIDIA NVVM Compiler\n.version 8.5\n.target sm_80\n.address_size 64\n";
        assert!(custom_image_problem(ptx).is_some_and(|p| p.contains("PTX text")));
        // an ELF header (a code object) or an offload bundle goes to the runtime
        assert_eq!(custom_image_problem(b"\x7fELF\x02\x01\x01\x40"), None);
        assert_eq!(custom_image_problem(b"__CLANG_OFFLOAD_BUNDLE____\x02\x00"), None);
    }
}
