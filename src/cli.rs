//! The command line: subcommands and flags (clap derive). Flags reuse the words of
//! hyperfine, trtexec and perf_analyzer where they exist.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::model::InputShape;

/// Evaluate, grade and certify AI hardware acceleration for electric-power AI
/// (T/CES draft "Technical specification for heterogeneous hardware acceleration of
/// electric-power AI algorithms").
#[derive(Debug, Parser)]
#[command(name = "acceval", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// What a model is: inputs/outputs, operators, parameters (Table 1), MACs and FLOPs
    /// (Table 2) at concrete input shapes.
    Inspect(InspectArgs),
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The ONNX model file (external data files are read from beside it).
    pub model: PathBuf,
    /// Shape of an input with dynamic or symbolic dims, NAME:DxDxD (repeatable),
    /// e.g. --input images:1x3x640x640.
    #[arg(long = "input", value_name = "NAME:SHAPE")]
    pub inputs: Vec<InputShape>,
    /// Print the whole analysis as JSON (stable field names, see the README) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Show the N nodes with the most MACs, with their shapes.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "15")]
    pub per_op: Option<usize>,
    /// Also list every parameter tensor and shape tensor.
    #[arg(long)]
    pub tensors: bool,
}
