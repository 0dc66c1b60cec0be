//! Wall power from a power analyser through SPEC PTDaemon's line protocol (TCP, CRLF).

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use super::{Channel, Kind, Sensor};

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
