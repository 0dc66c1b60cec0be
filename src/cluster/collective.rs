//! The all-reduce of data-parallel training (§5.2; issue 25, point 5): the sum over the
//! ranks of one buffer of f32, every rank getting the result. Two of the draft's modes:
//!
//! - **ring**: each rank connects to the next (r + 1 mod M) and is connected to by the
//!   previous one; the buffer is cut into M chunks; M − 1 rounds of reduce-scatter (send a
//!   chunk right, add the one from the left), then M − 1 rounds of all-gather (pass the summed
//!   chunks on): the draft's 2(N − 1) rounds, 2(M − 1)/M of the buffer sent per rank;
//! - **parameter server**: every rank sends its buffer to rank 0, which sums them in rank
//!   order and sends the sum back (rank 0 moves 2(M − 1) buffers, the others 2).
//!
//! Both over plain TCP between the ranks, with no MPI: the ranks meet through
//! `rendezvous`, and the ring's own connections are set up from the addresses the ranks
//! all-gather there. Written here rather than taken from a crate: the MPI bindings need an
//! MPI library at build time, which the default build must not; the ring is ~60 lines.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::rendezvous::{Node, RendezvousError};
use super::run::{Meeting, host_name};
pub use crate::report::schema::cluster::CommStats;
use crate::report::schema::cluster::Shard;

/// Which all-reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Ring all-reduce: reduce-scatter then all-gather, 2(M − 1) rounds.
    Ring,
    /// A parameter server on rank 0.
    ParameterServer,
    /// MPI_Allreduce through the MPI library mpirun launched (cargo feature mpi).
    Mpi,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Ring => "ring all-reduce (reduce-scatter + all-gather, 2(M-1) rounds)",
            Mode::ParameterServer => "parameter server on rank 0 (gather, sum, broadcast)",
            Mode::Mpi => "MPI_Allreduce (MPI_SUM) of the MPI library mpirun launched",
        })
    }
}

/// One rank's side of the all-reduce.
pub struct Reducer {
    pub rank: usize,
    pub world: usize,
    pub mode: Mode,
    meeting: Meeting,
    ring: Option<Ring>,
    pub stats: CommStats,
    /// The trainer's own count: samples this rank trained, and the wall time of its steps
    /// (all-reduce included), s.
    pub local_samples: u64,
    pub step_seconds: f64,
}

/// The ring's two connections: to the next rank and from the previous one.
struct Ring {
    right: TcpStream,
    left: TcpStream,
}

impl Reducer {
    /// Sets up `mode` among the ranks of `meeting` (the ring connects here).
    pub fn new(mut meeting: Meeting, world: usize, mode: Mode) -> Result<Reducer, RendezvousError> {
        let rank = meeting.rank;
        if mode == Mode::Mpi && meeting.mpi.is_none() {
            return Err(RendezvousError::Peer {
                rank,
                what: if cfg!(feature = "mpi") {
                    "--all-reduce mpi needs the ranks launched by mpirun (or mpiexec)".into()
                } else {
                    super::mpi::NOT_COMPILED.into()
                },
            });
        }
        let ring = if mode == Mode::Ring && world > 1 {
            Some(connect_ring(&mut meeting, rank, world)?)
        } else {
            None
        };
        Ok(Reducer {
            rank,
            world,
            mode,
            meeting,
            ring,
            stats: CommStats::default(),
            local_samples: 0,
            step_seconds: 0.0,
        })
    }

    /// The ranks' meeting (barriers, aborts).
    pub fn meeting(&mut self) -> &mut Meeting {
        &mut self.meeting
    }

