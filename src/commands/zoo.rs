//! `acceval zoo list` and `acceval zoo build`.

use std::io::Write;

use anyhow::bail;

use crate::Outcome;
use crate::cli::{ZooArgs, ZooCommand};
use crate::zoo::{self, Manifest, ManifestModel};

pub fn run(args: ZooArgs) -> anyhow::Result<Outcome> {
    let dir = crate::util::paths::models_dir();
    let manifest_path = dir.join("zoo.toml");
    match args.command {
        ZooCommand::List { json } => {
            let m = Manifest::read(&manifest_path)?;
            let mut out = std::io::stdout().lock();
            if json {
                serde_json::to_writer_pretty(&mut out, &m)?;
                writeln!(out)?;
                return Ok(Outcome::Ok);
            }
            crate::report::zoo::write_list(&mut out, &m, &dir)?;
            Ok(Outcome::Ok)
        }
        ZooCommand::Build {
            names,
            force,
            update_manifest,
        } => {
            let names = if names.is_empty() {
                zoo::all_names()
            } else {
                names
            };
            let manifest = if update_manifest {
                Manifest::read(&manifest_path).unwrap_or_default()
            } else {
                Manifest::read(&manifest_path)?
            };
            let mut rows: Vec<ManifestModel> = Vec::new();
            for name in &names {
                let Some((entry, precision)) = zoo::parse_name(name) else {
                    bail!(
                        "'{name}' is not in the zoo; its models are: {}",
                        zoo::all_names().join(", ")
                    );
                };
                let expected = manifest.find(name);
                let path = dir.join(format!("{name}.onnx"));
                if !force
                    && !update_manifest
                    && let Some(e) = expected
                    && zoo::file_matches(&path, &e.sha256)
                {
                    eprintln!("{name}: up to date ({})", path.display());
                    continue;
                }
                let row = zoo::build_to(&entry, precision, &dir, expected, update_manifest)?;
                eprintln!(
                    "{name}: built {} ({} bytes, sha256 {})",
                    path.display(),
                    row.bytes,
                    &row.sha256[..16]
                );
                rows.push(row);
            }
            if update_manifest {
                let mut m = manifest;
                m.zoo_version = zoo::ZOO_VERSION;
                for r in rows {
                    match m.models.iter_mut().find(|x| x.name == r.name) {
                        Some(x) => *x = r,
                        None => m.models.push(r),
                    }
                }
                let order = zoo::all_names();
                m.models
                    .sort_by_key(|x| order.iter().position(|n| *n == x.name));
                let text = toml::to_string_pretty(&m)?;
                crate::util::fs::write_atomic(
                    &manifest_path,
                    format!("{}{text}", zoo::MANIFEST_HEADER).as_bytes(),
                )?;
                eprintln!("wrote {}", manifest_path.display());
            }
            Ok(Outcome::Ok)
        }
    }
}
