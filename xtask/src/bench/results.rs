//! The result files of the benchmarks: tab-separated, `# key: value` lines
//! first (machine, tools, targets), then a header line and the rows. The GPU
//! scripts (bench/kernels, bench/backend) write the same shape.

use std::path::Path;

use anyhow::{bail, Context, Result};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// `# key: value` lines, in order.
    pub notes: Vec<(String, String)>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table { notes: vec![], header: header.iter().map(|s| s.to_string()).collect(), rows: vec![] }
    }

    pub fn note(&mut self, key: &str, value: impl Into<String>) {
        self.notes.push((key.to_string(), value.into()));
    }

    pub fn push(&mut self, row: Vec<String>) {
        assert_eq!(row.len(), self.header.len(), "a row of {} cells for {} columns", row.len(), self.header.len());
        self.rows.push(row);
    }

    /// The index of a column.
    pub fn column(&self, name: &str) -> Result<usize> {
        self.header.iter().position(|h| h == name).with_context(|| format!("no column `{name}` (columns: {})", self.header.join(", ")))
    }

    /// A column's cell of each row, parsed as a number (NaN where it is not one).
    pub fn numbers(&self, name: &str) -> Result<Vec<f64>> {
        let c = self.column(name)?;
        Ok(self.rows.iter().map(|r| r[c].trim().parse().unwrap_or(f64::NAN)).collect())
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for (k, v) in &self.notes {
            out.push_str(&format!("# {k}: {v}\n"));
        }
        out.push_str(&self.header.join("\t"));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&r.join("\t"));
            out.push('\n');
        }
        out
    }

    pub fn parse(text: &str) -> Result<Self> {
        let mut table = Table::default();
        for (n, line) in text.lines().enumerate() {
            if let Some(note) = line.strip_prefix('#') {
                if let Some((k, v)) = note.trim().split_once(':') {
                    table.notes.push((k.trim().to_string(), v.trim().to_string()));
                }
            } else if line.trim().is_empty() {
                continue;
            } else if table.header.is_empty() {
                table.header = line.split('\t').map(str::to_string).collect();
            } else {
                let row: Vec<String> = line.split('\t').map(str::to_string).collect();
                if row.len() != table.header.len() {
                    bail!("line {}: {} cells for {} columns", n + 1, row.len(), table.header.len());
                }
                table.rows.push(row);
            }
        }
        if table.header.is_empty() {
            bail!("no header line");
        }
        Ok(table)
    }

    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Table::parse(&text).with_context(|| format!("{}", path.display()))
    }

    /// The table at `path`, or `None` where there is no such file (not measured yet).
    pub fn read_if_present(path: &Path) -> Result<Option<Self>> {
        if path.exists() {
            Table::read(path).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// `# machine:` of this machine: CPU model, cores, OS.
pub fn this_machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| t.lines().find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string()))).unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let os = std::fs::read_to_string("/etc/os-release").ok().and_then(|t| t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))).unwrap_or_else(|| "unknown OS".into());
    format!("{cpu}, {cores} cores available, {os}")
}

/// A figure with 3 significant digits.
pub fn fmt3(x: f64) -> String {
    if !x.is_finite() {
        return "nan".into();
    }
    let digits = if x == 0.0 { 0 } else { (2 - x.abs().log10().floor() as i32).max(0) as usize };
    format!("{x:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_reads_back() {
        let mut t = Table::new(&["a", "b"]);
        t.note("machine", "x: y");
        t.push(vec!["1".into(), "2.5".into()]);
        let back = Table::parse(&t.render()).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.notes, [("machine".to_string(), "x: y".to_string())]);
        assert_eq!(back.numbers("b").unwrap(), [2.5]);
        assert!(back.column("c").unwrap_err().to_string().contains("no column `c`"));
    }

    #[test]
    fn ragged_rows_are_refused() {
        assert!(Table::parse("a\tb\n1\n").unwrap_err().to_string().contains("line 2: 1 cells for 2 columns"));
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(fmt3(1234.6), "1235");
        assert_eq!(fmt3(0.012345), "0.0123");
        assert_eq!(fmt3(1.5), "1.50");
        assert_eq!(fmt3(f64::NAN), "nan");
    }
}
