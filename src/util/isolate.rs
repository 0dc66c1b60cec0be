//! Running code that may panic or hang (an engine on a hostile model, an ONNX test case) on
//! its own thread, with a time limit: a panic becomes an error with its message, a hang a
//! time-out, and the caller goes on.

use std::sync::mpsc;
use std::time::Duration;

/// Why isolated work gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolated {
    /// It panicked, with this message.
    Panicked(String),
    /// It did not finish within the limit (the thread is left to finish on its own).
    TimedOut(Duration),
    /// No thread could be started.
    Spawn(String),
}

impl std::fmt::Display for Isolated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Isolated::Panicked(m) => write!(f, "engine panicked: {m}"),
            Isolated::TimedOut(d) => write!(f, "no result within {} s", d.as_secs_f64()),
            Isolated::Spawn(e) => write!(f, "could not start a thread: {e}"),
        }
    }
}

/// The message of a caught panic.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs the process's panic hook: the default one, except inside [`guard`], where a
/// caught panic becomes an error message instead of a backtrace on stderr.
pub fn install_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !QUIET.with(|q| q.get()) {
            default(info);
        }
    }));
}

/// Runs `f` on this thread; a panic inside it (an engine's, on a hostile model) becomes
/// `Err(message)`.
pub fn guard<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let before = QUIET.with(|q| q.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(before));
    r.map_err(|p| panic_message(p.as_ref()))
}

/// Runs `f` on a thread named `name` with a 64 MiB stack; waits at most `limit`.
pub fn run<T: Send + 'static>(
    name: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Isolated> {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(64 << 20)
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(r);
        })
        .map_err(|e| Isolated::Spawn(e.to_string()))?;
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => {
            let _ = handle.join();
            Ok(v)
        }
        Ok(Err(p)) => {
            let _ = handle.join();
            Err(Isolated::Panicked(panic_message(p.as_ref())))
        }
        Err(_) => Err(Isolated::TimedOut(limit)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_and_hangs_become_errors() {
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let p = run("t", Duration::from_secs(5), || -> u32 { panic!("boom") });
        std::panic::set_hook(quiet);
        assert_eq!(p, Err(Isolated::Panicked("boom".into())));
        let h = run("t", Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(2));
            1
        });
        assert!(matches!(h, Err(Isolated::TimedOut(_))));
        assert_eq!(run("t", Duration::from_secs(5), || 7), Ok(7));
    }
}
