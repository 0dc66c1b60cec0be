//! The certification run: scenario profiles (`profile`), the stages that measure
//! (`run`, `stages`), the clause judges (`clauses`), the report folder and its manifest
//! (`files`), and `verify`.

pub mod clauses;
pub mod files;
pub mod profile;
pub mod run;
pub mod sign;
pub mod stages;
pub mod verify;
