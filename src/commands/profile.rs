//! `acceval profile check FILE` and `acceval profile list`.

use std::path::PathBuf;

use crate::Outcome;
use crate::cli::ProfileCommand;
use crate::grade::profile::Profile;

pub fn run(c: ProfileCommand) -> anyhow::Result<Outcome> {
    match c {
        ProfileCommand::Check { file } => {
            let p = Profile::load(&file)?;
            println!(
                "{}: valid ({}; accuracy {} required, speed {} required at P{})",
                file.display(),
                p.scenario,
                p.accuracy.required,
                p.speed.required,
                p.speed.percentile
            );
            Ok(Outcome::Ok)
        }
        ProfileCommand::List => {
            let dir = crate::util::paths::profiles_dir();
            let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            v.sort();
            for f in v {
                let p = Profile::load(&f)?;
                println!(
                    "{:<26} {:<42} model {:<20} accuracy {} · speed {}",
                    p.name, p.scenario, p.model.name, p.accuracy.required, p.speed.required
                );
            }
            Ok(Outcome::Ok)
        }
    }
}
