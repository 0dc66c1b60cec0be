//! `acceval cluster`: what a launcher told this process.

use crate::Outcome;
use crate::cli::ClusterCommand;
use crate::cluster::{Given, rank};

pub fn run(command: ClusterCommand) -> anyhow::Result<Outcome> {
    match command {
        ClusterCommand::Rank {
            rank: r,
            world_size,
            json,
        } => {
            let given = Given {
                rank: r,
                world_size,
            };
            let found = rank::from_env(given).map_err(|e| match e {
                rank::RankError::KubernetesNeedsSize { .. } => {
                    anyhow::anyhow!("{e} (--world-size M, M the Job's completions)")
                }
                rank::RankError::HalfManual => anyhow::anyhow!("{e}: --rank R --world-size N"),
                e => anyhow::anyhow!(
                    "{e}; for a launcher acceval does not read, give --rank and --world-size"
                ),
            })?;
            let host = Some(sysinfo::System::host_name().unwrap_or_default())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "n/a: no host name".into());
            if json {
                let mut v = serde_json::to_value(&found)?;
                v["host"] = host.into();
                println!("{v}");
            } else {
                println!(
                    "rank {} of {} on {host} (launcher: {}; local rank {}, node {})",
                    found.rank,
                    found.world_size,
                    found.launcher,
                    found
                        .local_rank
                        .map_or("n/a: not set by the launcher".into(), |v| v.to_string()),
                    found
                        .node
                        .map_or("n/a: not set by the launcher".into(), |v| v.to_string()),
                );
                if !found.source.is_empty() {
                    println!("from: {}", found.source.join(" "));
                }
                for n in &found.notes {
                    println!("note: {n}");
                }
            }
            Ok(Outcome::Ok)
        }
    }
}
