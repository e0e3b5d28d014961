//! The docs' `cargo xtask` commands exist: every `cargo xtask SUB [SUB2] --flag ...` that
//! README.md, BENCHMARKS.md or docs/*.md mention names a subcommand of this binary (and of
//! `bench`), and each `--flag` after it is one of that subcommand's arguments.

use clap::CommandFactory;

use crate::workspace::workspace_root;
use crate::Cli;

/// `(file:line, the words after "cargo xtask")` of every mention, up to the end of the
/// command (a backtick, a shell separator, a closing parenthesis, a `#` comment or the line).
fn mentions(rel: &str, text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("cargo xtask ") {
            let after = &rest[at + "cargo xtask ".len()..];
            let end = after.find(['`', '|', ';', ')', '#', '&', '\'', '"']).unwrap_or(after.len());
            let words = after[..end].split_whitespace().map(|w| w.trim_matches(['[', ']', ',', '.', ':']).to_string()).filter(|w| !w.is_empty()).collect();
            out.push((format!("{rel}:{}", n + 1), words));
            rest = &after[end..];
        }
    }
    out
}

/// What is wrong with one mention, if anything.
fn check(words: &[String]) -> Option<String> {
    let cli = Cli::command();
    let first = words.first()?;
    let Some(found) = cli.find_subcommand(first) else { return Some(format!("no subcommand `{first}`")) };
    let mut cmd = found.clone();
    if cmd.has_subcommands() {
        let second = words.get(1)?;
        cmd = match cmd.find_subcommand(second) {
            Some(c) => c.clone(),
            None => return Some(format!("no subcommand `{first} {second}`")),
        };
    }
    for flag in words.iter().filter_map(|w| w.strip_prefix("--")) {
        let name = flag.split('=').next().unwrap_or(flag);
        if name != "help" && !cmd.get_arguments().any(|a| a.get_long() == Some(name)) {
            return Some(format!("`{}` has no flag --{name}", cmd.get_name()));
        }
    }
    None
}

#[test]
fn every_documented_command_and_flag_exists() {
    let root = workspace_root();
    let mut files = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    let mut pages: Vec<_> = std::fs::read_dir(root.join("docs")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "md")).collect();
    pages.sort();
    files.extend(pages);
    let mut wrong = Vec::new();
    let mut seen = 0;
    for file in files {
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        for (at, words) in mentions(&rel, &std::fs::read_to_string(&file).unwrap()) {
            seen += 1;
            if let Some(problem) = check(&words) {
                wrong.push(format!("{at}: {problem}"));
            }
        }
    }
    assert!(wrong.is_empty(), "commands the docs name that cargo xtask does not have:\n{}", wrong.join("\n"));
    assert!(seen > 30, "only {seen} mentions of cargo xtask found: the scan is broken");
}

#[test]
fn wrong_commands_and_flags_are_found() {
    let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(check(&words("corpus --sample --compile")), None);
    assert_eq!(check(&words("bench report --check")), None);
    assert!(check(&words("corpus --no-such-flag")).is_some_and(|e| e.contains("--no-such-flag")));
    assert!(check(&words("bench no-such-bench")).is_some());
    assert!(check(&words("no-such-command")).is_some_and(|e| e.contains("no subcommand")));
    let found = mentions("x.md", "run `cargo xtask regen --check` and [--candle-src DIR] then `cargo xtask corpus --only vllm`\n");
    assert_eq!(found[0].1, words("regen --check"));
    assert_eq!(found[1].1, words("corpus --only vllm"));
}
