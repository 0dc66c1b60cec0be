//! acceval: evaluates, grades and certifies AI hardware acceleration for the
//! electric-power industry, after the T/CES draft standard (see `SPEC.md`).
//!
//! The library holds everything; `main.rs` only parses the command line, calls [`run`]
//! and turns its [`Outcome`] into an exit code (0 ok/compliant, 1 not compliant, 2 error).

pub mod accuracy;
pub mod backend;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod conformance;
pub mod data;
pub mod device;
pub mod grade;
pub mod llm;
pub mod load;
pub mod measure;
pub mod model;
pub mod protocol;
pub mod report;
pub mod server;
pub mod standard;
pub mod task;
pub mod train;
pub mod util;
pub mod zoo;

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
        cli::Command::Inspect(args) => commands::inspect::run(args),
        cli::Command::Devices(args) => commands::devices::run(args),
        cli::Command::Run(args) => commands::run::run(args),
        cli::Command::Conformance(args) => commands::conformance::run(args),
        cli::Command::Zoo(args) => commands::zoo::run(args),
        cli::Command::Inputs(args) => commands::inputs::run(args),
        cli::Command::Reference(args) => commands::reference::run(args),
        cli::Command::Accuracy(args) => commands::accuracy::run(args),
        cli::Command::Bench(args) => commands::bench::run(args),
        cli::Command::Grade(args) => commands::grade::run(args),
        cli::Command::Serve(args) => commands::serve::run(args),
        cli::Command::Qps(args) => commands::qps::run(args),
        cli::Command::Llm(args) => commands::llm::run(args),
        cli::Command::Train(args) => commands::train::run(args),
        cli::Command::Verify { dir, pubkey } => commands::verify::run(&dir, pubkey.as_deref()),
        cli::Command::Keygen { out } => commands::verify::keygen(&out),
        cli::Command::Sign { dir, key } => commands::verify::sign(&dir, &key),
        cli::Command::Report { dir, format } => commands::report::run(&dir, &format),
        cli::Command::Profile { command } => commands::profile::run(command),
        cli::Command::Cluster { command } => commands::cluster::run(command),
        cli::Command::Merge {
            dir,
            baseline,
            json,
        } => commands::cluster::merge(&dir, baseline.as_deref(), json),
        cli::Command::Schemas { write, check } => commands::schemas::run(write, check),
    }
}
