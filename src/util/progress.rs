//! The one progress reporter: library code that runs for a while (a benchmark, a QPS
//! search, a grade) reports through a [`Progress`] instead of printing, so a command decides
//! where progress goes. On a terminal it is an indicatif bar on stderr; when stderr is not a
//! terminal (a pipe, CI, a test) the bar is hidden, and only [`Progress::note`] lines reach
//! stderr, as plain lines.

use std::borrow::Cow;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress handle; cheap to clone (clones drive the same bar).
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    visible: bool,
}

impl Progress {
    /// A bar with `template` (indicatif syntax), shown when stderr is a terminal and
    /// `NO_PROGRESS` is unset.
    pub fn new(len: u64, template: &str) -> Progress {
        let visible = std::io::stderr().is_terminal() && std::env::var_os("NO_PROGRESS").is_none();
        let bar = if visible {
            ProgressBar::new(len)
        } else {
            ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden())
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        if visible {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        Progress { bar, visible }
    }

    /// A spinner with a position and a message: `[3/6] 00:01:02 message`.
    pub fn stages(len: u64) -> Progress {
        Progress::new(len, "{spinner} [{pos}/{len}] {elapsed_precise} {msg}")
    }

    /// Reports nothing but notes (for library calls made inside another bar's run).
    pub fn hidden() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
            visible: false,
        }
    }

    pub fn set_length(&self, n: u64) {
        self.bar.set_length(n);
    }
    pub fn set_position(&self, n: u64) {
        self.bar.set_position(n);
    }
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }
    pub fn set_message(&self, m: impl Into<Cow<'static, str>>) {
        self.bar.set_message(m);
    }

    /// A line for the user (a finished step, a warning): above the bar on a terminal,
    /// a plain stderr line otherwise.
    pub fn note(&self, line: impl AsRef<str>) {
        if self.visible {
            self.bar.println(line.as_ref());
        } else {
            eprintln!("{}", line.as_ref());
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
