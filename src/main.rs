//! The `acceval` binary: parse the command line, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    acceval::util::isolate::install_hook();
    let cli = acceval::cli::Cli::parse();
    match acceval::run(cli) {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(e) => {
            // A closed pipe (`acceval inspect m.onnx | head`) is not an error.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("acceval: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
