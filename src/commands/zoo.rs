//! `acceval zoo list` and `acceval zoo build`.

use std::io::Write;

use anyhow::bail;

use crate::Outcome;
use crate::cli::{ZooArgs, ZooCommand};
use crate::report::schema::zoo::{Listing, NullCheck};
use crate::standard::Level;
use crate::zoo::{self, Manifest, ManifestModel};

pub fn run(args: ZooArgs) -> anyhow::Result<Outcome> {
    let dir = crate::util::paths::models_dir();
    let manifest_path = dir.join("zoo.toml");
    match args.command {
        ZooCommand::List { json } => {
            let m = Manifest::read(&manifest_path)?;
            let checks = null_checks(&m);
            let mut out = std::io::stdout().lock();
            if json {
                let listing = Listing {
                    manifest: m,
                    null_checks: checks,
                };
                serde_json::to_writer_pretty(&mut out, &listing)?;
                writeln!(out)?;
                return Ok(Outcome::Ok);
            }
            crate::report::zoo::write_list(&mut out, &m, &dir)?;
            writeln!(out)?;
            crate::report::zoo::write_null_checks(&mut out, &checks)?;
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

/// The shipped profiles grading each model: (model, profile, required level).
fn profile_levels() -> Vec<(String, String, Level)> {
    let dir = crate::util::paths::profiles_dir();
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|f| crate::grade::profile::Profile::load(f).ok())
        .map(|p| (p.model.name, p.name, p.accuracy.required))
        .collect()
}

/// Each zoo model's null check against its committed reference, at the strictest level its
/// shipped profiles require.
fn null_checks(m: &Manifest) -> Vec<NullCheck> {
    let levels = profile_levels();
    zoo::entries()
        .iter()
        .map(|e| {
            let mine: Vec<&(String, String, Level)> =
                levels.iter().filter(|(m, _, _)| m == e.name).collect();
            let required = mine.iter().map(|(_, _, l)| *l).max();
            let fp32 = m.find(e.name);
            let dir = crate::util::paths::references_dir().join(e.name);
            let opened = crate::accuracy::reference::Reference::open(&dir);
            let current = opened
                .as_ref()
                .ok()
                .and_then(|r| r.manifest.as_ref())
                .zip(fp32)
                .map(|(r, f)| r.model_sha256 == f.sha256);
            let (discrimination, unavailable) =
                match opened.and_then(|r| crate::accuracy::nulls::of_reference(&r, required)) {
                    Ok(d) => (Some(d), None),
                    Err(err) => (
                        None,
                        Some(format!(
                            "{err} (`acceval reference --model {}` computes it)",
                            e.name
                        )),
                    ),
                };
            NullCheck {
                model: e.name.to_string(),
                profiles: mine.iter().map(|(_, p, _)| p.clone()).collect(),
                required,
                trained: fp32.is_some_and(|f| f.training.is_some()),
                reference: dir.display().to_string(),
                reference_current: current,
                discrimination,
                unavailable,
            }
        })
        .collect()
}
