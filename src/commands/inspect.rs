//! `acceval inspect`: what a model is.

use crate::Outcome;
use crate::cli::InspectArgs;
use crate::{model, report};

pub fn run(args: InspectArgs) -> anyhow::Result<Outcome> {
    let path = crate::zoo::resolve(&args.model)?;
    if crate::backend::tch::is_torchscript(&path) {
        let r = crate::backend::tch::inspect(&path)?;
        let mut out = std::io::stdout().lock();
        if args.json {
            serde_json::to_writer_pretty(&mut out, &r)?;
            use std::io::Write;
            writeln!(out)?;
        } else {
            report::inspect::write_torchscript(&mut out, &r)?;
        }
        return Ok(Outcome::Ok);
    }
    let analysis = model::analyse(&path, &args.inputs).map_err(crate::cli::flags::analyse)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        report::inspect::write_json(&mut out, &analysis)?;
    } else {
        let opts = report::inspect::TableOptions {
            per_op: args.per_op,
            tensors: args.tensors,
        };
        report::inspect::write_tables(&mut out, &analysis, &opts)?;
    }
    if let Some(reason) = &analysis.macs_unavailable {
        eprintln!(
            "acceval: note: MACs/FLOPs not computed: {reason} (pass each shape with --input NAME:SHAPE)"
        );
    }
    Ok(Outcome::Ok)
}
