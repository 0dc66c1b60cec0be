//! The ranks' meeting point when no MPI is linked (issue 25, point 2): rank 0 listens at
//! `MASTER_ADDR:MASTER_PORT` (torchrun's convention), every other rank connects and says
//! who it is. Over those connections: barriers (every rank sends `ready`, rank 0 answers
//! `go` once all have) and clock-offset probes (NTP's four timestamps, rank 0's clock as
//! the reference). A line protocol over TCP; every wait has a deadline, and a rank that
//! does not come or goes silent is named in the error.
//!
//! Written here rather than taken from a crate: the protocol is a few lines of text, and the
//! crates that offer rendezvous (MPI bindings, torch's c10d store) bring a runtime acceval
//! would otherwise not need.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch on this host's clock.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Why the ranks could not meet.
#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    #[error("rank 0 cannot listen at {addr}: {err}")]
    Listen { addr: String, err: std::io::Error },
    #[error("rank {rank} could not reach rank 0 at {addr} within {secs:.0} s: {err}")]
    Connect {
        rank: usize,
        addr: String,
        secs: f64,
        err: String,
    },
    #[error("rank(s) {missing:?} did not join within {secs:.0} s")]
    Missing { missing: Vec<usize>, secs: f64 },
    #[error("rank {rank}: {what}")]
    Peer { rank: usize, what: String },
    #[error("a peer said '{line}', expected {expected}")]
    Protocol {
        line: String,
        expected: &'static str,
    },
}

type Result<T> = std::result::Result<T, RendezvousError>;

/// One NTP-style exchange: rank 0 sends at `t0`, the peer receives at `t1` and replies at
/// `t2` (its clock), rank 0 receives at `t3`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    pub t0: f64,
    pub t1: f64,
    pub t2: f64,
    pub t3: f64,
}

impl Probe {
    /// θ = ((t1 − t0) + (t2 − t3)) / 2: the peer's clock minus rank 0's.
    pub fn offset(&self) -> f64 {
        ((self.t1 - self.t0) + (self.t2 - self.t3)) / 2.0
    }
    /// δ = (t3 − t0) − (t2 − t1): the network round trip; |error of θ| ≤ δ / 2.
    pub fn delay(&self) -> f64 {
        (self.t3 - self.t0) - (self.t2 - self.t1)
    }
}

/// A peer clock's offset from rank 0's: the probe with the smallest round trip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Offset {
    /// Peer clock − rank 0 clock, s (a peer time t is rank 0's t − offset).
    pub offset_s: f64,
    /// Half the round trip of that probe: the bound on the offset's error, s.
    pub error_s: f64,
    pub probes: usize,
}

/// The best of `probes` (smallest round trip), or `None` for none.
pub fn best_offset(probes: &[Probe]) -> Option<Offset> {
    probes
        .iter()
        .filter(|p| p.delay().is_finite())
        .min_by(|a, b| a.delay().total_cmp(&b.delay()))
        .map(|p| Offset {
            offset_s: p.offset(),
            error_s: p.delay().max(0.0) / 2.0,
            probes: probes.len(),
        })
}

/// A line-based connection with a read deadline.
struct Line {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Line {
    fn new(s: TcpStream, timeout: Duration) -> std::io::Result<Line> {
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        Ok(Line {
            writer: s.try_clone()?,
            reader: BufReader::new(s),
        })
    }
    fn send(&mut self, text: &str) -> std::io::Result<()> {
        self.writer.write_all(format!("{text}\n").as_bytes())
    }
    fn recv(&mut self) -> std::io::Result<String> {
        let mut l = String::new();
        if self.reader.read_line(&mut l)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the connection closed",
            ));
        }
        Ok(l.trim_end().to_string())
    }
}

/// Rank 0's side: a connection to every other rank, by rank.
pub struct Coordinator {
    peers: Vec<(usize, Line)>,
    timeout: Duration,
}

/// Another rank's side: its connection to rank 0.
pub struct Member {
    rank: usize,
    line: Line,
}

/// A rank's place in the rendezvous.
pub enum Node {
    Coordinator(Coordinator),
    Member(Member),
}

/// Meets the other ranks: rank 0 listens at `addr` and waits for `world - 1` ranks;
/// the others connect (retrying until the deadline: rank 0 may start later). `timeout`
/// bounds the joining and every later wait.
pub fn join(rank: usize, world: usize, addr: &str, timeout: Duration) -> Result<Node> {
    if rank == 0 {
        coordinate(world, addr, timeout).map(Node::Coordinator)
    } else {
        member(rank, addr, timeout).map(Node::Member)
    }
}

