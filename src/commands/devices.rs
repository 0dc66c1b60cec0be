//! `acceval devices`: what hardware and engines this machine has (§6.2 c).

use std::io::Write;

use crate::Outcome;
use crate::cli::DevicesArgs;

pub fn run(args: DevicesArgs) -> anyhow::Result<Outcome> {
    let d = crate::device::identify();
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &d)?;
        writeln!(out)?;
    } else {
        crate::report::devices::write_text(&mut out, &d)?;
    }
    Ok(Outcome::Ok)
}
