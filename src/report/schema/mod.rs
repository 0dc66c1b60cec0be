//! THE typed results: every figure any command reports is a field of one of these structs,
//! and every view (JSON, CSV, Markdown, HTML, terminal) is rendered from them. The JSON
//! schemas under `schemas/` are generated from these types (`acceval schemas`) and checked
//! in tests, so a renamed field is a compile error or a failing test, never a silent "n/a".
//!
//! This module sits at the bottom of the dependency graph (it uses only `util` and
//! `standard`): the modules that measure construct these types, and the views read them.
//! Units are in field names (`latency_ms`, `power_w`, `energy_j`, `params_bytes`).

pub mod accuracy;
pub mod bench;
pub mod cluster;
pub mod conformance;
pub mod devices;
pub mod grade;
pub mod inspect;
pub mod llm;
pub mod nan;
pub mod profile;
pub mod qps;
pub mod run;
pub mod session;
pub mod stats;
pub mod telemetry;
pub mod train;
mod vocab;
pub mod zoo;

pub use vocab::*;

/// Every JSON document acceval writes, with the file its JSON Schema is committed as under
/// `schemas/` (`acceval schemas --write schemas` regenerates them; a test checks they are
/// current and that every command's JSON validates against its schema).
pub fn catalogue() -> Vec<(&'static str, schemars::Schema)> {
    use schemars::schema_for;
    vec![
        ("report.schema.json", schema_for!(grade::GradeReport)),
        ("manifest.schema.json", schema_for!(grade::Manifest)),
        ("bench.schema.json", schema_for!(bench::BenchReport)),
        (
            "accuracy.schema.json",
            schema_for!(accuracy::AccuracyReport),
        ),
        (
            "accuracy-precisions.schema.json",
            schema_for!(accuracy::PrecisionTable),
        ),
        ("reference.schema.json", schema_for!(accuracy::RefManifest)),
        (
            "conversion.schema.json",
            schema_for!(accuracy::ConversionReport),
        ),
        ("run.schema.json", schema_for!(run::RunReport)),
        ("task.schema.json", schema_for!(run::TaskReport)),
        ("devices.schema.json", schema_for!(devices::Devices)),
        (
            "conformance.schema.json",
            schema_for!(conformance::ConformanceReport),
        ),
        ("profile.schema.json", schema_for!(profile::Profile)),
        ("inspect.schema.json", schema_for!(inspect::Analysis)),
        (
            "inspect-torchscript.schema.json",
            schema_for!(inspect::TorchScriptInspection),
        ),
        ("train.schema.json", schema_for!(train::TrainReport)),
        ("zoo-list.schema.json", schema_for!(zoo::Listing)),
        ("qps.schema.json", schema_for!(qps::QpsReport)),
        ("llm.schema.json", schema_for!(llm::LlmReport)),
        ("cluster-rank.schema.json", schema_for!(cluster::RankReport)),
        ("cluster.schema.json", schema_for!(cluster::ClusterReport)),
        (
            "cluster-train-rank.schema.json",
            schema_for!(cluster::TrainRankReport),
        ),
        (
            "cluster-accuracy-rank.schema.json",
            schema_for!(cluster::AccuracyRankReport),
        ),
    ]
}

/// The schema of `file` (e.g. `bench.schema.json`) as JSON.
pub fn schema_json(file: &str) -> Option<serde_json::Value> {
    catalogue()
        .into_iter()
        .find(|(f, _)| *f == file)
        .and_then(|(_, s)| serde_json::to_value(s).ok())
}
