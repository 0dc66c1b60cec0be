//! The `acceval` binary: parse the command line, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // First, while the process has one thread: `--backend cuda@N` sets CUDA_VISIBLE_DEVICES.
    if let Err(e) = acceval::util::cuda_pin::pin_from_args() {
        eprintln!("acceval: error: {e}");
        return ExitCode::from(2);
    }
    acceval::util::isolate::install_hook();
    let cli = acceval::cli::Cli::parse();
    let code = match acceval::run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(e) => {
            // A closed pipe (`acceval inspect m.onnx | head`) is not an error.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                0
            } else {
                eprintln!("acceval: error: {e:#}");
                2
            }
        }
    };
    if acceval::backend::abandoned_load() {
        // A loading thread is still inside the engine: leave without running its static
        // destructors (backend::bounded). Everything is written by now; flush what is
        // buffered, since _exit does not.
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: _exit ends the process at once; nothing after it runs.
        unsafe { libc::_exit(i32::from(code)) }
    }
    ExitCode::from(code)
}
