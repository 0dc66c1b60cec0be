//! The bottom of the dependency graph: files written atomically, hashes, the project's
//! folders, the stop flag (Ctrl-C), a reproducible random stream and number formatting.
//! Nothing here knows about models, backends or reports; every other module may use it.

pub mod build_info;
pub mod cuda_pin;
pub mod fmt;
pub mod fs;
pub mod isolate;
pub mod limits;
pub mod paths;
pub mod progress;
pub mod rng;
pub mod signal;
