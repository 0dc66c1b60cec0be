//! One rank's side of a cluster run (issue 25, point 2): meet the other ranks, measure the
//! clock against rank 0's before and after, hold the barriers around the timed window, and
//! write `DIR/rank-<r>.json`.
//!
//! Where the ranks meet: `MASTER_ADDR:MASTER_PORT` when set (torchrun's convention, what a
//! Kubernetes manifest sets); otherwise rank 0 listens on a port the system picks and
//! publishes it in `DIR/rendezvous.txt` with the launcher's job id, so a run under `mpirun`
//! or `srun` needs nothing but a folder every rank can read (the folder the rank files go to).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Rank;
use super::rendezvous::{self, Node, Offset, RendezvousError, unix_now};
use crate::measure::bench::ClusterPart;
use crate::report::schema::cluster::{ClockOffset, Shard};

/// Clock probes per measurement (the one with the smallest round trip is kept).
const PROBES: usize = 16;

/// The file rank 0 publishes its address in when no `MASTER_ADDR` is set.
pub const RENDEZVOUS_FILE: &str = "rendezvous.txt";

/// The launcher's id of this job, for matching a published address to this run.
fn job_id(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if let (Some(j), Some(s)) = (env("SLURM_JOB_ID"), env("SLURM_STEP_ID")) {
        return Some(format!("slurm-{j}.{s}"));
    }
    for k in [
        "PMIX_NAMESPACE",
        "OMPI_MCA_ess_base_jobid",
        "PMI_KVSNAME",
        "TORCHELASTIC_RUN_ID",
    ] {
        if let Some(v) = env(k).filter(|v| !v.is_empty()) {
            return Some(format!("{k}={v}"));
        }
    }
    None
}

