//! The certification run: scenario profiles (`profile`), the stages that measure
//! (`run`, `stages`), the clause judges (`clauses`), the report folder and its manifest
//! (`files`), and `verify`. [`Error`] says why a grade, a signature or a check could not be
//! made; a library setting the profile gave is named by its profile key (`[qps] max_rate`).

pub mod clauses;
pub mod cluster;
pub mod files;
pub mod profile;
pub mod resume;
pub mod run;
pub mod sign;
pub mod stages;
pub mod verify;

use std::path::PathBuf;

use crate::util::setting::Problem;

/// Why a grade (or `keygen`, `sign`, `verify`, `report`) could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Profile(#[from] profile::ProfileError),
    #[error("profile '{name}' is neither a file nor a shipped profile; shipped: {shipped}")]
    NoProfile { name: String, shipped: String },
    /// A setting the profile gave that a stage could not use, named by its profile key.
    #[error("{key} {problem}")]
    Setting { key: String, problem: Problem },
    #[error(
        "signing key '{}': no such key file (make one with `acceval keygen --out NAME`)",
        path.display()
    )]
    NoSigningKey { path: PathBuf },
    #[error("reading /dev/urandom for the key: {0}")]
    Random(std::io::Error),
    #[error("'{}' exists: keygen does not overwrite a key (choose another name)", path.display())]
    KeyExists { path: PathBuf },
    #[error("encoding the {what}: {why}")]
    Encode { what: &'static str, why: String },
    #[error("cannot set the permissions of '{}': {err}", path.display())]
    Permissions { path: PathBuf, err: std::io::Error },
    #[error(
        "'{}' is not an ed25519 private key in PKCS#8 PEM ({why}); make one with `acceval keygen --out NAME`",
        path.display()
    )]
    NotAPrivateKey { path: PathBuf, why: String },
    #[error(
        "'{}' is not an ed25519 public key in PEM ({why}); `acceval keygen` writes NAME.pub",
        path.display()
    )]
    NotAPublicKey { path: PathBuf, why: String },
    #[error("'{}' is not {what}: {why}", path.display())]
    NotA {
        path: PathBuf,
        what: &'static str,
        why: String,
    },
    #[error("cannot resume '{}': {why}", dir.display())]
    CannotResume { dir: PathBuf, why: String },
    #[error("'{}' is not a valid {schema} report: {why}", path.display())]
    InvalidReport {
        path: PathBuf,
        schema: &'static str,
        why: String,
    },
    #[error("'{}' is not a regular file of at most {max} bytes", path.display())]
    TooLarge { path: PathBuf, max: u64 },
    #[error(
        "'{}' is an {old} report, written by acceval before the typed report; this acceval renders {current} reports only: `acceval verify` still checks its files, and running the grade again gives a report it can render",
        path.display()
    )]
    OldReport {
        path: PathBuf,
        old: &'static str,
        current: &'static str,
    },
    #[error("'{}' has schema {schema:?}; this acceval renders {current} reports", path.display())]
    OtherSchema {
        path: PathBuf,
        schema: String,
        current: &'static str,
    },
    #[error(transparent)]
    Accuracy(Box<crate::accuracy::Error>),
    #[error(transparent)]
    Measure(Box<crate::measure::Error>),
    #[error(transparent)]
    Load(Box<crate::load::Error>),
    #[error(transparent)]
    Llm(Box<crate::llm::Error>),
    #[error(transparent)]
    Server(Box<crate::server::Error>),
    #[error(transparent)]
    Train(Box<crate::train::Error>),
    #[error(transparent)]
    Zoo(Box<crate::zoo::Error>),
    #[error(transparent)]
    Model(#[from] crate::model::AnalyseError),
    #[error(transparent)]
    Report(#[from] crate::report::Error),
    #[error(transparent)]
    Files(#[from] crate::util::Error),
    #[error(transparent)]
    Cluster(#[from] crate::cluster::merge::MergeError),
}
crate::util::boxed_from!(Error, Accuracy, crate::accuracy::Error);
crate::util::boxed_from!(Error, Measure, crate::measure::Error);
crate::util::boxed_from!(Error, Load, crate::load::Error);
crate::util::boxed_from!(Error, Llm, crate::llm::Error);
crate::util::boxed_from!(Error, Server, crate::server::Error);
crate::util::boxed_from!(Error, Train, crate::train::Error);
crate::util::boxed_from!(Error, Zoo, crate::zoo::Error);
