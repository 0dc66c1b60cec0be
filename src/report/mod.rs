//! Rendering: every view (terminal tables, JSON) is made from one result struct. [`Error`]
//! says what failed when a view is written out.

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

/// What failed while a result was turned into bytes or written out.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The result could not be serialised as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// CSV asked of a result that has no table.
    #[error("this result has no table to write as CSV")]
    NoTable,
    /// A view could not be rendered into memory.
    #[error("cannot render the result: {0}")]
    Render(std::io::Error),
    /// Stdout refused the bytes (the source is kept so that `main` can tell a closed pipe,
    /// which is not an error, from a real failure).
    #[error("cannot write to stdout")]
    Stdout(#[source] std::io::Error),
    /// A file or folder could not be written.
    #[error(transparent)]
    Files(#[from] crate::util::Error),
}

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
