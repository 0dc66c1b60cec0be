//! `acceval conformance`: an ONNX test-data suite through a backend.

use std::io::Write;
use std::time::Duration;

use crate::Outcome;
use crate::cli::ConformanceArgs;
use crate::conformance::{self, Settings};

pub fn run(args: ConformanceArgs) -> anyhow::Result<Outcome> {
    let load = crate::commands::run::load_options(&args.backend, Vec::new(), false)?;
    // Fail early, with the backend's own reason, when it cannot run here at all.
    let backend = crate::backend::find(&args.backend.backend.backend)?;
    if let crate::backend::Availability::NotAvailable { reason } = backend.probe() {
        anyhow::bail!(
            "backend '{}' is not available: {reason}",
            args.backend.backend
        );
    }
    let settings = Settings {
        spec: args.backend.backend.clone(),
        load,
        rtol: args.rtol,
        atol: args.atol,
        types: args.types,
        filter: args.filter.clone(),
        case_timeout: Duration::from_secs(args.case_timeout),
    };
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} cases {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let report = conformance::run_suite(&args.suite, &settings, |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    bar.finish_and_clear();
    if let Some(path) = &args.export_json {
        let bytes = serde_json::to_vec_pretty(&report)?;
        crate::util::fs::write_atomic(path, &bytes)
            .map_err(|e| anyhow::anyhow!("cannot write '{}': {e}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        crate::report::conformance::write_text(&mut out, &report, args.failures)?;
    }
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
