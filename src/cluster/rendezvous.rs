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
    /// `data` as its length (u64) and little-endian f32s.
    fn send_f32(&mut self, data: &[f32]) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(8 + data.len() * 4);
        bytes.extend_from_slice(&(data.len() as u64).to_le_bytes());
        for x in data {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        self.writer.write_all(&bytes)
    }
    /// Reads what `send_f32` wrote into `out` (which must have its length).
    fn recv_f32(&mut self, out: &mut [f32]) -> std::io::Result<()> {
        use std::io::Read;
        let mut n = [0u8; 8];
        self.reader.read_exact(&mut n)?;
        let n = u64::from_le_bytes(n) as usize;
        if n != out.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "a peer sent {n} values, {} were expected (another model?)",
                    out.len()
                ),
            ));
        }
        let mut bytes = vec![0u8; n * 4];
        self.reader.read_exact(&mut bytes)?;
        for (x, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(())
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
    coordinate_on(bind(addr)?, world, timeout)
}

/// Rank 0's listening socket at `addr` (`HOST:0` lets the system pick the port).
pub fn bind(addr: &str) -> Result<TcpListener> {
    let listen_err = |err| RendezvousError::Listen {
        addr: addr.to_string(),
        err,
    };
    let listener = TcpListener::bind(addr).map_err(listen_err)?;
    listener.set_nonblocking(true).map_err(listen_err)?;
    Ok(listener)
}

/// Rank 0 waits on `listener` for the `world - 1` other ranks.
pub fn coordinate_on(
    listener: TcpListener,
    world: usize,
    timeout: Duration,
) -> Result<Coordinator> {
    let addr = listener
        .local_addr()
        .map_or_else(|_| "its socket".to_string(), |a| a.to_string());
    let listen_err = |err| RendezvousError::Listen {
        addr: addr.clone(),
        err,
    };
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
    member_of(rank, &|| Some(addr.to_string()), timeout)
}

