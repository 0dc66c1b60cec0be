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

/// One verdict per fact: whatever a clause says (INVALID, FAIL, N/A, PASS), every view of the
/// report shows that verdict for it. The Levels table used to judge Table 3 and Table 5 again
/// and could print PASS beside an INVALID §6.2 i clause.
#[test]
fn no_view_shows_a_verdict_its_clause_does_not() {
    use acceval::report::schema::Verdict;
    let owns = |c: &acceval::report::schema::grade::Clause| {
        (c.clause == "§6.2 i" && c.title == "Accuracy (Table 3)")
            || (c.clause == "Table 5" && c.title == "Speed level")
    };
    for v in [
        Verdict::Invalid,
        Verdict::Fail,
        Verdict::NotApplicable,
        Verdict::Pass,
    ] {
        let mut r = report();
        let mut n = 0;
        for c in r.clauses.iter_mut().filter(|c| owns(c)) {
            c.verdict = v;
            n += 1;
        }
        assert_eq!(n, 4, "the fixture has 3 accuracy clauses and a speed level");
        let md = compliance::markdown(&r);
        let want = format!("| {v} |");
        let levels: Vec<&str> = md
            .lines()
            .skip_while(|l| *l != "## Levels")
            .take_while(|l| !l.starts_with("## Clause"))
            .filter(|l| l.starts_with("| Table 3") || l.starts_with("| Table 5"))
            .collect();
        assert_eq!(levels.len(), 4, "{md}");
        for row in &levels {
            assert!(row.ends_with(&want), "{v}: Levels row {row}");
        }
        let clause_rows = md
            .lines()
            .filter(|l| {
                l.starts_with("| §6.2 i | Accuracy (Table 3)")
                    || l.starts_with("| Table 5 | Speed level")
            })
            .collect::<Vec<_>>();
        assert_eq!(clause_rows.len(), 4, "{md}");
        for row in clause_rows {
            assert!(row.contains(&want), "{v}: clause row {row}");
        }
        let csv = String::from_utf8(compliance::clauses_table(&r).to_csv()).unwrap();
        let csv_rows: Vec<&str> = csv
            .lines()
            .filter(|l| l.contains("Accuracy (Table 3)") || l.contains("Speed level"))
            .collect();
        assert_eq!(csv_rows.len(), 4, "{csv}");
        for row in csv_rows {
            assert!(row.contains(&format!(",{v}")), "{v}: CSV row {row}");
        }
        let html = compliance::html(&r);
        let cells = html.matches(&format!(">{v}</td>")).count();
        assert!(
            cells >= 8,
            "{v}: {cells} HTML cells (Levels and clause tables, 4 each)"
        );
    }
}
