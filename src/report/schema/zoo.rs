//! The zoo's manifest (`models/zoo.toml`): every model's file, hash, parameters and MACs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Precision, Task};

/// One line of `models/zoo.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct ManifestModel {
    pub name: String,
    pub file: String,
    pub scenario: String,
    pub task: Task,
    pub precision: Precision,
    pub input: String,
    pub input_shape: Vec<i64>,
    pub architecture: String,
    pub reference: String,
    pub labels: Vec<String>,
    pub sha256: String,
    pub bytes: u64,
    pub params: u64,
    pub params_bytes: u64,
    pub macs: u64,
    /// Whether the file is committed (at most 5 MB) or built on demand.
    pub committed: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default, JsonSchema)]
pub struct Manifest {
    /// Format of the models (bumped when generation changes, with new hashes).
    pub zoo_version: u32,
    pub models: Vec<ManifestModel>,
}
