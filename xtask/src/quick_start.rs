//! `cargo xtask quick-start`: the README's quick start, followed as a new user
//! would, from the README's own blocks: `cargo new`, its `Cargo.toml` lines (the
//! checkout's path for `<this checkout>`), its `src/main.rs`, its command; then the
//! program's outcome: a matmul printed on a machine with an AMD GPU, or, without
//! one, the error the README says it stops with.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::doc_blocks::{blocks, commands, is_assignment, Block, COMMAND_LANGS, QUICK_START_SECTION};
use crate::workspace::{cargo_command, workspace_root};

#[derive(Args, Debug)]
pub struct QuickStartArgs {
    /// Where the new project is made (emptied first): outside this checkout, as a user's
    /// project is (default: candle-rocm-quick-start in the temporary directory).
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// The arches to build for, in place of the README's CANDLE_ROCM_ARCHS (what this machine's hipcc has).
    #[arg(long, value_name = "LIST")]
    arch: Option<String>,
    /// A cargo target directory to share with other builds (CARGO_TARGET_DIR).
    #[arg(long, value_name = "DIR")]
    target_dir: Option<PathBuf>,
}

/// The project's name, as `cargo new` gets it.
const PROJECT: &str = "my-app";
/// What the README's `<this checkout>` stands for.
const CHECKOUT_PLACEHOLDER: &str = "<this checkout>";
/// The end of the manifest `cargo new` writes, where the README's lines go.
const NEW_MANIFEST_TAIL: &str = "[dependencies]\n";

/// The quick start's blocks: the manifest lines, the program, the command, the error.
struct QuickStart {
    manifest: Block,
    program: Block,
    command: Block,
    no_device: Block,
}

fn quick_start(readme: &str) -> Result<QuickStart> {
    let ours: Vec<Block> = blocks(readme).into_iter().filter(|b| b.section.starts_with(QUICK_START_SECTION)).collect();
    let one = |what: &str, pick: &dyn Fn(&Block) -> bool| -> Result<Block> {
        let mut found = ours.iter().filter(|b| pick(b));
        match (found.next(), found.next()) {
            (Some(b), None) => Ok(b.clone()),
            (None, _) => bail!("README.md: the section \"{QUICK_START_SECTION}...\" has no {what} block"),
            (Some(_), Some(b)) => bail!("README.md:{}: a second {what} block in the quick start", b.line),
        }
    };
    Ok(QuickStart {
        manifest: one("```toml", &|b| b.lang == "toml")?,
        program: one("```rust", &|b| b.lang == "rust")?,
        command: one("command (```sh)", &|b| COMMAND_LANGS.contains(&b.lang.as_str()))?,
        no_device: one("```text (the error without a GPU)", &|b| b.lang == "text")?,
    })
}

