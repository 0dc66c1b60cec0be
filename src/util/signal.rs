//! The stop flag: SIGINT (Ctrl-C) and SIGTERM set it, and every measurement loop checks it
//! between samples, so an interrupted run ends cleanly and still writes what it measured.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Why a run ended before its end: the stop flag (Ctrl-C, SIGTERM), or an error. Code
/// decides by the kind; the text is for the report and the user.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Cut {
    #[error("interrupted (Ctrl-C)")]
    Interrupted,
    #[error("{0}")]
    Failed(String),
}

impl Cut {
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Cut::Interrupted)
    }
}

/// A flag set by SIGINT/SIGTERM.
pub fn stop_flag() -> Arc<AtomicBool> {
    let f = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&f));
    }
    f
}
