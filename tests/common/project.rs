//! The project folders the binary under test reads and writes (`models/`, `inputs/`,
//! `reference_outputs/`), kept out of the checkout so that tests are hermetic.
//!
//! acceval builds zoo models, input sets and references on first use into those folders. A
//! test that ran it in the checkout wrote there, and the next test (or the next `cargo test`)
//! found what the first had built: results depended on order and on what a developer's
//! checkout happened to hold. Here every run of the binary gets `$ACCEVAL_MODELS`,
//! `$ACCEVAL_INPUTS` and `$ACCEVAL_REFERENCES` pointing into a cache under cargo's
//! `CARGO_TARGET_TMPDIR` (inside `target/`), seeded with copies of the committed files only
//! and keyed by their content: an edit of a committed file gives a fresh cache, and any test
//! may rebuild whatever is missing (`zoo_model`, `reference`), under a lock so that parallel
//! tests build a thing once.
//!
//! References also depend on the machine: one computed where ONNX Runtime is installed is
//! cross-checked on it, one computed without is not. So `reference_outputs/` is kept apart
//! per ONNX Runtime found (none, or its library), while models and inputs are shared.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The folders the committed files are copied from.
const SEEDED: [&str; 3] = ["models", "inputs", "reference_outputs"];

pub struct Project {
    pub models: PathBuf,
    pub inputs: PathBuf,
    pub references: PathBuf,
}

/// The test project of this machine's ONNX Runtime and the checkout's committed files.
pub fn project() -> &'static Project {
    static P: OnceLock<Project> = OnceLock::new();
    P.get_or_init(|| {
        let files = committed_files();
        let mut listing = String::new();
        for f in &files {
            let bytes = std::fs::read(source().join(f))
                .unwrap_or_else(|e| panic!("reading committed file {f}: {e}"));
            listing.push_str(&format!("{f}\t{}\n", acceval::util::fs::sha256_hex(&bytes)));
        }
        let key = &acceval::util::fs::sha256_hex(listing.as_bytes())[..16];
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("acceval-project")
            .join(key);
        let shared = seeded(&root.join("shared"), &files, &["models", "inputs"]);
        let engine = &acceval::util::fs::sha256_hex(ort_engine().as_bytes())[..12];
        let refs = seeded(
            &root.join(format!("engine-{engine}")),
            &files,
            &["reference_outputs"],
        );
        Project {
            models: shared.join("models"),
            inputs: shared.join("inputs"),
            references: refs.join("reference_outputs"),
        }
    })
}

/// The environment that points the binary at the test project.
pub fn project_env() -> [(&'static str, &'static Path); 3] {
    let p = project();
    [
        ("ACCEVAL_MODELS", p.models.as_path()),
        ("ACCEVAL_INPUTS", p.inputs.as_path()),
        ("ACCEVAL_REFERENCES", p.references.as_path()),
    ]
}

/// The checkout the tests were built from.
fn source() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The committed files of the seeded folders (`git ls-files`); outside a git checkout (a
/// source archive), every file they hold.
fn committed_files() -> Vec<String> {
    let git = Command::new("git")
        .arg("-C")
        .arg(source())
        .args(["ls-files", "-z", "--"])
        .args(SEEDED)
        .output();
    let mut files: Vec<String> = match git {
        Ok(o) if o.status.success() && !o.stdout.is_empty() => String::from_utf8_lossy(&o.stdout)
            .split('\0')
            .filter(|f| !f.is_empty() && source().join(f).is_file())
            .map(str::to_string)
            .collect(),
        _ => SEEDED
            .iter()
            .flat_map(|d| walk(&source().join(d)))
            .collect(),
    };
    files.sort();
    files
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if let Ok(rel) = p.strip_prefix(source()) {
            out.push(rel.to_string_lossy().into_owned());
        }
    }
    out
}

/// `dir`, holding copies of the committed files under `folders`; made whole in a temporary
/// folder and renamed into place, so a reader never sees it half-copied.
fn seeded(dir: &Path, files: &[String], folders: &[&str]) -> PathBuf {
    if dir.join(".complete").is_file() {
        return dir.to_path_buf();
    }
    let parent = dir.parent().expect("project folder has a parent");
    std::fs::create_dir_all(parent).expect("create the test project folder");
    let tmp = tempfile::tempdir_in(parent).expect("temporary project folder");
    for d in folders {
        std::fs::create_dir_all(tmp.path().join(d)).expect("create a project folder");
    }
    for f in files
        .iter()
        .filter(|f| folders.iter().any(|d| f.starts_with(&format!("{d}/"))))
    {
        let to = tmp.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).expect("create a project folder");
        std::fs::copy(source().join(f), &to)
            .unwrap_or_else(|e| panic!("copying {f} into the test project: {e}"));
    }
    std::fs::write(tmp.path().join(".complete"), b"").expect("mark the project complete");
    let tmp = tmp.keep();
    if std::fs::rename(&tmp, dir).is_err() {
        // Another test binary made it first.
        let _ = std::fs::remove_dir_all(&tmp);
        assert!(
            dir.join(".complete").is_file(),
            "{} is incomplete",
            dir.display()
        );
    }
    dir.to_path_buf()
}

/// The ONNX Runtime library acceval finds here ("none" without one), from `devices --json`.
fn ort_engine() -> String {
    let v = super::devices_json();
    let lib = &v["onnxruntime"]["library"];
    if lib.is_object() {
        lib.to_string()
    } else {
        "none".into()
    }
}

/// Runs `f` holding an exclusive lock named `name` in the test project, so that parallel
/// tests build a model or a reference once.
fn locked<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let p = project();
    let lock = p.references.with_file_name(format!(".lock-{name}"));
    let file = std::fs::File::create(&lock).expect("create a lock file");
    file.lock().expect("lock");
    let r = f();
    let _ = file.unlock();
    r
}

/// The path of zoo model `name` (e.g. `yolov8n-line`, `mobilenetv2-meter-fp16`) in the test
/// project, built by `acceval zoo build` when it is not there yet.
pub fn zoo_model(name: &str) -> PathBuf {
    let path = project().models.join(format!("{name}.onnx"));
    locked(&format!("model-{name}"), || {
        let (code, _, err) = super::acceval(&["zoo", "build", name]);
        assert_eq!(code, 0, "acceval zoo build {name}: {err}");
    });
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// The reference folder of zoo model `name` in the test project, computed by `acceval
/// reference --model NAME` when it is not there yet (cross-checked where ONNX Runtime is,
/// `--no-cross-check` elsewhere).
pub fn reference(name: &str) -> PathBuf {
    let dir = project().references.join(name);
    locked(&format!("reference-{name}"), || {
        if !dir.join("manifest.toml").is_file() {
            let mut args = vec!["reference", "--model", name];
            if ort_engine() == "none" {
                // `reference` refuses to skip its cross-check unless told to.
                args.push("--no-cross-check");
            }
            let (code, _, err) = super::acceval(&args);
            assert_eq!(code, 0, "acceval {}: {err}", args.join(" "));
        }
    });
    dir
}
