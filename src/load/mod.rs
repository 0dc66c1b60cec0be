//! The load generator: protocols (KServe v2), an HTTP(S) client, arrival schedules and the
//! max-QPS search of §7.2.5.

pub mod client;
pub mod qps;
pub mod settings;
pub mod slo;
