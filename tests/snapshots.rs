//! Snapshots of the views of a fixed report (tests/fixtures/report-v2/report.json, a real
//! grade): the Markdown report, the clause table as CSV, and the terminal summary. A change
//! to a view shows here as a diff to review (`INSTA_UPDATE=always cargo test --test
//! snapshots` rewrites them; scripts/make_report_fixture.sh remakes the fixture).

use std::path::Path;

use acceval::grade::verify::read_report;
use acceval::report::compliance;

fn report() -> acceval::report::schema::grade::GradeReport {
    read_report(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v2")).unwrap()
}

#[test]
fn markdown_view() {
    insta::assert_snapshot!("report_md", compliance::markdown(&report()));
}

#[test]
fn clauses_csv_view() {
    let csv = String::from_utf8(compliance::clauses_table(&report()).to_csv()).unwrap();
    insta::assert_snapshot!("clauses_csv", csv);
}

#[test]
fn terminal_view() {
    let mut out = Vec::new();
    compliance::terminal(&mut out, &report(), Path::new("reports/example")).unwrap();
    insta::assert_snapshot!("terminal", String::from_utf8(out).unwrap());
}

#[test]
fn bench_csv_views() {
    // The speed stage's tables as the report folder holds them.
    let r = report();
    let b = &r.speed.as_ref().expect("a speed stage").bench;
    let t = acceval::report::bench::summary_table(b);
    insta::assert_snapshot!("metrics_csv", String::from_utf8(t.to_csv()).unwrap());
}
