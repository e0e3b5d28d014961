//! Where an `#include` leads, the way nvcc finds it: a quoted name from the including
//! file's directory first, then each include directory in order; an angled name from the
//! include directories only. Paths are relative to the translated tree's root, with `/`.
//!
//! [`own_headers`] uses it to take a crate's own headers (any extension, anywhere in the
//! crate) into the translation: exactly those its kernels reach. Rule `includes` uses it
//! to tell the crate's headers from CUDA's.

use std::collections::{BTreeMap, BTreeSet};

use crate::lexer::{self, line_views, LineView, TokenKind};
use crate::TreeFile;

/// File names a header may have: what nvcc would include is any name, but a crate's
/// headers are these (`.cuinc`/`.inl` are included bodies of templates).
pub const HEADER_EXTENSIONS: &[&str] = &["cuh", "h", "hpp", "hh", "hxx", "inl", "inc", "cuinc"];

/// Whether `path` names a kernel unit (`.cu`).
pub fn is_kernel_unit(path: &str) -> bool {
    path.ends_with(".cu")
}

/// Whether `path` may be a header (its extension is one of [`HEADER_EXTENSIONS`]).
pub fn is_header(path: &str) -> bool {
    path.rsplit_once('.').is_some_and(|(_, ext)| HEADER_EXTENSIONS.contains(&ext))
}

/// The name an include line gives and whether it was quoted (`"x"`) or angled (`<x>`).
pub fn include_target(line: &LineView) -> Option<(String, bool)> {
    let body: Vec<_> = line.directive_body().iter().filter(|t| !t.is_trivia()).collect();
    let first = body.first()?;
    if first.kind == TokenKind::Str {
        return Some((first.text.trim_matches('"').to_string(), true));
    }
    if first.is_punct("<") {
        let end = body.iter().position(|t| t.is_punct(">"))?;
        let text: String = body[1..end].iter().map(|t| t.text.as_str()).collect();
        return Some((text.trim().to_string(), false));
    }
    None
}

/// The candidate paths of `target` included from `from`, in search order.
pub fn candidates(from: &str, target: &str, quoted: bool, include_dirs: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if quoted {
        out.push(join(parent(from), target));
    }
    for dir in include_dirs {
        out.push(join(dir, target));
    }
    out
}

/// The first of [`candidates`] that `exists`.
pub fn resolve(from: &str, target: &str, quoted: bool, include_dirs: &[String], exists: impl Fn(&str) -> bool) -> Option<String> {
    candidates(from, target, quoted, include_dirs).into_iter().find(|p| exists(p))
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `dir` + `target`, with `.` and `..` resolved (`moe/` + `../b.cuh` is `b.cuh`).
/// A path climbing above the root keeps its `..` (it names no file of the tree).
pub fn join(dir: &str, target: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in target.split('/') {
        match part {
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            "." | "" => {}
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// The kernel units of `files` and the headers they reach through `#include` lines
/// (transitively, in every preprocessor branch), resolved as [`resolve`] does. Other
/// files (headers no kernel includes: a Metal or C++ header of the crate) are left
/// out. Sorted by path.
pub fn own_headers(files: &[TreeFile], include_dirs: &[String]) -> Vec<TreeFile> {
    let by_path: BTreeMap<&str, &TreeFile> = files.iter().map(|f| (f.rel_path.as_str(), f)).collect();
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    let mut queue: Vec<&str> = files.iter().map(|f| f.rel_path.as_str()).filter(|p| is_kernel_unit(p)).collect();
    while let Some(path) = queue.pop() {
        if !taken.insert(path) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(&by_path[path].contents) else { continue };
        let lexed = lexer::lex(text);
        for line in line_views(&lexed.tokens) {
            if line.directive() != Some("include") {
                continue;
            }
            let Some((target, quoted)) = include_target(&line) else { continue };
            let found = resolve(path, &target, quoted, include_dirs, |p| by_path.contains_key(p));
            if let Some((key, _)) = found.and_then(|f| by_path.get_key_value(f.as_str())) {
                queue.push(key);
            }
        }
    }
    taken.into_iter().map(|p| by_path[p].clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> TreeFile {
        TreeFile { rel_path: path.into(), contents: text.as_bytes().to_vec() }
    }

    #[test]
    fn joins_relative_paths() {
        assert_eq!(join("moe", "../b.cuh"), "b.cuh");
        assert_eq!(join("moe", "b.cuh"), "moe/b.cuh");
        assert_eq!(join("", "./a/../c.h"), "c.h");
        assert_eq!(join("", "../outside.h"), "../outside.h");
    }

    #[test]
    fn quoted_names_look_beside_the_includer_first_then_the_include_dirs() {
        let dirs = vec!["include".to_string()];
        let exists = |p: &str| ["k/a.h", "include/a.h", "include/b.h"].contains(&p);
        assert_eq!(resolve("k/x.cu", "a.h", true, &dirs, exists).as_deref(), Some("k/a.h"));
        assert_eq!(resolve("k/x.cu", "b.h", true, &dirs, exists).as_deref(), Some("include/b.h"));
        // an angled name is never looked up beside the includer
        assert_eq!(resolve("k/x.cu", "a.h", false, &dirs, exists).as_deref(), Some("include/a.h"));
        assert_eq!(resolve("k/x.cu", "cuda_fp16.h", true, &dirs, exists), None);
    }

    #[test]
    fn takes_every_header_a_kernel_reaches_of_any_extension_and_nothing_else() {
        let files = [
            file("kernels/rotary/rotary.cu", "#include \"cuda_compat.h\"\n#include <cuda_fp16.h>\n"),
            file("kernels/rotary/cuda_compat.h", "#ifdef USE_ROCM\n#include \"../shared/amd.inl\"\n#endif\n"),
            file("kernels/shared/amd.inl", "// body\n"),
            file("kernels/shared/unused.hpp", "#include <metal_stdlib>\n"),
            file("src/metal/kernels.h", "#include <metal_stdlib>\n"),
        ];
        let taken: Vec<String> = own_headers(&files, &[]).into_iter().map(|f| f.rel_path).collect();
        assert_eq!(taken, ["kernels/rotary/cuda_compat.h", "kernels/rotary/rotary.cu", "kernels/shared/amd.inl"]);
    }

    #[test]
    fn include_dirs_reach_headers_named_from_elsewhere() {
        let files = [file("src/a.cu", "#include <common/math.cuh>\n"), file("include/common/math.cuh", "\n")];
        let taken: Vec<String> = own_headers(&files, &["include".to_string()]).into_iter().map(|f| f.rel_path).collect();
        assert_eq!(taken, ["include/common/math.cuh", "src/a.cu"]);
    }
}
