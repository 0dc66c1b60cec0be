//! `acceval devices`: what hardware and engines this machine has (§6.2 c).

use crate::Outcome;
use crate::cli::DevicesArgs;

pub fn run(args: DevicesArgs) -> anyhow::Result<Outcome> {
    let d = crate::device::identify();
    args.output.outputs().emit(&d)?;
    Ok(Outcome::Ok)
}
