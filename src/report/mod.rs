//! Rendering: every view (terminal tables, JSON) is made from one result struct.

pub mod accuracy;
pub mod bench;
pub mod chart;
pub mod compliance;
pub mod conformance;
pub mod devices;
pub mod export;
pub mod inspect;
pub mod llm;
pub mod qps;
pub mod run;
pub mod schema;
pub mod train;
pub mod zoo;

use std::io::IsTerminal;

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
