//! Which network interfaces a listening address reaches, for the warning `serve` prints when
//! it binds beyond loopback (`0.0.0.0`, `::` or a routable address).

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use super::{Setting, SettingNames};

/// A listening address that other machines may reach, with the interfaces behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exposure {
    pub addr: SocketAddr,
    /// (interface name, address) pairs the listener answers on.
    pub interfaces: Vec<(String, IpAddr)>,
    pub api_key: bool,
    pub tls: bool,
}

/// `None` when `addr` is a loopback address; else what it reaches. `::` also reaches every
/// IPv4 address (Linux binds it dual-stack by default).
pub fn exposure(addr: SocketAddr, api_key: bool, tls: bool) -> Option<Exposure> {
    let ip = addr.ip();
    if ip.is_loopback() {
        return None;
    }
    let all = if_addrs::get_if_addrs().unwrap_or_default();
    let interfaces = all
        .into_iter()
        .map(|i| (i.name.clone(), i.ip()))
        .filter(|(_, a)| match ip {
            IpAddr::V4(v4) if v4.is_unspecified() => a.is_ipv4(),
            IpAddr::V6(v6) if v6.is_unspecified() => true,
            other => *a == other,
        })
        .collect();
    Some(Exposure {
        addr,
        interfaces,
        api_key,
        tls,
    })
}

impl fmt::Display for Exposure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(Setting::field))
    }
}

impl Exposure {
    /// The warning, naming the settings that would close the exposure as `names` says.
    pub fn describe(&self, names: SettingNames) -> String {
        use fmt::Write;
        let mut f = String::new();
        let list = if self.interfaces.is_empty() {
            "none found".to_string()
        } else {
            self.interfaces
                .iter()
                .map(|(n, a)| format!("{n} {a}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let what = if self.addr.ip().is_unspecified() {
            "every interface"
        } else {
            "beyond loopback"
        };
        let tls_names = format!("{}/{}", names(Setting::TlsCert), names(Setting::TlsKey));
        let _ = write!(f, "listening on {} reaches {what}: {list}.", self.addr);
        let _ = match (self.api_key, self.tls) {
            (true, true) => write!(f, " Requests need the API key; traffic is TLS."),
            (true, false) => write!(
                f,
                " Requests need the API key, but it and the tensors cross the network in clear text ({tls_names})."
            ),
            (false, tls) => write!(
                f,
                " Anyone who reaches it can run the model: there is no authentication ({}){}.",
                names(Setting::ApiKey),
                if tls {
                    String::new()
                } else {
                    format!(" and no TLS ({tls_names})")
                }
            ),
        };
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_quiet_and_the_rest_names_interfaces() {
        assert!(exposure("127.0.0.1:8000".parse().unwrap(), false, false).is_none());
        assert!(exposure("[::1]:8000".parse().unwrap(), false, false).is_none());
        let e = exposure("0.0.0.0:8000".parse().unwrap(), false, false).unwrap();
        // Every machine has a loopback interface, which 0.0.0.0 reaches.
        assert!(e.interfaces.iter().any(|(_, a)| a.is_loopback()), "{e:?}");
        let s = e.to_string();
        assert!(
            s.contains("every interface") && s.contains("127.0.0.1"),
            "{s}"
        );
        assert!(s.contains("no authentication (api_key)"), "{s}");
        let named = e.describe(|s| {
            if s == Setting::ApiKey {
                "--api-key"
            } else {
                "?"
            }
        });
        assert!(named.contains("no authentication (--api-key)"), "{named}");
        let any6 = exposure("[::]:8000".parse().unwrap(), true, true).unwrap();
        assert!(any6.interfaces.iter().any(|(_, a)| a.is_ipv4()), "{any6:?}");
        assert!(any6.to_string().contains("traffic is TLS"));
    }
}
