//! The stop flag: SIGINT (Ctrl-C) and SIGTERM set it, and every measurement loop checks it
//! between samples, so an interrupted run ends cleanly and still writes what it measured.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The error text of a run cut short by the stop flag.
pub const INTERRUPTED: &str = "interrupted (Ctrl-C)";

/// A flag set by SIGINT/SIGTERM.
pub fn stop_flag() -> Arc<AtomicBool> {
    let f = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&f));
    }
    f
}
