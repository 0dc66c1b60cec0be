//! Exporters: a result ([`Document`]) turned into bytes — JSON (its serde form), CSV tables
//! (through the `csv` crate's writer), the terminal view, Markdown and HTML where a result
//! has them — and [`Outputs`], the one place that decides which files a command writes.
//!
//! Every file is written atomically (temporary file + rename), and commands call
//! [`Outputs::write_files`] after each stage, so an interrupted run keeps what it measured.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Error;
use crate::util::fs::write_file;

/// One table of a result, for CSV (and any other tabular view).
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// The file name the table takes in an output folder, e.g. `qps_curve.csv`.
    pub file: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(file: &str, header: &[&str]) -> Table {
        Table {
            file: file.to_string(),
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// RFC 4180 CSV (fields with commas, quotes or newlines are quoted).
    pub fn to_csv(&self) -> Vec<u8> {
        let mut w = csv::WriterBuilder::new()
            .flexible(true)
            .from_writer(Vec::new());
        // Writing into a Vec cannot fail.
        let _ = w.write_record(&self.header);
        for r in &self.rows {
            let _ = w.write_record(r);
        }
        w.into_inner().unwrap_or_default()
    }
}

/// A result a command can emit.
pub trait Document: Serialize {
    /// The terminal view (tables on a terminal, Markdown tables when piped).
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()>;
    /// The result's tables; the first is what `--export-csv FILE` writes.
    fn tables(&self) -> Vec<Table> {
        Vec::new()
    }
    /// The name of its JSON in an output folder.
    fn json_name(&self) -> &'static str {
        "report.json"
    }
    /// Further files for an output folder (a chart, a Markdown report): (name, bytes).
    fn extra_files(&self) -> Vec<(String, Vec<u8>)> {
        Vec::new()
    }
}

/// Turns a document into the bytes of one format.
pub trait Exporter<D: Document + ?Sized> {
    fn export(&self, d: &D) -> Result<Vec<u8>, Error>;
}

/// The document's serde form, pretty-printed, with a final newline.
pub struct Json;
/// One of the document's tables as CSV.
pub struct Csv(pub usize);
/// The terminal view.
pub struct Text;

impl<D: Document + ?Sized> Exporter<D> for Json {
    fn export(&self, d: &D) -> Result<Vec<u8>, Error> {
        let mut v = serde_json::to_vec_pretty(d)?;
        v.push(b'\n');
        Ok(v)
    }
}

impl<D: Document + ?Sized> Exporter<D> for Csv {
    fn export(&self, d: &D) -> Result<Vec<u8>, Error> {
        d.tables()
            .get(self.0)
            .map(Table::to_csv)
            .ok_or(Error::NoTable)
    }
}

impl<D: Document + ?Sized> Exporter<D> for Text {
    fn export(&self, d: &D) -> Result<Vec<u8>, Error> {
        let mut v = Vec::new();
        d.write_text(&mut v).map_err(Error::Render)?;
        Ok(v)
    }
}

/// Where a command's result goes (the common flags `--json`, `--export-json FILE`,
/// `--export-csv FILE`, `--out DIR`, validated).
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// Print JSON on stdout instead of the terminal view.
    pub json: bool,
    pub export_json: Option<PathBuf>,
    pub export_csv: Option<PathBuf>,
    /// A folder for the JSON, every table as CSV and the extra files.
    pub out: Option<PathBuf>,
}

impl Outputs {
    /// Writes every file asked for (atomically) and returns their paths. Safe to call after
    /// each stage: later calls replace the files whole.
    pub fn write_files<D: Document + ?Sized>(&self, d: &D) -> Result<Vec<PathBuf>, Error> {
        let mut written = Vec::new();
        if let Some(p) = &self.export_json {
            write_file(p, &Json.export(d)?)?;
            written.push(p.clone());
        }
        if let Some(p) = &self.export_csv {
            write_file(p, &Csv(0).export(d)?)?;
            written.push(p.clone());
        }
        if let Some(dir) = &self.out {
            written.extend(write_folder(dir, d)?);
        }
        Ok(written)
    }

    /// Prints the result on stdout: JSON with `--json`, else the terminal view.
    pub fn print<D: Document + ?Sized>(&self, d: &D) -> Result<(), Error> {
        let bytes = if self.json {
            Json.export(d)?
        } else {
            Text.export(d)?
        };
        let mut o = std::io::stdout().lock();
        o.write_all(&bytes).map_err(Error::Stdout)?;
        o.flush().map_err(Error::Stdout)?;
        Ok(())
    }

    /// [`Outputs::write_files`], then [`Outputs::print`].
    pub fn emit<D: Document + ?Sized>(&self, d: &D) -> Result<Vec<PathBuf>, Error> {
        let w = self.write_files(d)?;
        self.print(d)?;
        Ok(w)
    }
}

/// Writes a document into `dir`: each table, its extra files, then its JSON. The JSON comes
/// last, so a run killed part-way never leaves a JSON whose tables are missing or older.
pub fn write_folder<D: Document + ?Sized>(dir: &Path, d: &D) -> Result<Vec<PathBuf>, Error> {
    crate::util::create_dir_all(dir)?;
    let json = Json.export(d)?;
    let mut written = Vec::new();
    for t in d.tables() {
        let p = dir.join(&t.file);
        write_file(&p, &t.to_csv())?;
        written.push(p);
    }
    for (name, bytes) in d.extra_files() {
        let p = dir.join(name);
        write_file(&p, &bytes)?;
        written.push(p);
    }
    let p = dir.join(d.json_name());
    write_file(&p, &json)?;
    written.insert(0, p);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let mut t = Table::new("t.csv", &["name", "note"]);
        t.push(vec!["a,b".into(), "say \"hi\"\nbye".into()]);
        t.push(vec!["plain".into(), "x".into()]);
        let s = String::from_utf8(t.to_csv()).unwrap();
        assert_eq!(s, "name,note\n\"a,b\",\"say \"\"hi\"\"\nbye\"\nplain,x\n");
        // The csv reader gives the same fields back.
        let mut r = csv::Reader::from_reader(s.as_bytes());
        let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(&rows[0][0], "a,b");
        assert_eq!(&rows[0][1], "say \"hi\"\nbye");
    }
}
