//! The text view of `acceval zoo list`.

use std::io::Write;
use std::path::Path;

use crate::report::schema::zoo::Manifest;
use crate::util::fmt::thousands;
use crate::util::fs::file_matches;

pub fn write_list(out: &mut impl Write, m: &Manifest, dir: &Path) -> std::io::Result<()> {
    let mut t = super::table(&[
        "model", "scenario", "task", "input", "params", "MACs", "MB", "file",
    ]);
    for x in &m.models {
        let path = dir.join(&x.file);
        let state = if file_matches(&path, &x.sha256) {
            "built"
        } else if path.exists() {
            "STALE (hash differs)"
        } else if x.committed {
            "missing (committed; git checkout)"
        } else {
            "built on first use"
        };
        t.add_row(vec![
            x.name.clone(),
            x.scenario.clone(),
            format!("{:?}", x.task).to_lowercase(),
            format!(
                "{} {}",
                x.input,
                x.input_shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            ),
            thousands(x.params),
            thousands(x.macs),
            format!("{:.1}", x.bytes as f64 / 1e6),
            state.to_string(),
        ]);
    }
    super::right(&mut t, &[4, 5, 6]);
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "zoo version {}; models in {} (`acceval zoo build NAME` builds one; `--model NAME` builds it when first needed)",
        m.zoo_version,
        dir.display()
    )
}
