//! The docs' fenced code blocks, and where their commands run.
//!
//! A command block (language `sh`) carries a mark after its language, the
//! place its commands are run ([`MARKS`]): ```` ```sh ci ````, ```` ```sh matrix ````
//! ```` ```sh gpu-machine ```` (built here for the GPU machine and run there) or
//! ```` ```sh amd-gpu ```` (a user's machine with an AMD GPU: never run here). The test below holds the docs to it: each command
//! of a `ci` block is one that CI's scripts run (or the quick start, which
//! `cargo xtask quick-start` follows), each of a `matrix` block one of the long
//! scripts', and each script a `gpu-machine` block names exists. A block that
//! only shows a command's shape (`[--flag]`) is `text`.

/// One fenced block of a Markdown file.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The line of its opening fence (1-based).
    pub line: usize,
    /// The first word of the info string (`toml`, `rust`, `sh`, ...).
    pub lang: String,
    /// The other words of the info string.
    pub marks: Vec<String>,
    /// The lines between the fences.
    pub text: String,
    /// The heading the block is under (without its `#`s).
    pub section: String,
}

/// Every fenced block of `text`, in order.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        match open.as_mut() {
            Some(block) => {
                if line.trim_start().starts_with("```") {
                    out.push(open.take().expect("an open block"));
                } else {
                    block.text.push_str(line);
                    block.text.push('\n');
                }
            }
            None => {
                if let Some(info) = line.trim_start().strip_prefix("```") {
                    let mut words = info.split_whitespace().map(str::to_string);
                    let lang = words.next().unwrap_or_default();
                    open = Some(Block { line: n + 1, lang, marks: words.collect(), text: String::new(), section: section.clone() });
                } else if line.starts_with('#') {
                    section = line.trim_start_matches('#').trim().to_string();
                }
            }
        }
    }
    out
}

/// The lines (1-based) that open an indented code block: four spaces after a blank
/// line, outside fenced blocks and lists. The docs fence every block, so that a
/// command block carries its mark.
#[cfg(test)]
pub fn indented_blocks(text: &str) -> Vec<usize> {
    let (mut out, mut fenced, mut previous_blank, mut in_list) = (Vec::new(), false, true, false);
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            let trimmed = line.trim_start();
            if trimmed.starts_with("- ") || trimmed.starts_with("* ") || trimmed.split_once(". ").is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_digit())) {
                in_list = true;
            } else if !line.trim().is_empty() && !line.starts_with(' ') {
                in_list = false;
            }
            if previous_blank && line.starts_with("    ") && !line.trim().is_empty() && !in_list {
                out.push(n + 1);
            }
        }
        previous_blank = line.trim().is_empty();
    }
    out
}

/// The commands of a shell text: its lines (a trailing `\` joins the next), without
/// comments, split at `&&`, `||` and `;`, each as its words without the leading
/// `VAR=value` assignments.
pub fn commands(text: &str) -> Vec<Vec<String>> {
    let joined = text.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let line = line.split(" #").next().unwrap_or(line);
        if line.trim_start().starts_with('#') {
            continue;
        }
        for part in line.split("&&").flat_map(|p| p.split("||")).flat_map(|p| p.split(';')) {
            let words: Vec<String> = part.split_whitespace().skip_while(|w| is_assignment(w)).map(str::to_string).collect();
            if !words.is_empty() {
                out.push(words);
            }
        }
    }
    out
}

/// `NAME=value`, as a shell reads an assignment before a command.
pub fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit()))
}

/// The languages of command blocks.
pub const COMMAND_LANGS: &[&str] = &["sh", "bash", "shell", "console"];

