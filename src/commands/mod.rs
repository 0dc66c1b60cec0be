//! One module per subcommand: validate arguments, call the library, print a view.

pub mod accuracy;
pub mod bench;
pub mod cluster;
pub mod conformance;
pub mod devices;
pub mod grade;
pub mod inputs;
pub mod inspect;
pub mod llm;
pub mod profile;
pub mod qps;
pub mod reference;
pub mod report;
pub mod run;
pub mod schemas;
pub mod serve;
pub mod train;
pub mod verify;
pub mod zoo;
