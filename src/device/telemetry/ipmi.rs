//! Whole-node power from the BMC: `ipmitool dcmi power reading`.

use super::{Channel, Kind, Sensor};

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
