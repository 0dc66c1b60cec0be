//! acceval: evaluates, grades and certifies AI hardware acceleration for the
//! electric-power industry, after the T/CES draft standard (see `SPEC.md`).
//!
//! The library holds everything; `main.rs` only parses the command line, calls [`run`]
//! and turns its [`Outcome`] into an exit code (0 ok/compliant, 1 not compliant, 2 error).

pub mod cli;
pub mod grade;
pub mod model;
pub mod report;

/// How a command that ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Ran; compliant where a verdict applies.
    Ok,
    /// Ran; not compliant.
    NotCompliant,
}

impl Outcome {
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::NotCompliant => 1,
        }
    }
}

/// Runs one parsed command.
pub fn run(cli: cli::Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        cli::Command::Inspect(args) => {
            let analysis = model::analyse(&args.model, &args.inputs)?;
            let mut out = std::io::stdout().lock();
            if args.json {
                report::inspect::write_json(&mut out, &analysis)?;
            } else {
                let opts = report::inspect::TableOptions {
                    per_op: args.per_op,
                    tensors: args.tensors,
                };
                report::inspect::write_tables(&mut out, &analysis, &opts)?;
            }
            if let Some(reason) = &analysis.macs_unavailable {
                eprintln!("acceval: note: MACs/FLOPs not computed: {reason}");
            }
            Ok(Outcome::Ok)
        }
    }
}
