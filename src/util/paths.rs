//! The project's folders (models/, inputs/, reference_outputs/, profiles/): an environment
//! variable, else the folder in the working directory when it looks like the project's, else
//! the one of the source tree acceval was built from.

use std::path::PathBuf;

fn project_dir(var: &str, name: &str, marker: Option<&str>) -> PathBuf {
    if let Some(d) = std::env::var_os(var) {
        return PathBuf::from(d);
    }
    let local = PathBuf::from(name);
    let here = match marker {
        Some(m) => local.join(m).is_file(),
        None => local.is_dir(),
    };
    if here {
        return local;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// `models/` (holding `zoo.toml`): `$ACCEVAL_MODELS`, `./models`, else the source tree's.
pub fn models_dir() -> PathBuf {
    project_dir("ACCEVAL_MODELS", "models", Some("zoo.toml"))
}

/// The folder of input sets: `$ACCEVAL_INPUTS`, else `inputs/` beside `models/`.
pub fn inputs_dir() -> PathBuf {
    std::env::var_os("ACCEVAL_INPUTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| models_dir().with_file_name("inputs"))
}

/// `reference_outputs/`: `$ACCEVAL_REFERENCES`, `./reference_outputs`, else the source tree's.
pub fn references_dir() -> PathBuf {
    project_dir("ACCEVAL_REFERENCES", "reference_outputs", None)
}

/// `profiles/`: `$ACCEVAL_PROFILES`, `./profiles`, else the source tree's.
pub fn profiles_dir() -> PathBuf {
    project_dir(
        "ACCEVAL_PROFILES",
        "profiles",
        Some("line-inspection-realtime.toml"),
    )
}

/// acceval's cache (converted models, downloaded corpora): `$ACCEVAL_CACHE`, else
/// `$XDG_CACHE_HOME/acceval`, else `~/.cache/acceval`, else one in the temporary folder.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("ACCEVAL_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("acceval");
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(h) => PathBuf::from(h).join(".cache/acceval"),
        None => std::env::temp_dir().join("acceval-cache"),
    }
}
