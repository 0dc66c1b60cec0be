//! Cluster evaluation (§7.2.4 b, §7.2.5 b, §7.1.5 b; issue 25): acceval runs as one process
//! per rank under a launcher that exists and never manages nodes itself. `rank` reads the
//! launcher's environment.

pub mod rank;

pub use rank::{Given, Launcher, Rank, RankError};
