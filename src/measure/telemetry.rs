//! Telemetry (§7.1.4, §7.1.6, §7.1.7, §7.2.6): a sampler thread reads every sensor at a
//! fixed interval strictly inside the measured window (a tick at its start, one every
//! interval, one at its end), timestamps each tick and records missed ticks as gaps.
//!
//! Each sensor says whether it is available, or "n/a: <reason>"; a figure that could not
//! be measured is never reported as 0. Sensors give named channels of one kind each:
//! utilization (%), power (W), energy (a cumulative counter, J), memory (MB), clock (MHz),
//! temperature (°C). Energy over the window comes from a counter when the device has one
//! (NVML, RAPL), else from the trapezoid rule over its power samples.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Utilization,
    Power,
    Energy,
    Memory,
    Clock,
    Temperature,
    Other,
}

impl Kind {
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Utilization => "%",
            Kind::Power => "W",
            Kind::Energy => "J",
            Kind::Memory => "MB",
            Kind::Clock => "MHz",
            Kind::Temperature => "°C",
            Kind::Other => "",
        }
    }
}

/// One measured quantity, e.g. `gpu0.power_w`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Channel {
    pub name: String,
    pub kind: Kind,
    /// The device the channel belongs to (energy figures are per device).
    pub device: String,
    pub definition: String,
}

/// A source of channels.
pub trait Sensor: Send {
    fn name(&self) -> String;
    fn channels(&self) -> Vec<Channel>;
    /// Writes the current value of each channel (NaN when a read failed).
    fn read(&mut self, out: &mut [f64]);
}

/// Whether a sensor could be used.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SensorStatus {
    pub sensor: String,
    /// "available: ..." or "n/a: <reason>".
    pub status: String,
}

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

// ---------------------------------------------------------------------------------------
// NVIDIA: NVML.

pub struct Nvml {
    nvml: nvml_wrapper::Nvml,
    count: u32,
    first_energy_mj: Vec<Option<u64>>,
}

impl Nvml {
    pub fn probe() -> Result<Nvml, String> {
        let nvml = nvml_wrapper::Nvml::init()
            .map_err(|e| format!("NVML cannot be loaded ({e}): no NVIDIA driver"))?;
        let count = nvml.device_count().map_err(|e| e.to_string())?;
        if count == 0 {
            return Err("NVML lists no GPU".into());
        }
        let first_energy_mj = (0..count)
            .map(|i| {
                nvml.device_by_index(i)
                    .ok()
                    .and_then(|d| d.total_energy_consumption().ok())
            })
            .collect();
        Ok(Nvml {
            nvml,
            count,
            first_energy_mj,
        })
    }
}

const GPU_CHANNELS: [(&str, Kind, &str); 8] = [
    (
        "util_pct",
        Kind::Utilization,
        "NVML utilization.gpu: share of the last sample period (1/6–1 s) a kernel ran",
    ),
    (
        "mem_util_pct",
        Kind::Utilization,
        "NVML utilization.memory: share of time memory was read or written",
    ),
    (
        "mem_used_mb",
        Kind::Memory,
        "NVML memory_info.used, MB = 10^6 bytes",
    ),
    (
        "power_w",
        Kind::Power,
        "NVML power_usage (mW → W); a 1 s average on Ampere and later",
    ),
    (
        "energy_j",
        Kind::Energy,
        "NVML total_energy_consumption (mJ → J) since the window start",
    ),
    ("sm_clock_mhz", Kind::Clock, "NVML clock_info(SM)"),
    ("temp_c", Kind::Temperature, "NVML temperature(GPU)"),
    (
        "throttle_reasons",
        Kind::Other,
        "NVML current_throttle_reasons bit mask (0 = none)",
    ),
];

