//! The id file: rank 0 makes both communicators' unique ids and writes them, as two lines
//! `layer HEX` and `nccl HEX` (128 bytes each as 256 hex digits), to FILE.tmp, then renames
//! it to FILE; the other ranks wait for FILE (up to a deadline) and parse it. Nothing here
//! touches a GPU, so a missing, corrupt or truncated file is said before anything else.

use std::path::Path;
use std::time::{Duration, Instant};

pub const ID_BYTES: usize = 128;
/// The two ids, in the order of the file's lines.
pub const NAMES: [&str; 2] = ["layer", "nccl"];

/// The file's text for the two ids' bytes (`layer`, then `nccl`).
pub fn format(ids: [&[u8; ID_BYTES]; 2]) -> String {
    NAMES.iter().zip(ids).map(|(name, id)| format!("{name} {}\n", id.iter().map(|b| format!("{b:02x}")).collect::<String>())).collect()
}

/// Writes `text` to `path` through `path`.tmp and a rename: a reader sees all of it or nothing.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, path)).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The two ids' bytes from the file's text; the error says what is wrong with it.
pub fn parse(path: &Path, text: &str) -> Result<[[u8; ID_BYTES]; 2], String> {
    let bad = |why: String| {
        format!(
            "{}: not a communicator id file: {why} (rank 0 writes two lines, `layer HEX` and `nccl HEX`, each id {ID_BYTES} bytes as {} hex digits)",
            path.display(),
            2 * ID_BYTES
        )
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() != NAMES.len() {
        return Err(bad(format!("{} lines", lines.len())));
    }
    let mut ids = [[0u8; ID_BYTES]; 2];
    for ((line, name), id) in lines.iter().zip(NAMES).zip(ids.iter_mut()) {
        let hex = line.trim().strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')).ok_or_else(|| bad(format!("a line does not start with `{name} `")))?;
        if hex.len() != 2 * ID_BYTES {
            return Err(bad(format!("the `{name}` id has {} characters", hex.len())));
        }
        for (i, byte) in id.iter_mut().enumerate() {
            *byte = hex.get(2 * i..2 * i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or_else(|| bad(format!("the `{name}` id is not hex at character {}", 2 * i)))?;
        }
    }
    Ok(ids)
}

/// Waits for rank 0's file until `deadline`, then parses it.
pub fn wait_and_read(path: &Path, rank: usize, timeout: Duration, deadline: Instant) -> Result<[[u8; ID_BYTES]; 2], String> {
    loop {
        match std::fs::read_to_string(path) {
            Ok(text) => return parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                return Err(format!(
                    "rank {rank}: no communicator ids from rank 0 in {} within {} s: {e} (did rank 0 start?)",
                    path.display(),
                    timeout.as_secs()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_ids_read_back_as_written() {
        let (a, b) = ([7u8; ID_BYTES], std::array::from_fn::<u8, ID_BYTES, _>(|i| i as u8));
        let text = format([&a, &b]);
        assert_eq!(parse(Path::new("f"), &text).unwrap(), [a, b]);
    }

    #[test]
    fn a_corrupt_or_truncated_file_is_named() {
        let good = format([&[1; ID_BYTES], &[2; ID_BYTES]]);
        let one_line = good.lines().next().unwrap();
        assert!(parse(Path::new("f"), one_line).unwrap_err().contains("1 lines"));
        let short = good.replacen("nccl 02", "nccl ", 1);
        assert!(parse(Path::new("f"), &short).unwrap_err().contains("`nccl` id has 254 characters"));
        let not_hex = good.replacen("layer 01", "layer zz", 1);
        assert!(parse(Path::new("f"), &not_hex).unwrap_err().contains("`layer` id is not hex at character 0"));
        let swapped: String = good.lines().rev().map(|l| format!("{l}\n")).collect();
        assert!(parse(Path::new("f"), &swapped).unwrap_err().contains("does not start with `layer `"));
    }
}