/// Another rank joins rank 0 at the address `addr()` gives, asked again before every try
/// (rank 0 may publish it later, or replace a stale one); `None`: not known yet.
pub fn member_of(
    rank: usize,
    addr: &dyn Fn() -> Option<String>,
    timeout: Duration,
) -> Result<Member> {
    let deadline = Instant::now() + timeout;
    let mut last = String::from("(no address published)");
    let err = |a: &str, e: String| RendezvousError::Connect {
        rank,
        addr: a.to_string(),
        secs: timeout.as_secs_f64(),
        err: e,
    };
    let stream = loop {
        let Some(addr) = addr() else {
            if Instant::now() >= deadline {
                return Err(err(&last, "rank 0 never published its address".into()));
            }
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        last = addr.clone();
        let attempt = addr
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
            .and_then(|a| {
                TcpStream::connect_timeout(&a, Duration::from_secs(1)).map_err(|e| e.to_string())
            });
        match attempt {
            Ok(s) => break s,
            Err(e) if Instant::now() >= deadline => return Err(err(&addr, e)),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let err = |e: std::io::Error| err(&last, e.to_string());
    let mut line = Line::new(stream, timeout).map_err(err)?;
    line.send(&format!("hello {rank}")).map_err(err)?;
    let reply = line.recv().map_err(err)?;
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
    /// A rank that fails is named to the others (`abort`), so none waits out its deadline.
    pub fn barrier(&mut self) -> Result<f64> {
        let r = self.gather();
        if let Err(e) = &r {
            self.abort(&e.to_string());
            return r;
        }
        let t = unix_now();
        for (r, l) in &mut self.peers {
            l.send("go").map_err(|e| Self::peer_err(*r, e))?;
        }
        Ok(t)
    }

    fn gather(&mut self) -> Result<f64> {
        for (r, l) in &mut self.peers {
            let got = l.recv().map_err(|e| Self::peer_err(*r, e))?;
            if got != "ready" {
                return Err(RendezvousError::Peer {
                    rank: *r,
                    what: match got.strip_prefix("abort ") {
                        Some(why) => why.to_string(),
                        None => format!("said '{got}', expected ready"),
                    },
                });
            }
        }
        Ok(unix_now())
    }

    /// Tells every rank still connected that the run is over, and why.
    pub fn abort(&mut self, why: &str) {
        let why = why.replace('\n', " ");
        for (_, l) in &mut self.peers {
            let _ = l.send(&format!("abort {why}"));
        }
    }

    /// `n` probes of every rank's clock; its best offset, by rank (rank 0's own is 0). Each
    /// rank is told its own offset.
    pub fn offsets(&mut self, n: usize) -> Result<Vec<(usize, Offset)>> {
        let r = self.probe_all(n);
        if let Err(e) = &r {
            self.abort(&e.to_string());
        }
        r
    }

    fn probe_all(&mut self, n: usize) -> Result<Vec<(usize, Offset)>> {
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
                let parsed = match (it.next(), it.next(), it.next()) {
                    (Some("time"), Some(t1), Some(t2)) => {
                        t1.parse::<f64>().ok().zip(t2.parse().ok())
                    }
                    _ => None,
                };
                let Some((t1, t2)) = parsed else {
                    return Err(RendezvousError::Protocol {
                        line: got,
                        expected: "time T1 T2",
                    });
                };
                probes.push(Probe { t0, t1, t2, t3 });
            }
            let Some(o) = best_offset(&probes) else {
                return Err(RendezvousError::Peer {
                    rank: *r,
                    what: "no clock probe came back with a finite round trip".into(),
                });
            };
            l.send(&format!(
                "done {:.9} {:.9} {}",
                o.offset_s, o.error_s, o.probes
            ))
            .map_err(|e| Self::peer_err(*r, e))?;
            out.push((*r, o));
        }
        Ok(out)
    }

    /// Every rank's `text` (one line), by rank: rank 0 collects them and sends all back.
    pub fn all_gather(&mut self, mine: &str) -> Result<Vec<String>> {
        let mut all = vec![mine.to_string()];
        for (r, l) in &mut self.peers {
            let got = l.recv().map_err(|e| Self::peer_err(*r, e))?;
            match got.strip_prefix("put ") {
                Some(t) => all.push(t.to_string()),
                None => return Err(Self::member_said(*r, got, "put TEXT")),
            }
        }
        let text = serde_json::to_string(&all).unwrap_or_default();
        for (r, l) in &mut self.peers {
            l.send(&format!("all {text}"))
                .map_err(|e| Self::peer_err(*r, e))?;
        }
        Ok(all)
    }

    /// The parameter server's step: every rank's `buf` summed (in rank order), the sum in
    /// `buf` here and sent back to every rank.
    pub fn sum_f32(&mut self, buf: &mut [f32]) -> Result<()> {
        let mut theirs = vec![0f32; buf.len()];
        for (r, l) in &mut self.peers {
            l.recv_f32(&mut theirs).map_err(|e| Self::peer_err(*r, e))?;
            for (a, b) in buf.iter_mut().zip(&theirs) {
                *a += b;
            }
        }
        for (r, l) in &mut self.peers {
            l.send_f32(buf).map_err(|e| Self::peer_err(*r, e))?;
        }
        Ok(())
    }

    fn member_said(rank: usize, got: String, expected: &'static str) -> RendezvousError {
        match got.strip_prefix("abort ") {
            Some(why) => RendezvousError::Peer {
                rank,
                what: why.to_string(),
            },
            None => RendezvousError::Protocol {
                line: got,
                expected,
            },
        }
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
            what: if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::TimedOut
            {
                format!(
                    "rank {} heard nothing from rank 0 within the deadline",
                    self.rank
                )
            } else {
                format!("rank {} lost rank 0: {e}", self.rank)
            },
        }
    }

    /// Rank 0's word for a failed run (`abort WHY`), or a protocol error.
    fn unexpected(got: String, expected: &'static str) -> RendezvousError {
        match got.strip_prefix("abort ") {
            Some(why) => RendezvousError::Peer {
                rank: 0,
                what: format!("ended the run ({why})"),
            },
            None => RendezvousError::Protocol {
                line: got,
                expected,
            },
        }
    }

    /// Says `ready` and waits for rank 0's `go`; the time it was let go.
    pub fn barrier(&mut self) -> Result<f64> {
        self.line.send("ready").map_err(|e| self.err(e))?;
        let got = self.line.recv().map_err(|e| self.err(e))?;
        if got != "go" {
            return Err(Self::unexpected(got, "go"));
        }
        Ok(unix_now())
    }

    /// Tells rank 0 this rank cannot go on, and why (rank 0 names it to the others).
    pub fn abort(&mut self, why: &str) {
        let _ = self.line.send(&format!("abort {}", why.replace('\n', " ")));
    }

    /// Answers rank 0's probes until it says `done`; this rank's offset, as rank 0 found it.
    pub fn answer_probes(&mut self) -> Result<Offset> {
        loop {
            let got = self.line.recv().map_err(|e| self.err(e))?;
            if got == "probe" {
                let t1 = unix_now();
                let t2 = unix_now();
                self.line
                    .send(&format!("time {t1:.9} {t2:.9}"))
                    .map_err(|e| self.err(e))?;
                continue;
            }
            let mut it = got.split_whitespace();
            let parsed = match (it.next(), it.next(), it.next(), it.next()) {
                (Some("done"), Some(o), Some(e), Some(n)) => {
                    match (o.parse(), e.parse(), n.parse()) {
                        (Ok(offset_s), Ok(error_s), Ok(probes)) => Some(Offset {
                            offset_s,
                            error_s,
                            probes,
                        }),
                        _ => None,
                    }
                }
                _ => None,
            };
            return parsed.ok_or_else(|| Self::unexpected(got, "probe or done OFFSET ERROR N"));
        }
    }

    /// This rank's number.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Every rank's `text` (one line), by rank, through rank 0.
    pub fn all_gather(&mut self, mine: &str) -> Result<Vec<String>> {
        self.line
            .send(&format!("put {}", mine.replace('\n', " ")))
            .map_err(|e| self.err(e))?;
        let got = self.line.recv().map_err(|e| self.err(e))?;
        let Some(text) = got.strip_prefix("all ") else {
            return Err(Self::unexpected(got, "all [TEXT, ...]"));
        };
        serde_json::from_str(text).map_err(|_| RendezvousError::Protocol {
            line: got.clone(),
            expected: "all [TEXT, ...]",
        })
    }

    /// Sends `buf` to rank 0 (the parameter server) and reads the sum over the ranks back
    /// into it.
    pub fn sum_f32(&mut self, buf: &mut [f32]) -> Result<()> {
        self.line.send_f32(buf).map_err(|e| self.err(e))?;
        self.line.recv_f32(buf).map_err(|e| self.err(e))
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
                    let o = m.answer_probes().unwrap();
                    (m.barrier().unwrap(), o)
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
        for (m, (r, o)) in members.into_iter().zip(&offs[1..]) {
            let (released, told) = m.join().unwrap();
            assert!(released >= end - 1.0);
            // Each rank was told what rank 0 measured (to the 1e-9 s the text carries).
            assert!(
                (told.offset_s - o.offset_s).abs() < 1e-8,
                "rank {r}: {told:?} vs {o:?}"
            );
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

    #[test]
    fn a_rank_that_dies_before_a_barrier_is_named_to_the_others() {
        let addr = free_addr();
        let t = Duration::from_secs(20);
        let a = addr.clone();
        // Rank 1 joins and waits at the barrier; rank 2 joins and goes away.
        let one = std::thread::spawn(move || {
            let Node::Member(mut m) = join(1, 3, &a, t).unwrap() else {
                panic!("rank 1 is a member");
            };
            m.barrier().map(|_| ())
        });
        let a = addr.clone();
        let two = std::thread::spawn(move || join(2, 3, &a, t).map(|_| ()));
        let Node::Coordinator(mut c) = join(0, 3, &addr, t).unwrap() else {
            panic!("rank 0 coordinates");
        };
        two.join().unwrap().unwrap();
        let e = c.barrier().unwrap_err();
        assert!(
            matches!(&e, RendezvousError::Peer { rank: 2, .. }),
            "rank 0 names rank 2: {e}"
        );
        let e = one.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("rank 0: ended the run (rank 2"), "{e}");
    }
}