    /// `buf` becomes the sum of every rank's `buf`.
    pub fn all_reduce_sum(&mut self, buf: &mut [f32]) -> Result<(), RendezvousError> {
        let t = Instant::now();
        let bytes = (buf.len() * 4) as u64;
        let m = self.world as u64;
        match (&mut self.ring, &mut self.meeting.node) {
            _ if self.world == 1 => {}
            _ if self.mode == Mode::Mpi => {
                if let Some(m) = &mut self.meeting.mpi {
                    m.all_reduce_sum(buf);
                }
                // The library picks its algorithm: what it puts on the wire is not known
                // here; the payload is.
                self.stats.bytes_sent += bytes;
                self.stats.bytes_received += bytes;
                self.stats.rounds = 0;
                self.stats.note = Some(
                    "MPI: bytes are this rank's payload per call, rounds 0 = the library's choice (not observed)".into(),
                );
            }
            (Some(ring), _) => {
                ring_all_reduce(ring, buf, self.rank, self.world).map_err(|e| {
                    RendezvousError::Peer {
                        rank: (self.rank + self.world - 1) % self.world,
                        what: format!("the ring all-reduce: {e}"),
                    }
                })?;
                // Each rank sends (and receives) 2(M − 1) chunks of about 1/M of the buffer.
                let moved = 2 * (m - 1) * bytes / m;
                self.stats.bytes_sent += moved;
                self.stats.bytes_received += moved;
                self.stats.rounds = 2 * (m - 1);
            }
            (None, Node::Coordinator(c)) => {
                c.sum_f32(buf)?;
                self.stats.bytes_sent += (m - 1) * bytes;
                self.stats.bytes_received += (m - 1) * bytes;
                self.stats.rounds = 2;
            }
            (None, Node::Member(x)) => {
                x.sum_f32(buf)?;
                self.stats.bytes_sent += bytes;
                self.stats.bytes_received += bytes;
                self.stats.rounds = 2;
            }
        }
        self.stats.calls += 1;
        self.stats.seconds += t.elapsed().as_secs_f64();
        Ok(())
    }
}

