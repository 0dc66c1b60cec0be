//! Build facts for provenance (SPEC/DESIGN "Integrity"): the git commit the binary is built
//! from, whether its sources differed from that commit, and the enabled cargo features. They
//! are captured here, at build time, and compiled in (`src/util/build_info.rs`), so a binary
//! copied anywhere reports what it was built from; nothing runs `git` at run time.
//!
//! Written by hand rather than with a crate (vergen, built, git-version): three facts from
//! two `git` calls, and those crates bring git2/gix or a dozen dependencies with them.

use std::path::PathBuf;
use std::process::Command;

/// What decides the binary's behaviour; a change to any of these is "modified".
const SOURCES: [&str; 4] = ["src", "build.rs", "Cargo.toml", "Cargo.lock"];

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    for s in SOURCES {
        println!("cargo:rerun-if-changed={s}");
    }
    // A commit, a checkout or `git add` changes these without touching a source file.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = PathBuf::from(dir);
        for f in ["HEAD", "index", "packed-refs"] {
            println!("cargo:rerun-if-changed={}", dir.join(f).display());
        }
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(r).display());
        }
    }
    let commit = git(&["rev-parse", "HEAD"]);
    let modified = commit.is_some()
        && git(&[
            &["status", "--porcelain", "--untracked-files=normal", "--"][..],
            &SOURCES[..],
        ]
        .concat())
        .is_some_and(|s| !s.is_empty());
    println!(
        "cargo:rustc-env=ACCEVAL_BUILD_COMMIT={}",
        commit.as_deref().unwrap_or("")
    );
    println!("cargo:rustc-env=ACCEVAL_BUILD_MODIFIED={modified}");
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_lowercase().replace('_', "-"))
        })
        .collect();
    features.sort();
    println!(
        "cargo:rustc-env=ACCEVAL_BUILD_FEATURES={}",
        features.join(",")
    );
    let profile = std::env::var("PROFILE").unwrap_or_default();
    println!("cargo:rustc-env=ACCEVAL_BUILD_PROFILE={profile}");
    // The optimisation level acceval itself is compiled at (the test profile's dependencies
    // are optimised, acceval is not): the CPU peak probe is meaningless at 0.
    let opt = std::env::var("OPT_LEVEL").unwrap_or_default();
    println!("cargo:rustc-env=ACCEVAL_BUILD_OPT_LEVEL={opt}");
    // `acceval --version`: "0.1.0 (commit abc..., modified; features cuda; release build)".
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let commit = match &commit {
        Some(c) if modified => format!("commit {c}, modified"),
        Some(c) => format!("commit {c}"),
        None => "not built from a git checkout".into(),
    };
    let features = if features.is_empty() {
        "no features".to_string()
    } else {
        format!("features {}", features.join(","))
    };
    println!(
        "cargo:rustc-env=ACCEVAL_BUILD_VERSION={version} ({commit}; {features}; {profile} build)"
    );
}
