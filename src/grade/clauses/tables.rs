//! §6.2 h: the model's size and compute levels (Tables 1 and 2).

use super::*;

/// §6.2 h: Tables 1 and 2.
pub(super) fn tables(e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(a) = &e.analysis else { return f };
    let t1 = standard::size_level(mb(a.params.bytes));
    let t2 = a.gflops.and_then(standard::size_level);
    let name = |l: Option<Level>| {
        l.map(|l| l.to_string())
            .unwrap_or_else(|| "no level".into())
    };
    f.add(
        "§6.2 h",
        "Model size (Table 1)",
        "grade the parameter size: C1 ≥ 1000 MB, C2 ≥ 100, C3 ≥ 10, C4 > 0",
        format!(
            "{} parameters, {:.3} MB → {}",
            thousands(a.params.count),
            mb(a.params.bytes),
            name(t1)
        ),
        Verdict::Pass,
        None,
        Source::Standard,
    );
    f.add(
        "§6.2 h",
        "Compute (Table 2)",
        "grade the FLOPs: C1 ≥ 1000 G, C2 ≥ 100, C3 ≥ 10, C4 > 0",
        match (a.macs, a.gflops) {
            (Some(m), Some(g)) => format!("{} MACs, {g:.3} GFLOPs → {}", thousands(m), name(t2)),
            _ => "n/a: MACs not computed".into(),
        },
        if a.gflops.is_some() {
            Verdict::Pass
        } else {
            Verdict::NotApplicable
        },
        if a.gflops.is_some() {
            None
        } else {
            a.macs_unavailable.clone()
        },
        Source::Standard,
    );
    f
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    #[test]
    fn tables_one_and_two_are_graded_or_not_applicable_without_macs() {
        let (_, _, mut e) = fixture();
        let f = tables(&e);
        assert_eq!(verdict(&f, "Model size (Table 1)"), Verdict::Pass);
        assert_eq!(verdict(&f, "Compute (Table 2)"), Verdict::Pass);
        let a = e.analysis.as_mut().unwrap();
        a.gflops = None;
        a.macs = None;
        assert_eq!(
            verdict(&tables(&e), "Compute (Table 2)"),
            Verdict::NotApplicable
        );
        e.analysis = None;
        assert!(tables(&e).clauses.is_empty());
    }
}
