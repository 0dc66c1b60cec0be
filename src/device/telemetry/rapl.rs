//! Intel/AMD RAPL energy counters through /sys/class/powercap (package and DRAM zones).

use std::path::{Path, PathBuf};

use super::{Channel, Kind, Sensor};

// ---------------------------------------------------------------------------------------
// RAPL: /sys/class/powercap package zones, cumulative energy with wraparound.

/// One RAPL zone's counter, unwrapped.
#[derive(Debug, Clone)]
pub struct RaplCounter {
    pub max_range_uj: u64,
    last_uj: u64,
    /// Energy since the first reading, µJ.
    pub total_uj: u64,
}

impl RaplCounter {
    pub fn new(first_uj: u64, max_range_uj: u64) -> RaplCounter {
        RaplCounter {
            max_range_uj,
            last_uj: first_uj,
            total_uj: 0,
        }
    }
    /// Adds a reading; a counter that went back wrapped at `max_energy_range_uj`.
    pub fn update(&mut self, uj: u64) {
        let d = if uj >= self.last_uj {
            uj - self.last_uj
        } else {
            uj + self.max_range_uj.saturating_sub(self.last_uj)
        };
        self.total_uj += d;
        self.last_uj = uj;
    }
}

pub struct Rapl {
    zones: Vec<(String, PathBuf, RaplCounter)>,
}

fn read_u64(p: &Path) -> Result<u64, String> {
    let s = std::fs::read_to_string(p).map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            format!("{}: permission denied (root only since Linux 5.10, CVE-2020-8694; run as root or chmod o+r)", p.display())
        } else {
            format!("{}: {e}", p.display())
        }
    })?;
    s.trim()
        .parse()
        .map_err(|_| format!("{}: not a number", p.display()))
}

impl Rapl {
    /// The top-level package (or psys) zones under `root` (`/sys/class/powercap`).
    pub fn probe(root: &Path) -> Result<Rapl, String> {
        let rd = std::fs::read_dir(root).map_err(|e| {
            format!(
                "no RAPL: {} ({e}; powercap is absent in containers and VMs)",
                root.display()
            )
        })?;
        let mut dirs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("intel-rapl:") && n.matches(':').count() == 1)
            })
            .collect();
        dirs.sort();
        if dirs.is_empty() {
            return Err(format!("no RAPL package zone under {}", root.display()));
        }
        let mut zones = Vec::new();
        for d in dirs {
            let name = std::fs::read_to_string(d.join("name"))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| d.file_name().unwrap().to_string_lossy().into_owned());
            let first = read_u64(&d.join("energy_uj"))?;
            let max = read_u64(&d.join("max_energy_range_uj"))?;
            zones.push((name, d.join("energy_uj"), RaplCounter::new(first, max)));
        }
        Ok(Rapl { zones })
    }
}

impl Sensor for Rapl {
    fn name(&self) -> String {
        "RAPL (powercap)".into()
    }
    fn channels(&self) -> Vec<Channel> {
        self.zones
            .iter()
            .map(|(n, _, _)| Channel {
                name: format!("rapl.{n}.energy_j"),
                kind: Kind::Energy,
                device: format!("rapl.{n}"),
                definition: "RAPL energy counter (energy_uj, unwrapped at max_energy_range_uj), J since the window start; a package model, not wall power".into(),
            })
            .collect()
    }
    fn read(&mut self, out: &mut [f64]) {
        for (i, (_, p, c)) in self.zones.iter_mut().enumerate() {
            out[i] = match read_u64(p) {
                Ok(uj) => {
                    c.update(uj);
                    c.total_uj as f64 / 1e6
                }
                Err(_) => f64::NAN,
            };
        }
    }
}