fn coordinate(world: usize, addr: &str, timeout: Duration) -> Result<Coordinator> {
    let listen_err = |err| RendezvousError::Listen {
        addr: addr.to_string(),
        err,
    };
    let listener = TcpListener::bind(addr).map_err(listen_err)?;
    listener.set_nonblocking(true).map_err(listen_err)?;
    let deadline = Instant::now() + timeout;
    let mut peers: Vec<(usize, Line)> = Vec::new();
    while peers.len() + 1 < world {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = s.set_nonblocking(false);
                // A connection that does not say who it is within 5 s is dropped.
                let Ok(mut line) = Line::new(s, timeout.min(Duration::from_secs(5))) else {
                    continue;
                };
                let hello = line.recv().unwrap_or_default();
                let _ = line.reader.get_ref().set_read_timeout(Some(timeout));
                let r = hello
                    .strip_prefix("hello ")
                    .and_then(|r| r.trim().parse::<usize>().ok());
                match r {
                    Some(r) if r > 0 && r < world && !peers.iter().any(|(p, _)| *p == r) => {
                        peers.push((r, line));
                    }
                    _ => {
                        let _ = line.send("error: not a rank of this run");
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let missing = (1..world)
                        .filter(|r| !peers.iter().any(|(p, _)| p == r))
                        .collect();
                    return Err(RendezvousError::Missing {
                        missing,
                        secs: timeout.as_secs_f64(),
                    });
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(listen_err(e)),
        }
    }
    peers.sort_by_key(|(r, _)| *r);
    for (_, l) in &mut peers {
        let _ = l.send("welcome");
    }
    Ok(Coordinator { peers, timeout })
}

fn member(rank: usize, addr: &str, timeout: Duration) -> Result<Member> {
    let deadline = Instant::now() + timeout;
    let err = |e: String| RendezvousError::Connect {
        rank,
        addr: addr.to_string(),
        secs: timeout.as_secs_f64(),
        err: e,
    };
    let stream = loop {
        let attempt = addr
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
            .and_then(|a| {
                TcpStream::connect_timeout(&a, Duration::from_secs(1)).map_err(|e| e.to_string())
            });
        match attempt {
            Ok(s) => break s,
            Err(e) if Instant::now() >= deadline => return Err(err(e)),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let mut line = Line::new(stream, timeout).map_err(|e| err(e.to_string()))?;
    line.send(&format!("hello {rank}"))
        .map_err(|e| err(e.to_string()))?;
    let reply = line.recv().map_err(|e| err(e.to_string()))?;
    if reply != "welcome" {
        return Err(RendezvousError::Protocol {
            line: reply,
            expected: "welcome",
        });
    }
    Ok(Member { rank, line })
}

impl Coordinator {
    fn peer_err(rank: usize, e: std::io::Error) -> RendezvousError {
        RendezvousError::Peer {
            rank,
            what: if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::TimedOut
            {
                "went silent (no reply within the deadline)".into()
            } else {
                e.to_string()
            },
        }
    }

    /// Waits until every rank is `ready`, then releases them all; the time rank 0 let go.
    pub fn barrier(&mut self) -> Result<f64> {
        for (r, l) in &mut self.peers {
            let got = l.recv().map_err(|e| Self::peer_err(*r, e))?;
            if got != "ready" {
                return Err(RendezvousError::Protocol {
                    line: got,
                    expected: "ready",
                });
            }
        }
        let t = unix_now();
        for (r, l) in &mut self.peers {
            l.send("go").map_err(|e| Self::peer_err(*r, e))?;
        }
        Ok(t)
    }

    /// `n` probes of every rank's clock; its best offset, by rank (rank 0's own is 0).
    pub fn offsets(&mut self, n: usize) -> Result<Vec<(usize, Offset)>> {
        let mut out = vec![(
            0,
            Offset {
                offset_s: 0.0,
                error_s: 0.0,
                probes: 0,
            },
        )];
        for (r, l) in &mut self.peers {
            let mut probes = Vec::with_capacity(n);
            for _ in 0..n {
                let t0 = unix_now();
                l.send("probe").map_err(|e| Self::peer_err(*r, e))?;
                let got = l.recv().map_err(|e| Self::peer_err(*r, e))?;
                let t3 = unix_now();
                let mut it = got.split_whitespace();
                let (Some("time"), Some(t1), Some(t2)) = (it.next(), it.next(), it.next()) else {
                    return Err(RendezvousError::Protocol {
                        line: got,
                        expected: "time T1 T2",
                    });
                };
                let (Ok(t1), Ok(t2)) = (t1.parse::<f64>(), t2.parse::<f64>()) else {
                    return Err(RendezvousError::Protocol {
                        line: got.clone(),
                        expected: "time T1 T2",
                    });
                };
                probes.push(Probe { t0, t1, t2, t3 });
            }
            l.send("done").map_err(|e| Self::peer_err(*r, e))?;
            if let Some(o) = best_offset(&probes) {
                out.push((*r, o));
            }
        }
        Ok(out)
    }

    /// The deadline of every wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl Member {
    fn err(&self, e: std::io::Error) -> RendezvousError {
        RendezvousError::Peer {
            rank: 0,
            what: format!("rank {} lost rank 0: {e}", self.rank),
        }
    }

    /// Says `ready` and waits for rank 0's `go`; the time it was let go.
    pub fn barrier(&mut self) -> Result<f64> {
        self.line.send("ready").map_err(|e| self.err(e))?;
        let got = self.line.recv().map_err(|e| self.err(e))?;
        if got != "go" {
            return Err(RendezvousError::Protocol {
                line: got,
                expected: "go",
            });
        }
        Ok(unix_now())
    }

    /// Answers rank 0's probes until it says `done`.
    pub fn answer_probes(&mut self) -> Result<()> {
        loop {
            let got = self.line.recv().map_err(|e| self.err(e))?;
            match got.as_str() {
                "probe" => {
                    let t1 = unix_now();
                    let t2 = unix_now();
                    self.line
                        .send(&format!("time {t1:.9} {t2:.9}"))
                        .map_err(|e| self.err(e))?;
                }
                "done" => return Ok(()),
                _ => {
                    return Err(RendezvousError::Protocol {
                        line: got,
                        expected: "probe or done",
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_and_its_bound_follow_ntp() {
        // Peer 0.25 s ahead, 10 ms each way, 1 ms inside the peer.
        let p = Probe {
            t0: 100.0,
            t1: 100.26,
            t2: 100.261,
            t3: 100.021,
        };
        assert!((p.offset() - 0.25).abs() < 1e-9, "{}", p.offset());
        assert!((p.delay() - 0.020).abs() < 1e-9);
        // The smallest round trip wins.
        let slow = Probe {
            t0: 100.0,
            t1: 100.4,
            t2: 100.4,
            t3: 100.3,
        };
        let o = best_offset(&[slow, p]).unwrap();
        assert!((o.offset_s - 0.25).abs() < 1e-9 && (o.error_s - 0.010).abs() < 1e-9);
        assert_eq!(best_offset(&[]), None);
    }

    fn free_addr() -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    }

    #[test]
    fn three_ranks_meet_pass_two_barriers_and_measure_offsets() {
        let addr = free_addr();
        let t = Duration::from_secs(20);
        let members: Vec<_> = (1..3)
            .map(|r| {
                let a = addr.clone();
                std::thread::spawn(move || {
                    let Node::Member(mut m) = join(r, 3, &a, t).unwrap() else {
                        panic!("rank {r} is a member");
                    };
                    m.barrier().unwrap();
                    m.answer_probes().unwrap();
                    m.barrier().unwrap()
                })
            })
            .collect();
        let Node::Coordinator(mut c) = join(0, 3, &addr, t).unwrap() else {
            panic!("rank 0 coordinates");
        };
        let start = c.barrier().unwrap();
        let offs = c.offsets(8).unwrap();
        let end = c.barrier().unwrap();
        assert!(end >= start);
        assert_eq!(offs.iter().map(|(r, _)| *r).collect::<Vec<_>>(), [0, 1, 2]);
        for (_, o) in &offs[1..] {
            // One host, one clock: the offset is within its own error bound (plus slack
            // for the two clock reads of the peer).
            assert!(o.offset_s.abs() <= o.error_s + 1e-3, "{o:?}");
            assert_eq!(o.probes, 8);
        }
        for m in members {
            let released = m.join().unwrap();
            assert!(released >= end - 1.0);
        }
    }

    #[test]
    fn a_rank_that_never_comes_is_named() {
        let addr = free_addr();
        let a = addr.clone();
        let one = std::thread::spawn(move || join(1, 3, &a, Duration::from_secs(5)).map(|_| ()));
        let e = match join(0, 3, &addr, Duration::from_millis(1500)) {
            Err(e) => e,
            Ok(_) => panic!("rank 2 never joined"),
        };
        assert!(
            matches!(&e, RendezvousError::Missing { missing, .. } if missing == &[2]),
            "{e}"
        );
        // Rank 1 had joined; it then finds rank 0 gone at its first wait, not before.
        let _ = one.join();
        let e = match join(1, 2, &free_addr(), Duration::from_millis(300)) {
            Err(e) => e,
            Ok(_) => panic!("no rank 0 listens there"),
        };
        assert!(e.to_string().contains("could not reach rank 0"), "{e}");
    }
}
