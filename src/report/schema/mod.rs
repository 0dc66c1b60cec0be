//! THE typed results: every figure any command reports is a field of one of these structs,
//! and every view (JSON, CSV, Markdown, HTML, terminal) is rendered from them. The JSON
//! schemas under `schemas/` are generated from these types (`acceval schemas`) and checked
//! in tests, so a renamed field is a compile error or a failing test, never a silent "n/a".
//!
//! This module sits at the bottom of the dependency graph (it uses only `util` and
//! `standard`): the modules that measure construct these types, and the views read them.
//! Units are in field names (`latency_ms`, `power_w`, `energy_j`, `params_bytes`).

pub mod llm;
pub mod qps;
pub mod stats;
pub mod telemetry;
mod vocab;

pub use vocab::*;