impl Sensor for Nvml {
    fn name(&self) -> String {
        format!("NVML ({} GPU)", self.count)
    }
    fn channels(&self) -> Vec<Channel> {
        (0..self.count)
            .flat_map(|i| {
                GPU_CHANNELS.iter().map(move |(n, k, d)| Channel {
                    name: format!("gpu{i}.{n}"),
                    kind: *k,
                    device: format!("gpu{i}"),
                    definition: d.to_string(),
                })
            })
            .collect()
    }
    fn read(&mut self, out: &mut [f64]) {
        use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
        for i in 0..self.count {
            let o = &mut out[i as usize * GPU_CHANNELS.len()..][..GPU_CHANNELS.len()];
            o.fill(f64::NAN);
            let Ok(d) = self.nvml.device_by_index(i) else {
                continue;
            };
            if let Ok(u) = d.utilization_rates() {
                o[0] = u.gpu as f64;
                o[1] = u.memory as f64;
            }
            if let Ok(m) = d.memory_info() {
                o[2] = m.used as f64 / 1e6;
            }
            if let Ok(p) = d.power_usage() {
                o[3] = p as f64 / 1e3;
            }
            if let (Ok(e), Some(first)) = (
                d.total_energy_consumption(),
                self.first_energy_mj[i as usize],
            ) {
                o[4] = e.saturating_sub(first) as f64 / 1e3;
            }
            if let Ok(c) = d.clock_info(Clock::SM) {
                o[5] = c as f64;
            }
            if let Ok(t) = d.temperature(TemperatureSensor::Gpu) {
                o[6] = t as f64;
            }
            if let Ok(r) = d.current_throttle_reasons() {
                o[7] = r.bits() as f64;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Ascend: DCMI (libdcmi.so at run time).

/// DCMI reports power as an integer in units of 0.1 W.
pub fn dcmi_power_w(raw: i32) -> f64 {
    raw as f64 / 10.0
}

/// DCMI `input_type` of `dcmi_get_device_utilization_rate` for the AI Core.
pub const DCMI_UTIL_AICORE: i32 = 2;
/// ... for the on-chip memory (HBM).
pub const DCMI_UTIL_HBM: i32 = 6;

type DcmiPower = unsafe extern "C" fn(i32, i32, *mut i32) -> i32;
type DcmiUtil = unsafe extern "C" fn(i32, i32, i32, *mut u32) -> i32;
type DcmiTemp = unsafe extern "C" fn(i32, i32, *mut i32) -> i32;

pub struct Dcmi {
    _lib: libloading::Library,
    power: DcmiPower,
    util: DcmiUtil,
    temp: DcmiTemp,
    npus: Vec<(i32, i32)>,
}

// SAFETY: the function pointers come from `_lib`, which the struct owns; DCMI asks for one
// thread at a time, and the sampler is the only caller.
unsafe impl Send for Dcmi {}

impl Dcmi {
    pub fn probe() -> Result<Dcmi, String> {
        let a = crate::device::ascend::identify();
        if a.npus.is_empty() {
            return Err(a
                .not_available
                .unwrap_or_else(|| "DCMI lists no NPU".into()));
        }
        for p in crate::device::ascend::DCMI_PATHS {
            // SAFETY: the vendor library, as `device::ascend` loads it; symbols with the
            // signatures of dcmi_interface_api.h.
            unsafe {
                let Ok(lib) = libloading::Library::new(p) else {
                    continue;
                };
                let get = |n: &[u8]| {
                    lib.get::<*const ()>(n)
                        .map(|s| *s)
                        .map_err(|e| format!("{p}: {e}"))
                };
                let power = get(b"dcmi_get_device_power_info\0")?;
                let util = get(b"dcmi_get_device_utilization_rate\0")?;
                let temp = get(b"dcmi_get_device_temperature\0")?;
                return Ok(Dcmi {
                    power: std::mem::transmute::<*const (), DcmiPower>(power),
                    util: std::mem::transmute::<*const (), DcmiUtil>(util),
                    temp: std::mem::transmute::<*const (), DcmiTemp>(temp),
                    npus: a.npus.iter().map(|n| (n.card_id, n.device_id)).collect(),
                    _lib: lib,
                });
            }
        }
        Err("libdcmi.so not found".into())
    }
}

impl Sensor for Dcmi {
    fn name(&self) -> String {
        format!("DCMI ({} NPU)", self.npus.len())
    }
    fn channels(&self) -> Vec<Channel> {
        self.npus
            .iter()
            .enumerate()
            .flat_map(|(i, _)| {
                [
                    (
                        "aicore_util_pct",
                        Kind::Utilization,
                        "DCMI utilization rate, input_type 2 (AI Core)",
                    ),
                    (
                        "hbm_util_pct",
                        Kind::Utilization,
                        "DCMI utilization rate, input_type 6 (HBM)",
                    ),
                    (
                        "power_w",
                        Kind::Power,
                        "DCMI device power info (0.1 W units → W), chip power",
                    ),
                    ("temp_c", Kind::Temperature, "DCMI device temperature"),
                ]
                .map(|(n, k, d)| Channel {
                    name: format!("npu{i}.{n}"),
                    kind: k,
                    device: format!("npu{i}"),
                    definition: d.into(),
                })
            })
            .collect()
    }
    fn read(&mut self, out: &mut [f64]) {
        for (i, &(card, dev)) in self.npus.iter().enumerate() {
            let o = &mut out[i * 4..][..4];
            o.fill(f64::NAN);
            // SAFETY: valid out-pointers to locals; signatures per dcmi_interface_api.h.
            unsafe {
                let mut u = 0u32;
                if (self.util)(card, dev, DCMI_UTIL_AICORE, &mut u) == 0 {
                    o[0] = u as f64;
                }
                if (self.util)(card, dev, DCMI_UTIL_HBM, &mut u) == 0 {
                    o[1] = u as f64;
                }
                let mut p = 0i32;
                if (self.power)(card, dev, &mut p) == 0 {
                    o[2] = dcmi_power_w(p);
                }
                let mut t = 0i32;
                if (self.temp)(card, dev, &mut t) == 0 {
                    o[3] = t as f64;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Whole-node power: IPMI DCMI, and a power analyser through SPEC PTDaemon.

/// `Instantaneous power reading: 220 Watts` from `ipmitool dcmi power reading`; `None`
/// when absent, deactivated, or 0 (unsupported).
pub fn parse_ipmi_power(text: &str) -> Option<f64> {
    if text.contains("deactivated") {
        return None;
    }
    let l = text
        .lines()
        .find(|l| l.trim_start().starts_with("Instantaneous power reading"))?;
    let w: f64 = l
        .split(':')
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    (w > 0.0).then_some(w)
}

pub struct Ipmi;

fn ipmitool() -> Result<String, String> {
    let o = std::process::Command::new("ipmitool")
        .args(["dcmi", "power", "reading"])
        .output()
        .map_err(|e| {
            format!("ipmitool not runnable ({e}); install ipmitool and load ipmi_si/ipmi_devintf")
        })?;
    if !o.status.success() {
        return Err(format!(
            "ipmitool dcmi power reading failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

impl Ipmi {
    pub fn probe() -> Result<Ipmi, String> {
        let t = ipmitool()?;
        parse_ipmi_power(&t)
            .map(|_| Ipmi)
            .ok_or_else(|| "the BMC gives no power reading (deactivated or 0 W)".into())
    }
}

impl Sensor for Ipmi {
    fn name(&self) -> String {
        "IPMI DCMI (ipmitool)".into()
    }
    fn channels(&self) -> Vec<Channel> {
        vec![Channel {
            name: "node.power_w".into(),
            kind: Kind::Power,
            device: "node (IPMI)".into(),
            definition:
                "ipmitool dcmi power reading: instantaneous node power, W (BMC refresh ~1 s)".into(),
        }]
    }
    fn read(&mut self, out: &mut [f64]) {
        out[0] = ipmitool()
            .ok()
            .and_then(|t| parse_ipmi_power(&t))
            .unwrap_or(f64::NAN);
    }
}

/// A client of SPEC PTDaemon's line protocol (TCP, CRLF; `Hello`, `Watts`).
pub struct Ptd {
    addr: String,
    reader: BufReader<std::net::TcpStream>,
    writer: std::net::TcpStream,
}

impl Ptd {
    pub fn connect(addr: &str) -> Result<Ptd, String> {
        use std::net::ToSocketAddrs;
        let sa = addr
            .to_socket_addrs()
            .map_err(|e| format!("--ptd {addr}: {e}"))?
            .next()
            .ok_or_else(|| format!("--ptd {addr}: no address"))?;
        let s = std::net::TcpStream::connect_timeout(&sa, Duration::from_secs(3))
            .map_err(|e| format!("cannot connect to PTDaemon at {addr}: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok();
        let writer = s.try_clone().map_err(|e| e.to_string())?;
        let mut p = Ptd {
            addr: addr.to_string(),
            reader: BufReader::new(s),
            writer,
        };
        let hello = p.command("Hello")?;
        if !hello.starts_with("Hello") {
            return Err(format!(
                "{addr} answered '{hello}' to Hello: not a PTDaemon"
            ));
        }
        Ok(p)
    }
    fn command(&mut self, cmd: &str) -> Result<String, String> {
        self.writer
            .write_all(format!("{cmd}\r\n").as_bytes())
            .map_err(|e| format!("PTDaemon {}: {e}", self.addr))?;
        let mut line = String::new();
        self.reader
            .read_line(&mut line)
            .map_err(|e| format!("PTDaemon {}: {e}", self.addr))?;
        Ok(line.trim().to_string())
    }
}

/// `Watts,22.95` → 22.95.
pub fn parse_ptd_watts(line: &str) -> Option<f64> {
    let v: f64 = line.strip_prefix("Watts,")?.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

impl Sensor for Ptd {
    fn name(&self) -> String {
        format!("PTDaemon ({})", self.addr)
    }
    fn channels(&self) -> Vec<Channel> {
        vec![Channel {
            name: "wall.power_w".into(),
            kind: Kind::Power,
            device: "wall (power analyser)".into(),
            definition: "SPEC PTDaemon 'Watts': the analyser's last reading at the wall, W".into(),
        }]
    }
    fn read(&mut self, out: &mut [f64]) {
        out[0] = self
            .command("Watts")
            .ok()
            .and_then(|l| parse_ptd_watts(&l))
            .unwrap_or(f64::NAN);
    }
}

// ---------------------------------------------------------------------------------------
// Probing and sampling.

/// What to probe.
#[derive(Debug, Clone, Default)]
pub struct ProbeOptions {
    pub ptd: Option<String>,
    /// Where RAPL lives (tests point it at recorded files).
    pub powercap: Option<PathBuf>,
}

/// Every sensor of this machine, with the status of each one tried.
pub fn probe(o: &ProbeOptions) -> (Vec<Box<dyn Sensor>>, Vec<SensorStatus>) {
    let mut sensors: Vec<Box<dyn Sensor>> = Vec::new();
    let mut status = Vec::new();
    let mut add = |name: &str, r: Result<Box<dyn Sensor>, String>| match r {
        Ok(s) => {
            status.push(SensorStatus {
                sensor: name.into(),
                status: format!("available: {}", s.name()),
            });
            sensors.push(s);
        }
        Err(e) => status.push(SensorStatus {
            sensor: name.into(),
            status: format!("n/a: {e}"),
        }),
    };
    add(
        "cpu",
        CpuStat::probe(Path::new("/proc/stat")).map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    add(
        "process",
        ProcessStat::probe().map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    add(
        "nvml",
        Nvml::probe().map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    add(
        "dcmi",
        Dcmi::probe().map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    let powercap = o
        .powercap
        .clone()
        .unwrap_or_else(|| PathBuf::from("/sys/class/powercap"));
    add(
        "rapl",
        Rapl::probe(&powercap).map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    add(
        "ipmi",
        Ipmi::probe().map(|s| Box::new(s) as Box<dyn Sensor>),
    );
    match &o.ptd {
        Some(a) => add(
            "ptdaemon",
            Ptd::connect(a).map(|s| Box::new(s) as Box<dyn Sensor>),
        ),
        None => add("ptdaemon", Err("no --ptd HOST:PORT given".into())),
    }
    (sensors, status)
}

/// One tick: its time from the window start and every channel's value.
#[derive(Debug, Clone, Serialize)]
pub struct Tick {
    pub t_ms: f64,
    pub values: Vec<f64>,
}

/// Ticks that came late by more than half an interval.
#[derive(Debug, Clone, Serialize)]
pub struct Gap {
    pub at_ms: f64,
    pub missed_ticks: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Recording {
    pub interval_ms: f64,
    pub channels: Vec<Channel>,
    pub ticks: Vec<Tick>,
    pub gaps: Vec<Gap>,
}

pub struct Sampler {
    stop: mpsc::Sender<()>,
    handle: std::thread::JoinHandle<Recording>,
}

/// Starts sampling now: a tick at once (the window start), then every `interval`.
pub fn start(mut sensors: Vec<Box<dyn Sensor>>, interval: Duration) -> Sampler {
    let (tx, rx) = mpsc::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let handle = std::thread::spawn(move || {
        let channels: Vec<Channel> = sensors.iter().flat_map(|s| s.channels()).collect();
        let widths: Vec<usize> = sensors.iter().map(|s| s.channels().len()).collect();
        let mut ticks = Vec::with_capacity(64);
        let mut gaps = Vec::new();
        let t0 = Instant::now();
        let mut read_all = |t0: Instant| {
            let mut values = vec![f64::NAN; channels.len()];
            let mut off = 0;
            for (s, w) in sensors.iter_mut().zip(&widths) {
                s.read(&mut values[off..off + w]);
                off += w;
            }
            Tick {
                t_ms: t0.elapsed().as_secs_f64() * 1e3,
                values,
            }
        };
        // The first tick is the baseline: utilizations are deltas over the previous tick,
        // and before the window there is none inside it.
        let mut first = read_all(t0);
        for (v, c) in first.values.iter_mut().zip(&channels) {
            if c.kind == Kind::Utilization {
                *v = f64::NAN;
            }
        }
        ticks.push(first);
        let _ = ready_tx.send(());
        let mut k = 1u64;
        loop {
            let due = t0 + interval * k as u32;
            let now = Instant::now();
            let wait = due.saturating_duration_since(now);
            match rx.recv_timeout(wait) {
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let late = Instant::now().duration_since(due);
                    let missed = (late.as_secs_f64() / interval.as_secs_f64()) as u64;
                    if late > interval / 2 {
                        gaps.push(Gap {
                            at_ms: t0.elapsed().as_secs_f64() * 1e3,
                            missed_ticks: missed.max(1),
                        });
                    }
                    ticks.push(read_all(t0));
                    k += 1 + missed;
                }
                // Stopped (or the harness went away): one last tick at the window end. A
                // utilization over a sliver of time (under half an interval) is mostly
                // counter granularity (/proc ticks are 10 ms): it is left out.
                _ => {
                    let mut last = read_all(t0);
                    let prev = ticks.last().map(|t: &Tick| t.t_ms).unwrap_or(0.0);
                    if last.t_ms - prev < interval.as_secs_f64() * 1e3 / 2.0 {
                        for (v, c) in last.values.iter_mut().zip(&channels) {
                            if c.kind == Kind::Utilization {
                                *v = f64::NAN;
                            }
                        }
                    }
                    ticks.push(last);
                    break;
                }
            }
        }
        Recording {
            interval_ms: interval.as_secs_f64() * 1e3,
            channels,
            ticks,
            gaps,
        }
    });
    // The first tick marks the window start: wait for it.
    let _ = ready_rx.recv();
    Sampler { stop: tx, handle }
}

impl Sampler {
    /// Ends the window with a last tick and returns the recording.
    pub fn stop(self) -> Recording {
        let _ = self.stop.send(());
        self.handle.join().unwrap_or_else(|_| Recording {
            interval_ms: 0.0,
            channels: Vec::new(),
            ticks: Vec::new(),
            gaps: Vec::new(),
        })
    }
}

/// A channel over the window.
#[derive(Debug, Clone, Serialize)]
pub struct ChannelSummary {
    pub name: String,
    pub kind: Kind,
    pub unit: &'static str,
    /// Mean of the samples (S/N over the window).
    pub mean: Option<f64>,
    pub max: Option<f64>,
    pub samples: usize,
    pub definition: String,
}

/// Energy of one device over the window.
#[derive(Debug, Clone, Serialize)]
pub struct EnergyFigure {
    pub device: String,
    pub joules: f64,
    /// "energy counter" or "trapezoid of power samples".
    pub method: &'static str,
    pub average_power_w: f64,
    pub peak_power_w: Option<f64>,
    /// Inferences (samples) per joule over the window.
    pub inferences_per_joule: Option<f64>,
    /// Input megabytes per joule.
    pub mb_per_joule: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TelemetrySummary {
    pub interval_ms: f64,
    pub window_s: f64,
    pub ticks: usize,
    pub gaps: Vec<Gap>,
    pub sensors: Vec<SensorStatus>,
    pub channels: Vec<ChannelSummary>,
    pub energy: Vec<EnergyFigure>,
    /// Why there is no energy figure, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_unavailable: Option<String>,
}

/// Trapezoid rule over (t_s, value) points, skipping NaN values.
pub fn trapezoid(points: &[(f64, f64)]) -> f64 {
    let p: Vec<&(f64, f64)> = points.iter().filter(|(_, v)| v.is_finite()).collect();
    p.windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum()
}

/// Summarises a recording; `inferences` and `input_mb` give the efficiency figures.
pub fn summarise(
    r: &Recording,
    sensors: Vec<SensorStatus>,
    inferences: u64,
    input_mb: f64,
) -> TelemetrySummary {
    let window_s = r.ticks.last().map(|t| t.t_ms / 1e3).unwrap_or(0.0);
    let mut channels = Vec::new();
    for (i, c) in r.channels.iter().enumerate() {
        if c.kind == Kind::Energy {
            continue;
        }
        let v: Vec<f64> = r
            .ticks
            .iter()
            .map(|t| t.values[i])
            .filter(|v| v.is_finite())
            .collect();
        channels.push(ChannelSummary {
            name: c.name.clone(),
            kind: c.kind,
            unit: c.kind.unit(),
            mean: (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64),
            max: v.iter().copied().reduce(f64::max),
            samples: v.len(),
            definition: c.definition.clone(),
        });
    }
    let mut energy = Vec::new();
    let mut devices: Vec<&str> = r.channels.iter().map(|c| c.device.as_str()).collect();
    devices.dedup();
    for d in devices {
        let idx = |k: Kind| r.channels.iter().position(|c| c.device == d && c.kind == k);
        let power_points: Option<Vec<(f64, f64)>> = idx(Kind::Power).map(|i| {
            r.ticks
                .iter()
                .map(|t| (t.t_ms / 1e3, t.values[i]))
                .collect()
        });
        let peak = power_points.as_ref().and_then(|p| {
            p.iter()
                .map(|x| x.1)
                .filter(|v| v.is_finite())
                .reduce(f64::max)
        });
        let counter = idx(Kind::Energy).and_then(|i| {
            let v: Vec<(f64, f64)> = r
                .ticks
                .iter()
                .map(|t| (t.t_ms / 1e3, t.values[i]))
                .filter(|x| x.1.is_finite())
                .collect();
            (v.len() >= 2).then(|| (v[v.len() - 1].1 - v[0].1, v[v.len() - 1].0 - v[0].0))
        });
        let (joules, method, secs) = match (counter, &power_points) {
            (Some((j, s)), _) => (j, "energy counter", s),
            (None, Some(p)) if p.iter().filter(|x| x.1.is_finite()).count() >= 2 => {
                let f: Vec<&(f64, f64)> = p.iter().filter(|x| x.1.is_finite()).collect();
                (
                    trapezoid(p),
                    "trapezoid of power samples",
                    f[f.len() - 1].0 - f[0].0,
                )
            }
            _ => continue,
        };
        energy.push(EnergyFigure {
            device: d.to_string(),
            joules,
            method,
            average_power_w: if secs > 0.0 { joules / secs } else { f64::NAN },
            peak_power_w: peak,
            inferences_per_joule: (joules > 0.0).then(|| inferences as f64 / joules),
            mb_per_joule: (joules > 0.0).then(|| input_mb / joules),
        });
    }
    let energy_unavailable = energy.is_empty().then(|| {
        let why: Vec<String> = sensors
            .iter()
            .filter(|s| {
                matches!(
                    s.sensor.as_str(),
                    "nvml" | "dcmi" | "rapl" | "ipmi" | "ptdaemon"
                )
            })
            .map(|s| format!("{}: {}", s.sensor, s.status))
            .collect();
        format!("n/a: no power or energy sensor here ({})", why.join("; "))
    });
    TelemetrySummary {
        interval_ms: r.interval_ms,
        window_s,
        ticks: r.ticks.len(),
        gaps: r.gaps.clone(),
        sensors,
        channels,
        energy,
        energy_unavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_utilization() {
        let a = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\nintr 1\n";
        let b = "cpu  160 0 70 900 50 0 0 0 0 0\ncpu0 80 0 30 400 25 0 0 0 0 0\n";
        let (pa, pb) = (parse_proc_stat(a), parse_proc_stat(b));
        assert_eq!(pa.len(), 2);
        // Δbusy = 80, Δidle = 100: 80 / 180.
        assert!((util_pct((pa[0].1, pa[0].2), (pb[0].1, pb[0].2)) - 800.0 / 18.0).abs() < 1e-9);
        // cpu0: Δbusy 35, Δidle 0: 100 %.
        assert_eq!(util_pct((pa[1].1, pa[1].2), (pb[1].1, pb[1].2)), 100.0);
        assert!(util_pct((5, 5), (5, 5)).is_nan());
    }

    #[test]
    fn self_stat_and_rss() {
        // Fields 14/15 (utime 120, stime 30) after a command name with spaces.
        let s = "1234 (my prog (x)) R 1 2 3 4 5 6 7 8 9 10 120 30 0 0 20 0 1 0 100 200 300";
        assert_eq!(parse_self_stat(s), Some(150));
        assert_eq!(
            parse_vm_rss_mb("Name:\tx\nVmRSS:\t  2048 kB\n"),
            Some(2048.0 * 1024.0 / 1e6)
        );
    }

    #[test]
    fn rapl_counter_wraps() {
        // Recorded on an Intel package: max_energy_range_uj 262143328850.
        let max = 262_143_328_850u64;
        let mut c = RaplCounter::new(max - 1_000_000, max);
        c.update(max - 400_000); // +0.6 J
        c.update(500_000); // wrapped: +0.4 J + 0.5 J
        assert_eq!(c.total_uj, 1_500_000);
    }

    #[test]
    fn rapl_zones_from_recorded_files() {
        let d = tempfile::tempdir().unwrap();
        let z = d.path().join("intel-rapl:0");
        std::fs::create_dir_all(z.join("intel-rapl:0:0")).unwrap();
        std::fs::create_dir_all(d.path().join("intel-rapl:0:0")).unwrap();
        std::fs::write(z.join("name"), "package-0\n").unwrap();
        std::fs::write(z.join("energy_uj"), "1000000\n").unwrap();
        std::fs::write(z.join("max_energy_range_uj"), "262143328850\n").unwrap();
        let mut r = Rapl::probe(d.path()).unwrap();
        let ch = r.channels();
        assert_eq!(ch.len(), 1);
        assert_eq!(ch[0].name, "rapl.package-0.energy_j");
        std::fs::write(z.join("energy_uj"), "3500000\n").unwrap();
        let mut v = [0.0];
        r.read(&mut v);
        assert_eq!(v[0], 2.5);
        assert!(Rapl::probe(&d.path().join("none")).is_err());
    }

    #[test]
    fn dcmi_units_and_ipmi_ptd_parsing() {
        // Recorded DCMI values: 91 → 9.1 W ("NPU Real-time Power(W) : 9.1" in npu-smi).
        assert_eq!(dcmi_power_w(91), 9.1);
        assert_eq!(dcmi_power_w(3105), 310.5);
        let ipmi = "\n    Instantaneous power reading:                   220 Watts\n    Minimum during sampling period:                 88 Watts\n    Power reading state is:                   activated\n";
        assert_eq!(parse_ipmi_power(ipmi), Some(220.0));
        assert_eq!(
            parse_ipmi_power(
                "Instantaneous power reading: 0 Watts\nPower reading state is: deactivated"
            ),
            None
        );
        assert_eq!(parse_ptd_watts("Watts,22.950000"), Some(22.95));
        assert_eq!(parse_ptd_watts("Error: no data"), None);
    }

    #[test]
    fn energy_from_counter_or_trapezoid() {
        let ch = |name: &str, kind, device: &str| Channel {
            name: name.into(),
            kind,
            device: device.into(),
            definition: String::new(),
        };
        let r = Recording {
            interval_ms: 1000.0,
            channels: vec![
                ch("node.power_w", Kind::Power, "node"),
                ch("gpu0.power_w", Kind::Power, "gpu0"),
                ch("gpu0.energy_j", Kind::Energy, "gpu0"),
            ],
            ticks: vec![
                Tick {
                    t_ms: 0.0,
                    values: vec![100.0, 50.0, 0.0],
                },
                Tick {
                    t_ms: 1000.0,
                    values: vec![200.0, 70.0, 60.0],
                },
                Tick {
                    t_ms: 1500.0,
                    values: vec![200.0, f64::NAN, 95.0],
                },
            ],
            gaps: vec![],
        };
        let s = summarise(&r, vec![], 300, 3.0);
        // node: trapezoid (100+200)/2·1 + 200·0.5 = 250 J over 1.5 s.
        let node = s.energy.iter().find(|e| e.device == "node").unwrap();
        assert_eq!(
            (node.joules, node.method),
            (250.0, "trapezoid of power samples")
        );
        assert!((node.average_power_w - 250.0 / 1.5).abs() < 1e-12);
        assert_eq!(node.peak_power_w, Some(200.0));
        assert_eq!(node.inferences_per_joule, Some(300.0 / 250.0));
        // gpu0: the counter wins over its power samples.
        let g = s.energy.iter().find(|e| e.device == "gpu0").unwrap();
        assert_eq!((g.joules, g.method), (95.0, "energy counter"));
        assert!(s.energy_unavailable.is_none());
        let empty = summarise(
            &Recording {
                interval_ms: 1000.0,
                channels: vec![],
                ticks: vec![],
                gaps: vec![],
            },
            vec![SensorStatus {
                sensor: "rapl".into(),
                status: "n/a: no RAPL".into(),
            }],
            0,
            0.0,
        );
        assert!(
            empty
                .energy_unavailable
                .unwrap()
                .contains("rapl: n/a: no RAPL")
        );
    }
}
