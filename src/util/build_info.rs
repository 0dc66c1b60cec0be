//! What this binary was built from, as `build.rs` captured it at build time: the git commit,
//! whether the sources differed from it, the enabled cargo features and the build profile.
//! Nothing here runs `git`: a binary copied out of the repository reports the commit it was
//! built from, whatever the source folder holds now.

/// The commit the binary was built from; empty outside a git checkout.
pub const COMMIT: &str = env!("ACCEVAL_BUILD_COMMIT");
/// The enabled cargo features, comma-separated (e.g. `cuda,default`).
pub const FEATURES: &str = env!("ACCEVAL_BUILD_FEATURES");
/// `debug` or `release`.
pub const PROFILE: &str = env!("ACCEVAL_BUILD_PROFILE");
/// The opt-level acceval's own code was compiled at (`0` in a plain `cargo build`/`cargo test`).
pub const OPT_LEVEL: &str = env!("ACCEVAL_BUILD_OPT_LEVEL");
/// `acceval --version`: version, commit (and "modified"), features, profile.
pub const VERSION: &str = env!("ACCEVAL_BUILD_VERSION");

/// Whether src/, build.rs, Cargo.toml or Cargo.lock differed from `COMMIT` at build time.
pub fn modified() -> bool {
    env!("ACCEVAL_BUILD_MODIFIED") == "true"
}

/// The commit for reports: `<sha>`, `<sha> (modified)`, or why there is none.
pub fn commit() -> String {
    match (COMMIT, modified()) {
        ("", _) => "unknown (not built from a git checkout)".into(),
        (c, true) => format!("{c} (modified)"),
        (c, false) => c.to_string(),
    }
}

/// The enabled cargo features, as a list.
pub fn features() -> Vec<String> {
    FEATURES
        .split(',')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_facts_agree_with_each_other() {
        assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")), "{VERSION}");
        assert!(VERSION.contains(PROFILE), "{VERSION}");
        // This crate is built from its git checkout in the tests.
        if !COMMIT.is_empty() {
            assert_eq!(COMMIT.len(), 40, "{COMMIT}");
            assert!(VERSION.contains(COMMIT), "{VERSION}");
            assert_eq!(commit().ends_with("(modified)"), modified());
        }
        for f in features() {
            assert!(VERSION.contains(&f), "{f} not in {VERSION}");
        }
        assert_eq!(
            features().contains(&"cuda".to_string()),
            cfg!(feature = "cuda")
        );
    }
}
