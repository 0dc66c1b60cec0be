//! Skips a user can see. libtest captures what a passing test writes to stderr, so a
//! `SKIPPED` line printed from inside a test is lost on a plain `cargo test`. Instead each
//! skip is recorded, and when the test binary exits one line per reason is written to stderr
//! from the main thread, outside any capture, after libtest's own summary:
//!
//! ```text
//! SKIPPED in accuracy (2 tests: zoo_variants_land_in_their_levels, references_are_valid_onnx_test_data): ONNX Runtime not found (...)
//! ```
//!
//! `.ci/run` reads these lines to run exactly the skipped tests again with their peers
//! installed. A skip whose requirement variable is set (`ACCEVAL_REQUIRE_ORT=1`, ...) is a
//! failure instead: CI sets it for what it installs.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Mutex, Once};

/// Reason -> the tests that skipped for it.
static SKIPS: Mutex<BTreeMap<String, Vec<String>>> = Mutex::new(BTreeMap::new());

/// The current test cannot do (part of) its work here, for `why` (which names the fix).
/// Fails instead when `$require` is `1`.
pub fn skip(require: &str, why: &str) {
    if std::env::var(require).as_deref() == Ok("1") {
        panic!("{why} ({require}=1, so this is a failure, not a skip)");
    }
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: `report` is a plain `extern "C" fn()` that only locks a static and writes
        // to stderr; registering it has no other effect.
        unsafe {
            libc::atexit(report);
        }
    });
    let test = std::thread::current()
        .name()
        .unwrap_or("(a helper thread)")
        .to_string();
    let mut s = SKIPS.lock().unwrap_or_else(|e| e.into_inner());
    let tests = s.entry(why.to_string()).or_default();
    if !tests.contains(&test) {
        tests.push(test);
    }
}

/// The test binary's name (`accuracy` for `accuracy-0123abcd`), as `cargo test --test` takes it.
fn binary() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_deref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    }
}

extern "C" fn report() {
    let s = SKIPS.lock().unwrap_or_else(|e| e.into_inner());
    let bin = binary();
    let mut err = std::io::stderr().lock();
    for (why, tests) in s.iter() {
        let mut tests = tests.clone();
        tests.sort();
        let n = tests.len();
        let _ = writeln!(
            err,
            "SKIPPED in {bin} ({n} test{}: {}): {why}",
            if n == 1 { "" } else { "s" },
            tests.join(", ")
        );
    }
}
