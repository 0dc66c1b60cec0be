//! `acceval grade --profile P`: settings → `grade::run::grade` → the report folder, the
//! clause table on the terminal, and the exit code (0 compliant, 1 not, 2 incomplete).

use anyhow::bail;

use crate::Outcome;
use crate::cli::GradeArgs;
use crate::grade::run::{self, GradeSettings};
use crate::report::export::Outputs;
use crate::report::schema::Verdict;
use crate::util::progress::Progress;
use crate::util::signal::stop_flag;

pub fn run(args: GradeArgs) -> anyhow::Result<Outcome> {
    let s = GradeSettings {
        profile: args.profile.clone(),
        backend: args.backend.settings()?,
        out: args.output.out.clone(),
        runs: args.runs,
        duration_s: args.duration,
        ptd: args.ptd.clone(),
        llm_url: args.llm_url.clone(),
        cluster_run: args.cluster_run.clone(),
        command_line: std::env::args().collect(),
        sign: args.sign.clone(),
    };
    let progress = Progress::stages(0);
    let graded = run::grade(&s, &progress, &stop_flag());
    progress.finish();
    let graded = graded.map_err(crate::cli::flags::grade)?;
    let r = &graded.report;
    // --out is the report folder itself (written by the grade); the other outputs are extra.
    let out = Outputs {
        out: None,
        ..args.output.outputs()
    };
    out.write_files(r)?;
    if out.json {
        out.print(r)?;
    } else {
        crate::report::compliance::terminal(&mut std::io::stdout().lock(), r, &graded.dir)?;
    }
    match r.verdict {
        Verdict::Compliant => Ok(Outcome::Ok),
        Verdict::NotCompliant => Ok(Outcome::NotCompliant),
        _ => bail!(
            "the grade is INCOMPLETE ({}); what was measured is in {}",
            r.verdict_reasons
                .first()
                .map(String::as_str)
                .unwrap_or("a stage did not finish"),
            graded.dir.display()
        ),
    }
}
