//! Rendering: every view (terminal tables, JSON) is made from one result struct.
//! Files are written atomically with [`write_atomic`].

pub mod accuracy;
pub mod bench;
pub mod compliance;
pub mod conformance;
pub mod devices;
pub mod inspect;
pub mod llm;
pub mod qps;
pub mod run;
pub mod zoo;

use std::io::{IsTerminal, Write};
use std::path::Path;

use comfy_table::{Cell, CellAlignment, Table, presets};

/// A table with `header`: box-drawing on a terminal, Markdown when stdout is piped.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    if std::io::stdout().is_terminal() {
        t.load_style(presets::UTF8_FULL_CONDENSED);
    } else {
        t.load_style(presets::ASCII_MARKDOWN);
    }
    t.set_header(header.iter().map(Cell::new));
    t
}

/// Right-aligns the numeric columns `cols`.
pub fn right(t: &mut Table, cols: &[usize]) {
    for &c in cols {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename,
/// so a reader never sees a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// `1234567` -> `1,234,567`.
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(4_089_184_256), "4,089,184,256");
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
