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

/// `grade --resume DIR`: the settings of the run in DIR, from its recorded command line.
/// Nothing else may be given but how to print (`--json`), since a resumed run must measure
/// as the interrupted one did.
fn resumed(
    dir: &std::path::Path,
    now: &GradeArgs,
) -> anyhow::Result<(GradeArgs, Option<crate::grade::resume::Previous>)> {
    let given: Vec<String> = std::env::args().skip(1).collect();
    let extra: Vec<&String> = given
        .iter()
        .filter(|a| {
            !matches!(a.as_str(), "grade" | "--resume" | "--json")
                && !a.starts_with("--resume=")
                && std::path::Path::new(a.as_str()) != dir
        })
        .collect();
    if let Some(a) = extra.first() {
        bail!(
            "grade --resume takes the settings of the run it continues (its command line is in report.json); leave out '{a}'"
        );
    }
    let prev = crate::grade::resume::load(dir).map_err(crate::cli::flags::grade)?;
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(&prev.report.command_line)
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot resume '{}': its recorded command line does not parse with this acceval: {}",
                dir.display(),
                e.to_string().lines().next().unwrap_or_default()
            )
        })?;
    let crate::cli::Command::Grade(mut args) = cli.command else {
        bail!(
            "cannot resume '{}': its recorded command line is not a grade",
            dir.display()
        );
    };
    if args.resume.is_some() {
        bail!(
            "cannot resume '{}': its recorded command line is itself a resume",
            dir.display()
        );
    }
    args.output.json = now.output.json;
    Ok((args, Some(prev)))
}

pub fn run(args: GradeArgs) -> anyhow::Result<Outcome> {
    let (args, resume) = match &args.resume {
        Some(dir) => resumed(dir, &args)?,
        None => (args, None),
    };
    let s = GradeSettings {
        profile: args.profile.clone().unwrap_or_default(),
        backend: args.backend.settings()?,
        out: args.output.out.clone(),
        runs: args.runs,
        duration_s: args.duration,
        ptd: args.ptd.clone(),
        llm_url: args.llm_url.clone(),
        cluster_run: args.cluster_run.clone(),
        command_line: match &resume {
            Some(prev) => prev.report.command_line.clone(),
            None => std::env::args().collect(),
        },
        sign: args.sign.clone(),
        resume,
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
