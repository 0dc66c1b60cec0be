//! Measurement: statistics over raw samples (and, later, the harness and its policies).

pub mod harness;
pub mod stats;