/// This host's name, or `localhost` where it has none.
pub fn host_name() -> String {
    sysinfo::System::host_name()
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// What every rank file records about this rank before it runs: who it is, where, found
/// how, and with which build (not complete until the run says so).
pub fn common(found: &Rank) -> crate::report::schema::cluster::RankCommon {
    crate::report::schema::cluster::RankCommon {
        rank: found.rank,
        world_size: found.world_size,
        local_rank: found.local_rank,
        node: found.node,
        host: host_name(),
        launcher: found.launcher.to_string(),
        launcher_source: found.source.clone(),
        tool: format!(
            "acceval {} ({})",
            env!("CARGO_PKG_VERSION"),
            crate::util::build_info::commit()
        ),
        complete: false,
        error: None,
    }
}

/// Where this rank stands with the others.
pub struct Meeting {
    pub node: Node,
    pub rank: usize,
    /// How the ranks met, for the report.
    pub how: String,
    published: Option<PathBuf>,
    /// MPI, when built with it and launched by mpirun: the barriers (and the training's
    /// all-reduce, when asked for) go through it; the clock probes stay on TCP.
    pub mpi: Option<super::mpi::Mpi>,
}

/// Meets the other ranks of `rank`'s run; `timeout` bounds the joining and every wait.
pub fn meet(rank: &Rank, dir: &Path, timeout: Duration) -> Result<Meeting, RendezvousError> {
    let mut m = meet_with(rank, dir, timeout, &|k| std::env::var(k).ok())?;
    if cfg!(feature = "mpi") && super::mpi::launched_by_mpi(rank.launcher) {
        let mpi = super::mpi::Mpi::init().map_err(|what| RendezvousError::Peer {
            rank: rank.rank,
            what: format!("MPI_Init: {what}"),
        })?;
        if (mpi.rank(), mpi.size()) != (rank.rank, rank.world_size) {
            return Err(RendezvousError::Peer {
                rank: rank.rank,
                what: format!(
                    "MPI says rank {} of {}, the launcher's variables rank {} of {}",
                    mpi.rank(),
                    mpi.size(),
                    rank.rank,
                    rank.world_size
                ),
            });
        }
        m.how += &format!("; barriers: MPI_Barrier ({})", super::mpi::Mpi::library());
        m.mpi = Some(mpi);
    }
    Ok(m)
}

/// `meet` with the environment `env` (a lookup, so tests give their own).
pub fn meet_with(
    rank: &Rank,
    dir: &Path,
    timeout: Duration,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Meeting, RendezvousError> {
    let master = env("MASTER_ADDR").zip(env("MASTER_PORT"));
    let r = rank.rank;
    if let Some((addr, port)) = master {
        let at = format!("{addr}:{port}");
        let node = if r == 0 {
            Node::Coordinator(rendezvous::coordinate_on(
                rendezvous::bind(&format!("0.0.0.0:{port}"))?,
                rank.world_size,
                timeout,
            )?)
        } else {
            Node::Member(rendezvous::member_of(r, &|| Some(at.clone()), timeout)?)
        };
        return Ok(Meeting {
            node,
            rank: r,
            how: format!("TCP at {at} (MASTER_ADDR, MASTER_PORT)"),
            published: None,
            mpi: None,
        });
    }
    let job = job_id(env);
    let file = dir.join(RENDEZVOUS_FILE);
    let host = host_name();
    if r == 0 {
        let listener = rendezvous::bind("0.0.0.0:0")?;
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        let text = format!(
            "acceval-rendezvous host={host} port={port} job={}\n",
            job.as_deref().unwrap_or("none")
        );
        crate::util::fs::write_atomic(&file, text.as_bytes()).map_err(|err| {
            RendezvousError::Listen {
                addr: format!("{} (publishing the address)", file.display()),
                err,
            }
        })?;
        let node = Node::Coordinator(rendezvous::coordinate_on(
            listener,
            rank.world_size,
            timeout,
        )?);
        return Ok(Meeting {
            node,
            rank: r,
            how: format!(
                "TCP at {host}:{port}, published in {} (no MASTER_ADDR)",
                file.display()
            ),
            published: Some(file),
            mpi: None,
        });
    }
    let read = || -> Option<String> {
        let text = std::fs::read_to_string(&file).ok()?;
        let mut it = text.split_whitespace();
        if it.next()? != "acceval-rendezvous" {
            return None;
        }
        let (mut h, mut p, mut j) = (None, None, None);
        for kv in it {
            match kv.split_once('=') {
                Some(("host", v)) => h = Some(v.to_string()),
                Some(("port", v)) => p = v.parse::<u16>().ok(),
                Some(("job", v)) => j = Some(v.to_string()),
                _ => {}
            }
        }
        // A file from another job (an earlier run in the same folder) is not ours.
        if let (Some(mine), Some(theirs)) = (&job, &j)
            && theirs != "none"
            && mine != theirs
        {
            return None;
        }
        let h = h?;
        let h = if h == host {
            "127.0.0.1".to_string()
        } else {
            h
        };
        Some(format!("{h}:{}", p?))
    };
    let node = Node::Member(rendezvous::member_of(r, &read, timeout)?);
    Ok(Meeting {
        node,
        rank: r,
        how: format!("TCP at the address rank 0 published in {}", file.display()),
        published: None,
        mpi: None,
    })
}

impl Meeting {
    /// Measures this rank's clock against rank 0's (rank 0 measures every rank's).
    pub fn clock(&mut self) -> Result<ClockOffset, RendezvousError> {
        let at = unix_now();
        let o: Offset = match &mut self.node {
            Node::Coordinator(c) => c
                .offsets(PROBES)?
                .into_iter()
                .find(|(r, _)| *r == 0)
                .map(|(_, o)| o)
                .unwrap_or(Offset {
                    offset_s: 0.0,
                    error_s: 0.0,
                    probes: 0,
                }),
            Node::Member(m) => m.answer_probes()?,
        };
        Ok(ClockOffset {
            offset_s: o.offset_s,
            error_s: o.error_s,
            probes: o.probes,
            at_unix_s: at,
        })
    }

    pub fn barrier(&mut self) -> Result<f64, RendezvousError> {
        if let Some(m) = &self.mpi {
            m.barrier();
            return Ok(unix_now());
        }
        match &mut self.node {
            Node::Coordinator(c) => c.barrier(),
            Node::Member(m) => m.barrier(),
        }
    }

    /// Tells the others this rank cannot go on.
    pub fn abort(&mut self, why: &str) {
        match &mut self.node {
            Node::Coordinator(c) => c.abort(why),
            Node::Member(m) => m.abort(why),
        }
    }
}

impl Drop for Meeting {
    fn drop(&mut self) {
        if let Some(f) = &self.published {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// The barriers around a rank's timed window, and what they saw.
pub struct Part<'a> {
    pub meeting: &'a mut Meeting,
    pub shard: Shard,
    pub start_barrier_unix_s: Option<f64>,
    pub end_barrier_unix_s: Option<f64>,
    pub error: Option<String>,
    /// Where the rank is, for the file written if a signal stops it.
    pub stage: Option<super::file::Stage>,
}

impl Part<'_> {
    /// Names the stage; `write` also leaves the provisional rank file (outside the timed
    /// window only).
    fn at(&self, s: &'static str, write: bool) {
        match &self.stage {
            Some(x) if write => x.mark(s),
            Some(x) => x.set(s),
            None => {}
        }
    }
}

impl ClusterPart for Part<'_> {
    fn first_sample(&self) -> usize {
        self.shard.start
    }
    fn start(&mut self) -> Result<(), String> {
        self.at("at the start barrier or in its timed run", true);
        match self.meeting.barrier() {
            Ok(t) => {
                self.at("running its shard", false);
                self.start_barrier_unix_s = Some(t);
                Ok(())
            }
            Err(e) => {
                let e = e.to_string();
                self.error = Some(format!("start barrier: {e}"));
                Err(e)
            }
        }
    }
    fn end(&mut self) {
        if self.error.is_some() {
            return;
        }
        self.at("waiting at the end barrier", false);
        match self.meeting.barrier() {
            Ok(t) => self.end_barrier_unix_s = Some(t),
            Err(e) => self.error = Some(format!("end barrier: {e}")),
        }
    }
}
