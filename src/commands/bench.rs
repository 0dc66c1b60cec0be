//! `acceval bench`: settings → `measure::bench::measure` → emit.

use crate::Outcome;
use crate::cli::BenchArgs;
use crate::measure::bench;
use crate::report::bench::{samples_table, telemetry_table};
use crate::report::schema::Verdict;
use crate::util::fs::write_file;
use crate::util::progress::Progress;
use crate::util::signal::stop_flag;

pub fn run(args: BenchArgs) -> anyhow::Result<Outcome> {
    let s = args.settings()?;
    let progress = Progress::new(
        s.policy.runs as u64,
        "{spinner} {elapsed_precise} {pos} samples (min {len}) {msg}",
    );
    let report = bench::measure(&s, &progress, &stop_flag()).map_err(crate::cli::flags::measure)?;
    progress.finish();
    let out = args.output.outputs();
    out.write_files(&report)?;
    if let Some(p) = &args.export_samples {
        write_file(p, &samples_table(&report).to_csv())?;
    }
    if let Some(p) = &args.export_telemetry {
        let Some(rec) = &report.recording else {
            anyhow::bail!("--export-telemetry: telemetry is off (--sample-ms 0)");
        };
        write_file(p, &telemetry_table(rec).to_csv())?;
    }
    out.print(&report)?;
    if let (Some(e), false) = (&report.error, report.interrupted) {
        anyhow::bail!(
            "{e}: {} samples were measured before it{}",
            report.samples,
            if out.export_json.is_some() {
                " (written, complete: false)"
            } else {
                ""
            }
        );
    }
    Ok(
        if report.validity.result == Verdict::Valid || args.allow_invalid {
            Outcome::Ok
        } else {
            Outcome::NotCompliant
        },
    )
}
