//! Measurement: statistics over raw samples (and, later, the harness and its policies).

pub mod bench;
pub mod harness;
pub mod placement;
pub mod run;
pub mod stats;