/// The README section `cargo xtask quick-start` follows.
pub const QUICK_START_SECTION: &str = "Quick start";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::workspace_root;

    /// The marks a command block may carry: where its commands run, and the scripts
    /// that run them (a command of the block must begin one of theirs, word for word).
    const MARKS: &[(&str, &[&str])] = &[
        ("ci", &[".ci/run", "tools/test.sh"]),
        ("matrix", &[".ci/run", "tools/test.sh", "tools/rocm-matrix.sh", "tools/mistralrs-port-check.sh"]),
        ("gpu-machine", &[]),
        ("amd-gpu", &[]),
    ];

    /// What is wrong with a command block of `rel`, if anything; `scripts(mark)` gives the
    /// commands the mark's scripts run.
    fn check(rel: &str, block: &Block, scripts: &dyn Fn(&str) -> Vec<Vec<String>>, root: &std::path::Path) -> Vec<String> {
        let at = format!("{rel}:{}", block.line);
        let [mark] = block.marks.as_slice() else {
            return vec![format!("{at}: a command block needs one mark after `{}`: {}", block.lang, MARKS.iter().map(|(m, _)| *m).collect::<Vec<_>>().join(", "))];
        };
        let Some((_, _)) = MARKS.iter().find(|(m, _)| m == mark) else {
            return vec![format!("{at}: unknown mark `{mark}`")];
        };
        let mut wrong = Vec::new();
        if mark == "gpu-machine" || mark == "amd-gpu" {
            for script in block.text.split_whitespace().filter(|w| w.ends_with(".sh")) {
                if !root.join(script).is_file() {
                    wrong.push(format!("{at}: {script} does not exist"));
                }
            }
            return wrong;
        }
        let run = scripts(mark);
        let own_scripts = MARKS.iter().find(|(m, _)| m == mark).map(|(_, s)| *s).unwrap_or_default();
        for command in commands(&block.text) {
            // the command is one of the mark's scripts, or begins a command they run
            let script = command.iter().find(|w| *w != "bash").map(String::as_str).unwrap_or_default();
            if !own_scripts.contains(&script) && !run.iter().any(|c| c.len() >= command.len() && c[..command.len()] == command[..]) {
                wrong.push(format!("{at}: `{}` (a `{mark}` block) is not run by {}", command.join(" "), MARKS.iter().find(|(m, _)| m == mark).map(|(_, s)| s.join(", ")).unwrap_or_default()));
            }
        }
        wrong
    }

    #[test]
    fn every_command_block_says_where_it_runs_and_runs_there() {
        let root = workspace_root();
        let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let readme = read("README.md");
        let test_sh = read("tools/test.sh");
        // the quick start's commands run where tools/test.sh follows it
        let quick_start: Vec<Vec<String>> = if commands(&test_sh).iter().any(|c| c.starts_with(&["cargo".into(), "xtask".into(), "quick-start".into()])) {
            blocks(&readme).iter().filter(|b| b.section.starts_with(QUICK_START_SECTION) && COMMAND_LANGS.contains(&b.lang.as_str())).flat_map(|b| commands(&b.text)).collect()
        } else {
            Vec::new()
        };
        let scripts = |mark: &str| -> Vec<Vec<String>> {
            let mut run: Vec<Vec<String>> = MARKS.iter().find(|(m, _)| *m == mark).map(|(_, s)| *s).unwrap_or_default().iter().flat_map(|s| commands(&read(s))).collect();
            run.extend(quick_start.iter().cloned());
            run
        };
        let mut files = vec!["README.md".to_string()];
        let mut pages: Vec<String> = std::fs::read_dir(root.join("docs")).unwrap().map(|e| format!("docs/{}", e.unwrap().file_name().to_string_lossy())).filter(|p| p.ends_with(".md")).collect();
        pages.sort();
        files.extend(pages);
        let (mut wrong, mut seen) = (Vec::new(), 0);
        for rel in &files {
            wrong.extend(indented_blocks(&read(rel)).into_iter().map(|n| format!("{rel}:{n}: an indented code block: fence it (```sh MARK for commands, ```text otherwise)")));
            for block in blocks(&read(rel)).iter().filter(|b| COMMAND_LANGS.contains(&b.lang.as_str())) {
                seen += 1;
                wrong.extend(check(rel, block, &scripts, &root));
            }
        }
        assert!(wrong.is_empty(), "command blocks of the docs:\n{}", wrong.join("\n"));
        assert!(seen >= 5, "only {seen} command blocks found: the scan is broken");
    }

    #[test]
    fn blocks_and_commands_are_read_as_a_shell_would() {
        let md = "# A\n\n```sh ci\nX=1 cargo xtask regen && bash tools/test.sh # the tests\n```\n## B\n```toml\n[x]\n```\n";
        let found = blocks(md);
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].line, found[0].lang.as_str(), found[0].marks.as_slice(), found[0].section.as_str()), (3, "sh", &["ci".to_string()][..], "A"));
        assert_eq!(found[1].section, "B");
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(commands(&found[0].text), [words("cargo xtask regen"), words("bash tools/test.sh")]);
        assert_eq!(commands("a \\\n  --b; c || d\n# e\n"), [words("a --b"), words("c"), words("d")]);
        assert_eq!(indented_blocks("a\n\n    cmd\n\n- item\n\n    more of the item\n```\n\n    fenced\n```\n"), [3]);
        assert!(is_assignment("SKIP_BINDGEN=1") && !is_assignment("--arch=x") && !is_assignment("1A=2"));
    }

    #[test]
    fn a_command_ci_does_not_run_is_found() {
        let root = workspace_root();
        let scripts = |_: &str| vec![vec!["cargo".to_string(), "xtask".into(), "regen".into(), "--check".into()]];
        let block = |text: &str, marks: &[&str]| Block { line: 7, lang: "sh".into(), marks: marks.iter().map(|m| m.to_string()).collect(), text: text.into(), section: String::new() };
        assert!(check("x.md", &block("cargo xtask regen\n", &["ci"]), &scripts, &root).is_empty());
        assert_eq!(check("x.md", &block("cargo xtask regen --out x\n", &["ci"]), &scripts, &root), ["x.md:7: `cargo xtask regen --out x` (a `ci` block) is not run by .ci/run, tools/test.sh"]);
        assert!(check("x.md", &block("cargo xtask regen\n", &[]), &scripts, &root)[0].contains("needs one mark"));
        assert!(check("x.md", &block("bash no/such.sh\n", &["gpu-machine"]), &scripts, &root)[0].contains("no/such.sh does not exist"));
    }
}
