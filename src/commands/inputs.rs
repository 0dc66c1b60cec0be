//! `acceval inputs list` and `acceval inputs build`.

use anyhow::bail;

use crate::Outcome;
use crate::cli::{InputsArgs, InputsCommand};
use crate::task::inputs::{self, InputManifest, SETS};

pub fn run(args: InputsArgs) -> anyhow::Result<Outcome> {
    let dir = crate::util::paths::inputs_dir();
    match args.command {
        InputsCommand::List => {
            for s in &SETS {
                println!(
                    "{:<22} for {}\n{:<22} {}",
                    s.name,
                    s.for_models.join(", "),
                    "",
                    s.description
                );
            }
            println!(
                "(generated into {}; `acceval inputs build` writes them)",
                dir.display()
            );
            Ok(Outcome::Ok)
        }
        InputsCommand::Build {
            sets,
            update_manifest,
        } => {
            let names: Vec<String> = if sets.is_empty() {
                SETS.iter().map(|s| s.name.to_string()).collect()
            } else {
                sets
            };
            for name in &names {
                let path = dir.join(name).join("manifest.toml");
                let committed: Option<InputManifest> = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| toml::from_str(&t).ok());
                if committed.is_none() && !update_manifest {
                    bail!(
                        "no manifest '{}' to check '{name}' against (an unknown set, or run with --update-manifest)",
                        path.display()
                    );
                }
                let built = inputs::write_set(name, &dir)?;
                if let Some(c) = committed
                    && !update_manifest
                {
                    for (a, b) in built.files.iter().zip(&c.files) {
                        if a.sha256 != b.sha256 || a.file != b.file {
                            bail!(
                                "input set '{name}': {} generated with SHA-256 {}, the manifest records {}: generation is not reproducible here",
                                a.file,
                                a.sha256,
                                b.sha256
                            );
                        }
                    }
                    // Writing the set rewrote the manifest; keep the committed one.
                    let text = toml::to_string_pretty(&c)?;
                    crate::util::fs::write_atomic(&path, text.as_bytes())?;
                }
                let bytes: u64 = built.files.iter().map(|f| f.bytes).sum();
                eprintln!(
                    "{name}: {} files, {bytes} bytes in {}",
                    built.files.len(),
                    dir.join(name).display()
                );
            }
            Ok(Outcome::Ok)
        }
    }
}
