//! The load generator: one driver (open and closed loop, latency from the scheduled send
//! time) over a pooled HTTP(S) client, arrival schedules, latency bounds, the checks of a
//! run's settings, KServe v2 inference as a load endpoint, and the max-QPS search of §7.2.5.
//! `llm` drives its generation endpoint through the same driver.

pub mod client;
pub mod driver;
pub mod infer;
pub mod qps;
pub mod schedule;
pub mod settings;
pub mod slo;

pub use qps::{QpsPlan, QpsSettings};
