//! Cluster evaluation (§7.2.4 b, §7.2.5 b, §7.1.5 b; issue 25): acceval runs as one process
//! per rank under a launcher that exists and never manages nodes itself. `rank` reads the
//! launcher's environment; `rendezvous` is where the ranks meet without MPI (barriers and
//! clock offsets over TCP at `MASTER_ADDR:MASTER_PORT`).

pub mod collective;
pub mod file;
pub mod merge;
pub mod mpi;
pub mod rank;
pub mod rendezvous;
pub mod run;

pub use rank::{Given, Launcher, Rank, RankError};

/// Every rank file keeps its rank and its ending in its `common` part
/// ([`crate::report::schema::cluster::RankCommon`]).
macro_rules! rank_record {
    ($($t:ty),*) => {$(
        impl file::RankRecord for $t {
            fn rank(&self) -> usize {
                self.common.rank
            }
            fn set_error(&mut self, why: String) {
                self.common.complete = false;
                self.common.error = Some(why);
            }
        }
    )*};
}

use crate::report::schema::cluster::{AccuracyRankReport, RankReport, TrainRankReport};
rank_record!(RankReport, TrainRankReport, AccuracyRankReport);
