//! The markdown of BENCHMARKS.md's sections: a result file's notes as a list, and a table.

use std::fmt::Write as _;

use anyhow::Result;

use super::results::Table;

/// The `# key: value` lines of a result file, as a list.
pub fn notes(md: &mut String, t: &Table) -> Result<()> {
    for (k, v) in &t.notes {
        writeln!(md, "- {k}: {v}")?;
    }
    md.push('\n');
    Ok(())
}

pub fn markdown_table(md: &mut String, header: &[&str], rows: &[Vec<String>]) -> Result<()> {
    writeln!(md, "| {} |", header.join(" | "))?;
    writeln!(md, "|{}", "---|".repeat(header.len()))?;
    for r in rows {
        writeln!(md, "| {} |", r.join(" | "))?;
    }
    md.push('\n');
    Ok(())
}

