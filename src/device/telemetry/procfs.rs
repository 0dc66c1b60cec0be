//! CPU utilization from /proc/stat (total and per core) and the process's own CPU time and
//! resident memory from /proc/self.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Channel, Kind, Sensor};

// ---------------------------------------------------------------------------------------
// CPU: /proc/stat (total and per core).

/// (name, busy, total) ticks of each `cpu` line of /proc/stat. busy = user + nice + system
/// + irq + softirq + steal; idle = idle + iowait; guest time is inside user/nice.
pub fn parse_proc_stat(text: &str) -> Vec<(String, u64, u64)> {
    text.lines()
        .filter(|l| l.starts_with("cpu"))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next()?.to_string();
            let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
            if v.len() < 8 {
                return None;
            }
            let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
            let idle = v[3] + v[4];
            Some((name, busy, busy + idle))
        })
        .collect()
}

/// Utilization (%) between two readings; negative deltas (iowait can go back) clamp to 0.
pub fn util_pct(prev: (u64, u64), cur: (u64, u64)) -> f64 {
    let busy = cur.0.saturating_sub(prev.0) as f64;
    let total = cur.1.saturating_sub(prev.1) as f64;
    if total > 0.0 {
        100.0 * busy / total
    } else {
        f64::NAN
    }
}

pub struct CpuStat {
    path: PathBuf,
    prev: Vec<(String, u64, u64)>,
}

impl CpuStat {
    pub fn probe(path: &Path) -> Result<CpuStat, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let prev = parse_proc_stat(&text);
        if prev.is_empty() {
            return Err(format!("{} has no cpu lines", path.display()));
        }
        Ok(CpuStat {
            path: path.to_path_buf(),
            prev,
        })
    }
}

impl Sensor for CpuStat {
    fn name(&self) -> String {
        format!("cpu ({})", self.path.display())
    }
    fn channels(&self) -> Vec<Channel> {
        self.prev
            .iter()
            .map(|(n, _, _)| Channel {
                name: if n == "cpu" {
                    "cpu.util_pct".into()
                } else {
                    format!("{n}.util_pct")
                },
                kind: Kind::Utilization,
                device: "cpu".into(),
                definition: "100·Δbusy/Δ(busy+idle) over the tick, /proc/stat".into(),
            })
            .collect()
    }
    fn read(&mut self, out: &mut [f64]) {
        let cur = std::fs::read_to_string(&self.path)
            .map(|t| parse_proc_stat(&t))
            .unwrap_or_default();
        for (i, (name, b, t)) in self.prev.iter_mut().enumerate() {
            match cur.iter().find(|c| &c.0 == name) {
                Some(c) => {
                    out[i] = util_pct((*b, *t), (c.1, c.2));
                    (*b, *t) = (c.1, c.2);
                }
                None => out[i] = f64::NAN,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The process: CPU (utime + stime) and RSS from procfs.

/// USER_HZ: the kernel reports /proc times in 1/100 s on every architecture it supports
/// (`CLOCK_TICKS` is fixed for the user ABI).
const USER_HZ: f64 = 100.0;

/// utime + stime (ticks) from /proc/self/stat; the command name may hold spaces, so the
/// fields are counted after its closing parenthesis.
pub fn parse_self_stat(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ")": state is field 3, so utime (14) and stime (15) are f[11], f[12].
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// VmRSS of /proc/self/status, MB (10^6 bytes).
pub fn parse_vm_rss_mb(text: &str) -> Option<f64> {
    let l = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0 / 1e6)
}

pub struct ProcessStat {
    prev: (u64, Instant),
}

impl ProcessStat {
    pub fn probe() -> Result<ProcessStat, String> {
        let t = std::fs::read_to_string("/proc/self/stat")
            .map_err(|e| format!("cannot read /proc/self/stat: {e}"))?;
        let ticks = parse_self_stat(&t).ok_or("cannot parse /proc/self/stat")?;
        Ok(ProcessStat {
            prev: (ticks, Instant::now()),
        })
    }
}

impl Sensor for ProcessStat {
    fn name(&self) -> String {
        "process (/proc/self)".into()
    }
    fn channels(&self) -> Vec<Channel> {
        vec![
            Channel {
                name: "process.cpu_pct".into(),
                kind: Kind::Utilization,
                device: "process".into(),
                definition:
                    "acceval's CPU time (utime + stime) / wall time over the tick; 100 = one core"
                        .into(),
            },
            Channel {
                name: "process.rss_mb".into(),
                kind: Kind::Memory,
                device: "process".into(),
                definition: "resident set size (VmRSS), MB = 10^6 bytes".into(),
            },
        ]
    }
    fn read(&mut self, out: &mut [f64]) {
        let now = Instant::now();
        out[0] = match std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|t| parse_self_stat(&t))
        {
            Some(ticks) => {
                let dt = now.duration_since(self.prev.1).as_secs_f64();
                let v = 100.0 * ticks.saturating_sub(self.prev.0) as f64 / USER_HZ / dt;
                self.prev = (ticks, now);
                v
            }
            None => f64::NAN,
        };
        out[1] = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|t| parse_vm_rss_mb(&t))
            .unwrap_or(f64::NAN);
    }
}
