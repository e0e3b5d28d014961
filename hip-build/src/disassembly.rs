//! Counting instructions per kernel in the disassembly of an AMDGPU image
//! (`llvm-objdump -d`), e.g. the native dot-product, MFMA or WMMA
//! instructions a kernel uses.
//!
//! `llvm-objdump -d` prints each function as a line `ADDRESS <NAME>:`
//! followed by one line per instruction, mnemonic first (after blanks); the
//! processor is taken from the image's ELF flags, so no `--mcpu` is needed.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::HipBuildError;

/// Per function: how many instructions of each counted mnemonic it holds.
pub type InstructionCounts = BTreeMap<String, BTreeMap<String, u32>>;

/// An `llvm-objdump` command: a program and the arguments that come before
/// ours (e.g. a wrapper that runs it inside a ROCm root: `in-root llvm-objdump-22`).
#[derive(Debug, Clone)]
pub struct Objdump {
    program: PathBuf,
    leading_args: Vec<OsString>,
}

impl Objdump {
    /// A command line, program first.
    pub fn from_command(words: &[String]) -> Option<Self> {
        let (program, rest) = words.split_first()?;
        Some(Objdump { program: program.into(), leading_args: rest.iter().map(OsString::from).collect() })
    }

    /// `llvm-objdump` (also `-22` … `-15`) beside hipcc's LLVM
    /// (`$ROCM_PATH/llvm/bin`, `/opt/rocm/llvm/bin`) or on PATH.
    pub fn locate() -> Result<Self, HipBuildError> {
        let names: Vec<String> = std::iter::once("llvm-objdump".to_string()).chain((15..=22).rev().map(|v| format!("llvm-objdump-{v}"))).collect();
        let mut dirs: Vec<PathBuf> = ["ROCM_PATH", "HIP_PATH"].iter().filter_map(std::env::var_os).map(|root| Path::new(&root).join("llvm/bin")).collect();
        dirs.push(PathBuf::from("/opt/rocm/llvm/bin"));
        dirs.extend(std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default());
        dirs.iter()
            .flat_map(|d| names.iter().map(move |n| d.join(n)))
            .find(|p| p.is_file())
            .map(|program| Objdump { program, leading_args: vec![] })
            .ok_or_else(|| HipBuildError::ToolNotFound { tool: "llvm-objdump".into(), hint: "install LLVM with the AMDGPU target or set ROCM_PATH".into() })
    }

    /// The disassembly of an image (written to a temporary file under the
    /// system's temporary directory, which a chroot wrapper must see).
    pub fn disassemble(&self, path: &Path, image: &[u8]) -> Result<String, HipBuildError> {
        let mut file = tempfile::Builder::new().suffix(".elf").tempfile().map_err(HipBuildError::io("creating a temporary file"))?;
        std::io::Write::write_all(&mut file, image).map_err(HipBuildError::io("writing a temporary file"))?;
        let out = Command::new(&self.program)
            .args(&self.leading_args)
            .arg("-d")
            .arg(file.path())
            .output()
            .map_err(HipBuildError::io(format!("running {}", self.program.display())))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(HipBuildError::CodeObject { path: path.to_path_buf(), what: format!("{} -d failed: {}", self.program.display(), stderr.trim()) });
        }
        String::from_utf8(out.stdout).map_err(|_| HipBuildError::CodeObject { path: path.to_path_buf(), what: "the disassembly is not UTF-8".into() })
    }
}

/// Per function of a disassembly, the instructions whose mnemonic starts
/// with one of `prefixes` (e.g. `v_dot4`), counted by mnemonic. Functions
/// without any are absent.
pub fn count_instructions(disassembly: &str, prefixes: &[&str]) -> InstructionCounts {
    let mut counts = InstructionCounts::new();
    let mut function: Option<&str> = None;
    for line in disassembly.lines() {
        if let Some(name) = function_label(line) {
            function = Some(name);
            continue;
        }
        let Some(current) = function else { continue };
        let Some(mnemonic) = line.split_whitespace().next() else { continue };
        if line.starts_with(char::is_whitespace) && prefixes.iter().any(|p| mnemonic.starts_with(p)) {
            *counts.entry(current.to_string()).or_default().entry(without_encoding(mnemonic).to_string()).or_default() += 1;
        }
    }
    counts
}

/// The mnemonic without the encoding suffix the disassembler appends
/// (`v_dot4c_i32_i8_e32` -> `v_dot4c_i32_i8`).
fn without_encoding(mnemonic: &str) -> &str {
    ENCODING_SUFFIXES.iter().find_map(|s| mnemonic.strip_suffix(s)).unwrap_or(mnemonic)
}

/// Longest first: `_e64_dpp` before `_dpp`.
const ENCODING_SUFFIXES: &[&str] = &["_e64_dpp", "_e32", "_e64", "_sdwa", "_dpp"];

/// `NAME` of a line `0000000000001900 <NAME>:`.
fn function_label(line: &str) -> Option<&str> {
    let (address, rest) = line.split_once(' ')?;
    if address.is_empty() || !address.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    rest.strip_prefix('<')?.strip_suffix(">:")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISASSEMBLY: &str = "
/tmp/x.elf:\tfile format elf64-amdgpu

Disassembly of section .text:

0000000000001900 <mul_mat_vec_q4_0>:
\ts_load_dwordx2 s[0:1], s[4:5], 0x0                         // 000000001900: C0060002 00000000
\tv_dot4_i32_i8 v1, v2, v3, v1                               // 000000001908: D3A80001 04060702
\tv_dot4c_i32_i8_e32 v4, v2, v3                               // 000000001910: D3A80004 04120702
\ts_endpgm                                                   // 000000001918: BF810000

0000000000001a00 <affine_f32>:
\tv_add_f32_e32 v0, v1, v0                                   // 000000001a00: 02000101
\ts_endpgm

0000000000001b00 <moe>:
\tv_dot4_i32_iu8 v1, v2, v3, v1 neg_lo:[1,1,0]
\tv_mfma_f32_16x16x16_f16 a[0:3], v[0:1], v[2:3], a[0:3]
";

    #[test]
    fn counts_per_function_and_mnemonic() {
        let counts = count_instructions(DISASSEMBLY, &["v_dot4", "v_mfma"]);
        let flat: Vec<(&str, &str, u32)> = counts.iter().flat_map(|(f, m)| m.iter().map(move |(k, n)| (f.as_str(), k.as_str(), *n))).collect();
        assert_eq!(flat, [("moe", "v_dot4_i32_iu8", 1), ("moe", "v_mfma_f32_16x16x16_f16", 1), ("mul_mat_vec_q4_0", "v_dot4_i32_i8", 1), ("mul_mat_vec_q4_0", "v_dot4c_i32_i8", 1)]);
    }

    #[test]
    fn labels() {
        assert_eq!(function_label("0000000000001900 <k>:"), Some("k"));
        assert_eq!(function_label("Disassembly of section .text:"), None);
        assert_eq!(function_label("\tv_dot4_i32_i8 v1, v2, v3, v1"), None);
    }
}
