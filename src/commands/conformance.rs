//! `acceval conformance`: an ONNX test-data suite through a backend: settings →
//! `conformance::run_suite` → emit.

use std::time::Duration;

use crate::Outcome;
use crate::cli::ConformanceArgs;
use crate::conformance::{self, Settings};
use crate::util::progress::Progress;

pub fn run(args: ConformanceArgs) -> anyhow::Result<Outcome> {
    let backend = args.backend.settings()?;
    // Fail early, with the backend's own reason, when it cannot run here at all.
    let b = crate::backend::find(&backend.spec.backend)?;
    if let crate::backend::Availability::NotAvailable { reason } = b.probe() {
        anyhow::bail!("backend '{}' is not available: {reason}", backend.spec);
    }
    let settings = Settings {
        load: backend.load_options(Vec::new(), false),
        spec: backend.spec,
        rtol: args.rtol,
        atol: args.atol,
        types: args.types,
        filter: args.filter.clone(),
        case_timeout: Duration::from_secs(args.case_timeout),
    };
    let bar = Progress::new(0, "{bar:40} {pos}/{len} cases {elapsed}");
    let mut report = conformance::run_suite(&args.suite, &settings, |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })
    .map_err(|e| match e {
        conformance::Error::SuiteFolder { .. } => anyhow::anyhow!(
            "{e}; pass --suite with a folder of test cases (scripts/fetch-onnx-node-tests.sh fetches ONNX's)"
        ),
        e => e.into(),
    })?;
    bar.finish();
    report.show_failures = args.failures;
    args.output.outputs().emit(&report)?;
    if let Some(min) = args.min_passed
        && report.totals.passed < min
    {
        eprintln!(
            "acceval: {} cases passed, fewer than --min-passed {min}",
            report.totals.passed
        );
        return Ok(Outcome::NotCompliant);
    }
    Ok(Outcome::Ok)
}
