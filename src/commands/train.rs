//! `acceval train`: settings → `train::run` → emit. An interrupted or failed training
//! still writes its JSON (complete: false) before the error.

use crate::Outcome;
use crate::cli::TrainArgs;
use crate::util::progress::Progress;
use crate::util::signal::stop_flag;

pub fn run(args: TrainArgs) -> anyhow::Result<Outcome> {
    if let Some(n) = args.threads {
        // candle sizes its matrix products by RAYON_NUM_THREADS at every call, and rayon
        // its pool by it at first use.
        // SAFETY: no other thread runs yet: the progress bar, the sampler and candle's
        // pool all start after this line.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", n.to_string()) };
    }
    let s = args.settings()?;
    let progress = Progress::new(
        0,
        "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} steps {msg}",
    );
    let report =
        crate::train::run(&s, &progress, &stop_flag()).map_err(crate::cli::flags::train)?;
    progress.finish();
    let out = args.output.outputs();
    out.emit(&report)?;
    match &report.error {
        Some(e) if !report.interrupted => anyhow::bail!(
            "{e}{}",
            if out.export_json.is_some() || out.out.is_some() {
                " (the report is written, complete: false)"
            } else {
                ""
            }
        ),
        _ => Ok(Outcome::Ok),
    }
}