/// Every rank listens, the addresses are all-gathered through rank 0, each connects to the
/// next rank and accepts the previous one.
fn connect_ring(meeting: &mut Meeting, rank: usize, world: usize) -> Result<Ring, RendezvousError> {
    let listener = TcpListener::bind("0.0.0.0:0").map_err(|err| RendezvousError::Listen {
        addr: "0.0.0.0:0 (the ring)".into(),
        err,
    })?;
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let host = host_name();
    let mine = format!("{host} {port}");
    let all = match &mut meeting.node {
        Node::Coordinator(c) => c.all_gather(&mine)?,
        Node::Member(m) => m.all_gather(&mine)?,
    };
    let next = (rank + 1) % world;
    let addr = all
        .get(next)
        .and_then(|a| {
            let (h, p) = a.split_once(' ')?;
            let h = if h == host { "127.0.0.1" } else { h };
            Some(format!("{h}:{p}"))
        })
        .ok_or_else(|| RendezvousError::Protocol {
            line: format!("{all:?}"),
            expected: "one 'HOST PORT' per rank",
        })?;
    let timeout = Duration::from_secs(60);
    // Connect right in a thread while accepting from the left here (every rank does both).
    let right = std::thread::scope(|s| {
        let h = s.spawn(|| {
            let deadline = Instant::now() + timeout;
            loop {
                match TcpStream::connect(&addr) {
                    Ok(c) => break Ok(c),
                    Err(e) if Instant::now() >= deadline => break Err(e),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        let left = listener.accept().map(|(c, _)| c);
        (
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("panicked"))),
            left,
        )
    });
    let err = |r: usize, e: std::io::Error| RendezvousError::Peer {
        rank: r,
        what: format!("the ring connection: {e}"),
    };
    let (right, left) = right;
    let right = right.map_err(|e| err(next, e))?;
    let left = left.map_err(|e| err((rank + world - 1) % world, e))?;
    for c in [&right, &left] {
        let _ = c.set_nodelay(true);
        let _ = c.set_read_timeout(Some(Duration::from_secs(300)));
    }
    Ok(Ring { right, left })
}

/// The ring all-reduce (sum) of `buf` on rank `r` of `m`.
fn ring_all_reduce(ring: &mut Ring, buf: &mut [f32], r: usize, m: usize) -> std::io::Result<()> {
    let n = buf.len();
    let chunk = |i: usize| {
        let s = Shard::of(n, m, i % m);
        s.start..s.end
    };
    let mut incoming = vec![0f32; n.div_ceil(m) + 1];
    // Reduce-scatter: after M − 1 rounds rank r holds the full sum of chunk r + 1.
    for step in 0..m - 1 {
        let send = chunk(r + m - step);
        let recv = chunk(r + m - step - 1);
        exchange(ring, &buf[send], &mut incoming[..recv.len()])?;
        for (a, b) in buf[recv].iter_mut().zip(&incoming) {
            *a += b;
        }
    }
    // All-gather: pass the summed chunks around.
    for step in 0..m - 1 {
        let send = chunk(r + 1 + m - step);
        let recv = chunk(r + m - step);
        let len = recv.len();
        exchange(ring, &buf[send], &mut incoming[..len])?;
        buf[recv].copy_from_slice(&incoming[..len]);
    }
    Ok(())
}

/// Sends `out` to the right while reading `into` from the left (a thread for the send, so
/// two ranks writing large chunks at each other never both block).
fn exchange(ring: &mut Ring, out: &[f32], into: &mut [f32]) -> std::io::Result<()> {
    let bytes: Vec<u8> = out.iter().flat_map(|x| x.to_le_bytes()).collect();
    let Ring { right, left } = ring;
    std::thread::scope(|s| {
        let w = s.spawn(move || right.write_all(&bytes));
        let mut raw = vec![0u8; into.len() * 4];
        let r = left.read_exact(&mut raw);
        let w = w
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the sending thread panicked")));
        r?;
        w?;
        for (x, b) in into.iter_mut().zip(raw.chunks_exact(4)) {
            *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{Given, rank};

    fn free_addr() -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    }

    /// `world` ranks in threads, each all-reducing its own buffer with `mode`.
    fn run(world: usize, mode: Mode, n: usize) -> Vec<(Vec<f32>, CommStats)> {
        let addr = free_addr();
        let (host, port) = addr.split_once(':').unwrap();
        let dir = tempfile::tempdir().unwrap();
        let handles: Vec<_> = (0..world)
            .map(|r| {
                let (host, port, dir) = (host.to_string(), port.to_string(), dir.path().to_owned());
                std::thread::spawn(move || {
                    let env = |k: &str| match k {
                        "MASTER_ADDR" => Some(host.clone()),
                        "MASTER_PORT" => Some(port.clone()),
                        _ => None,
                    };
                    let me = rank::detect(
                        &|_| None,
                        Given {
                            rank: Some(r),
                            world_size: Some(world),
                        },
                    )
                    .unwrap();
                    let meeting =
                        super::super::run::meet_with(&me, &dir, Duration::from_secs(20), &env)
                            .unwrap();
                    let mut red = Reducer::new(meeting, world, mode).unwrap();
                    let mut buf: Vec<f32> = (0..n).map(|i| (r * 1000 + i) as f32).collect();
                    red.all_reduce_sum(&mut buf).unwrap();
                    // A second call on the same connections.
                    red.all_reduce_sum(&mut buf).unwrap();
                    (buf, red.stats.clone())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn ring_and_parameter_server_sum_every_ranks_buffer() {
        for (world, n) in [(3, 10), (4, 7), (2, 1), (3, 2)] {
            // Twice summed: M × (M × (Σ_r r·1000)/M ... ) — computed directly.
            let once: Vec<f32> = (0..n)
                .map(|i| (0..world).map(|r| (r * 1000 + i) as f32).sum())
                .collect();
            let twice: Vec<f32> = once.iter().map(|x| x * world as f32).collect();
            for mode in [Mode::Ring, Mode::ParameterServer] {
                let out = run(world, mode, n);
                for (r, (buf, stats)) in out.iter().enumerate() {
                    assert_eq!(buf, &twice, "{mode:?}, {world} ranks, n {n}, rank {r}");
                    assert_eq!(stats.calls, 2);
                    if mode == Mode::Ring {
                        assert_eq!(stats.rounds, 2 * (world as u64 - 1));
                    }
                }
            }
        }
    }
}