pub fn run(args: QuickStartArgs) -> Result<ExitCode> {
    let root = workspace_root();
    let at = |p: &Path| if p.is_absolute() { p.to_path_buf() } else { root.join(p) };
    let readme = std::fs::read_to_string(root.join("README.md")).context("reading README.md")?;
    let steps = quick_start(&readme)?;
    let work = args.work.as_deref().map(at).unwrap_or_else(|| std::env::temp_dir().join("candle-rocm-quick-start"));
    if work.starts_with(&root) {
        bail!("--work {}: inside this checkout, where cargo would take the project for a member of its workspace", work.display());
    }
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("emptying {}", work.display()))?;
    }
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    println!("== cargo new {PROJECT}");
    let status = cargo_command().args(["new", "--vcs", "none", "--quiet", PROJECT]).current_dir(&work).status().context("running cargo new")?;
    if !status.success() {
        bail!("cargo new {PROJECT} failed in {}", work.display());
    }
    let project = work.join(PROJECT);
    let manifest_path = project.join("Cargo.toml");
    let manifest = std::fs::read_to_string(&manifest_path)?;
    let Some(head) = manifest.strip_suffix(NEW_MANIFEST_TAIL) else {
        bail!("{}: cargo new's manifest does not end with {NEW_MANIFEST_TAIL:?}; the README's lines have no place", manifest_path.display());
    };
    let lines = steps.manifest.text.replace(CHECKOUT_PLACEHOLDER, &root.display().to_string());
    println!("== Cargo.toml: the lines of README.md:{}", steps.manifest.line);
    std::fs::write(&manifest_path, format!("{head}{lines}"))?;
    println!("== src/main.rs: README.md:{}", steps.program.line);
    std::fs::write(project.join("src/main.rs"), &steps.program.text)?;

    let [command] = commands(&steps.command.text).try_into().map_err(|c: Vec<_>| anyhow::anyhow!("README.md:{}: the quick start's command block holds {} commands, not one", steps.command.line, c.len()))?;
    let env: Vec<(String, String)> = steps.command.text.split_whitespace().take_while(|w| is_assignment(w)).filter_map(|w| w.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let Some(("cargo", cargo_args)) = command.split_first().map(|(c, rest)| (c.as_str(), rest)) else {
        bail!("README.md:{}: the quick start's command is not a cargo command: {}", steps.command.line, command.join(" "));
    };
    let mut run = cargo_command();
    // as a user's shell has it: no backtrace asked for
    run.args(cargo_args).current_dir(&project).env_remove("RUST_BACKTRACE").env_remove("RUST_LIB_BACKTRACE");
    for (k, v) in &env {
        let v = match (k.as_str(), &args.arch) {
            ("CANDLE_ROCM_ARCHS", Some(arch)) => arch.clone(),
            _ => v.clone(),
        };
        println!("   {k}={v}");
        run.env(k, v);
    }
    if let Some(dir) = &args.target_dir {
        run.env("CARGO_TARGET_DIR", at(dir));
    }
    println!("== {} (README.md:{})", command.join(" "), steps.command.line);
    let out = run.output().context("running the quick start's command")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // cargo's own lines end with the one that starts the program
    let program_err = stderr.rsplit_once("Running `").map_or("", |(_, rest)| rest.split_once('\n').map_or("", |(_, after)| after));
    if out.status.success() {
        if !stdout.contains("Tensor[") {
            bail!("the quick start's program succeeded but printed no tensor:\n{stdout}");
        }
        println!("ran on a ROCm device; it printed:\n{stdout}");
        return Ok(ExitCode::SUCCESS);
    }
    if program_err.is_empty() {
        bail!("the quick start's command failed before its program ran ({}):\n{}", out.status, tail(&stderr, 40));
    }
    let expected: Vec<&str> = steps.no_device.text.lines().filter(|l| !l.trim().is_empty()).collect();
    if expected.iter().all(|l| program_err.lines().any(|got| got.trim() == l.trim())) {
        println!("no ROCm device here: the program stopped with the error README.md:{} shows:\n{}", steps.no_device.line, program_err.trim_end());
        return Ok(ExitCode::SUCCESS);
    }
    bail!("the quick start's program failed ({}) with:\n{}\nwhere README.md:{} says it stops with:\n{}", out.status, program_err.trim_end(), steps.no_device.line, steps.no_device.text.trim_end())
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_has_one_of_each_block() {
        let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
        let steps = quick_start(&readme).unwrap();
        assert!(steps.manifest.text.contains("[patch.crates-io]") && steps.manifest.text.contains(CHECKOUT_PLACEHOLDER));
        assert!(steps.program.text.contains("Device::new_rocm(0)"));
        assert_eq!(commands(&steps.command.text).len(), 1);
        assert!(!steps.no_device.text.trim().is_empty());
    }

    #[test]
    fn a_missing_or_doubled_block_is_named() {
        let md = "## Quick start\n```toml\n```\n```rust\n```\n```sh ci\ncargo run\n```\n";
        assert!(quick_start(md).err().unwrap().to_string().contains("no ```text"));
        let doubled = format!("{md}```text\nx\n```\n```rust\n```\n");
        assert!(quick_start(&doubled).err().unwrap().to_string().contains("README.md:12: a second ```rust block"));
    }
}
