//! Which rank this process is, from the launcher that started it (issue 25, point 1).
//!
//! acceval does not launch nodes: it runs as one process per rank under a launcher that
//! exists (Slurm, Open MPI, MPICH, torchrun, a Kubernetes Indexed Job) and reads that
//! launcher's environment. The order (shared/notes/cluster.md §1, each contract verified
//! there with the launcher itself):
//!
//! 1. `--rank` and `--world-size` given by hand (both, or neither);
//! 2. torchrun: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `GROUP_RANK` (node);
//! 3. Open MPI's `mpirun`: `OMPI_COMM_WORLD_RANK`, `_SIZE`, `_LOCAL_RANK`;
//! 4. MPICH's Hydra: `PMI_RANK`, `PMI_SIZE`, `MPI_LOCALRANKID`;
//! 5. a PMIx direct launch (`srun --mpi=pmix`): `PMIX_RANK`, the size from Slurm's step;
//! 6. a Slurm step (only when `SLURM_STEP_ID` is set: inside an `sbatch` script itself
//!    `SLURM_PROCID=0` and `SLURM_NTASKS=4` are set although one process runs):
//!    `SLURM_PROCID`, `SLURM_STEP_NUM_TASKS` (else `SLURM_NTASKS`), `SLURM_LOCALID`,
//!    `SLURM_NODEID`;
//! 7. a Kubernetes Indexed Job: `JOB_COMPLETION_INDEX`, with the world size given by hand
//!    (the Job's `completions` is not exported to the pod);
//! 8. otherwise one process: rank 0 of 1.

use serde::{Deserialize, Serialize};

/// The launcher a rank was found by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launcher {
    /// `--rank` and `--world-size`.
    Manual,
    Torchrun,
    OpenMpi,
    Mpich,
    Pmix,
    Slurm,
    Kubernetes,
    /// No launcher: one process.
    Single,
}

impl std::fmt::Display for Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Launcher::Manual => "given by hand",
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI (mpirun)",
            Launcher::Mpich => "MPICH (Hydra)",
            Launcher::Pmix => "PMIx direct launch",
            Launcher::Slurm => "Slurm step (srun)",
            Launcher::Kubernetes => "Kubernetes Indexed Job",
            Launcher::Single => "none (one process)",
        })
    }
}

/// This process's place in the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rank {
    pub rank: usize,
    pub world_size: usize,
    /// The rank among this node's processes, where the launcher says.
    pub local_rank: Option<usize>,
    /// The node's index, where the launcher says (Slurm, torchrun, Kubernetes).
    pub node: Option<usize>,
    pub launcher: Launcher,
    /// The variables the rank was read from, `NAME=value`, for the report.
    pub source: Vec<String>,
    /// What the detection noticed and did not act on (a Slurm batch script, ...).
    pub notes: Vec<String>,
}

/// Why no rank could be worked out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RankError {
    #[error("{name}='{value}' is not a non-negative integer (set by the launcher: {launcher})")]
    NotANumber {
        name: String,
        value: String,
        launcher: Launcher,
    },
    #[error("{launcher} sets {rank_var} but not {size_var}")]
    NoSize {
        launcher: Launcher,
        rank_var: &'static str,
        size_var: &'static str,
    },
    #[error("rank {rank} is not below the world size {world_size} ({launcher})")]
    OutOfRange {
        rank: usize,
        world_size: usize,
        launcher: Launcher,
    },
    #[error("the rank and the world size are given together or not at all")]
    HalfManual,
    #[error(
        "a Kubernetes Indexed Job (JOB_COMPLETION_INDEX={index}) does not export its completions: give the world size by hand"
    )]
    KubernetesNeedsSize { index: String },
}

/// The rank and world size given by hand, if any.
#[derive(Debug, Clone, Copy, Default)]
pub struct Given {
    pub rank: Option<usize>,
    pub world_size: Option<usize>,
}

/// The rank of this process from the environment `env` (a lookup, so tests give their own).
pub fn detect(env: &dyn Fn(&str) -> Option<String>, given: Given) -> Result<Rank, RankError> {
    let mut r = detect_unchecked(env, given)?;
    if r.rank >= r.world_size || r.world_size == 0 {
        return Err(RankError::OutOfRange {
            rank: r.rank,
            world_size: r.world_size,
            launcher: r.launcher,
        });
    }
    if r.launcher == Launcher::Single
        && env("SLURM_PROCID").is_some()
        && env("SLURM_STEP_ID").is_none()
    {
        r.notes.push(
            "SLURM_PROCID is set outside a Slurm step (an sbatch script itself): taken as one process; run acceval under srun for one process per rank".into(),
        );
    }
    Ok(r)
}

/// The rank of this process from its own environment.
pub fn from_env(given: Given) -> Result<Rank, RankError> {
    detect(&|k| std::env::var(k).ok(), given)
}

/// Each launcher's contract: (launcher, rank var, size var, local rank var, node var).
type Contract = (
    Launcher,
    &'static str,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
);

/// The launchers whose own variables carry the rank and the size.
const CONTRACTS: [Contract; 3] = [
    (
        Launcher::Torchrun,
        "RANK",
        "WORLD_SIZE",
        Some("LOCAL_RANK"),
        Some("GROUP_RANK"),
    ),
    (
        Launcher::OpenMpi,
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        Some("OMPI_COMM_WORLD_LOCAL_RANK"),
        None,
    ),
    (
        Launcher::Mpich,
        "PMI_RANK",
        "PMI_SIZE",
        Some("MPI_LOCALRANKID"),
        None,
    ),
];

/// The environment lookup, with the reads every launcher's contract shares.
struct Env<'a>(&'a dyn Fn(&str) -> Option<String>);

impl Env<'_> {
    fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }

    /// `name` as a number, `None` when unset; a launcher's variable that is not one is an
    /// error naming it.
    fn num(&self, name: &str, launcher: Launcher) -> Result<Option<usize>, RankError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<usize>()
                .map(Some)
                .map_err(|_| RankError::NotANumber {
                    name: name.into(),
                    value: v,
                    launcher,
                }),
        }
    }

    /// `num` of an optional variable.
    fn opt(&self, name: Option<&str>, launcher: Launcher) -> Result<Option<usize>, RankError> {
        match name {
            Some(v) => self.num(v, launcher),
            None => Ok(None),
        }
    }

    /// A rank, with the variables it came from (those set) as its source.
    fn rank(
        &self,
        launcher: Launcher,
        (rank, world_size): (usize, usize),
        local_rank: Option<usize>,
        node: Option<usize>,
        names: &[&str],
    ) -> Rank {
        Rank {
            rank,
            world_size,
            local_rank,
            node,
            launcher,
            source: names
                .iter()
                .filter_map(|n| self.get(n).map(|v| format!("{n}={v}")))
                .collect(),
            notes: Vec::new(),
        }
    }

    /// The first launcher of [`CONTRACTS`] whose rank variable is set.
    fn contract(&self) -> Result<Option<Rank>, RankError> {
        for (launcher, rv, sv, lv, nv) in CONTRACTS {
            let Some(r) = self.num(rv, launcher)? else {
                continue;
            };
            let w = self.num(sv, launcher)?.ok_or(RankError::NoSize {
                launcher,
                rank_var: rv,
                size_var: sv,
            })?;
            let local = self.opt(lv, launcher)?;
            let node = self.opt(nv, launcher)?;
            let names: Vec<&str> = [Some(rv), Some(sv), lv, nv].into_iter().flatten().collect();
            return Ok(Some(self.rank(launcher, (r, w), local, node, &names)));
        }
        Ok(None)
    }

    /// PMIx direct launch and Slurm steps: the rank from `rank_var`, the rest from the step.
    fn slurm(&self, launcher: Launcher, rank_var: &'static str) -> Result<Option<Rank>, RankError> {
        let Some(r) = self.num(rank_var, launcher)? else {
            return Ok(None);
        };
        let w = match self.num("SLURM_STEP_NUM_TASKS", launcher)? {
            Some(n) => Some(n),
            None => self.num("SLURM_NTASKS", launcher)?,
        }
        .ok_or(RankError::NoSize {
            launcher,
            rank_var,
            size_var: "SLURM_STEP_NUM_TASKS",
        })?;
        let local = self.num("SLURM_LOCALID", launcher)?;
        let node = self.num("SLURM_NODEID", launcher)?;
        let names = [
            rank_var,
            "SLURM_STEP_ID",
            "SLURM_STEP_NUM_TASKS",
            "SLURM_NTASKS",
            "SLURM_LOCALID",
            "SLURM_NODEID",
        ];
        Ok(Some(self.rank(launcher, (r, w), local, node, &names)))
    }
}

fn detect_unchecked(env: &dyn Fn(&str) -> Option<String>, given: Given) -> Result<Rank, RankError> {
    let e = Env(env);
    match (given.rank, given.world_size) {
        (Some(r), Some(w)) => return Ok(e.rank(Launcher::Manual, (r, w), None, None, &[])),
        (None, None) => {}
        // A world size alone is the Kubernetes case (the index comes from the pod).
        (None, Some(_)) if e.get("JOB_COMPLETION_INDEX").is_some() => {}
        _ => return Err(RankError::HalfManual),
    }
    if let Some(r) = e.contract()? {
        return Ok(r);
    }
    if let Some(r) = e.slurm(Launcher::Pmix, "PMIX_RANK")? {
        return Ok(r);
    }
    if e.get("SLURM_STEP_ID").is_some()
        && let Some(r) = e.slurm(Launcher::Slurm, "SLURM_PROCID")?
    {
        return Ok(r);
    }
    if let Some(index) = e.get("JOB_COMPLETION_INDEX") {
        let r = e
            .num("JOB_COMPLETION_INDEX", Launcher::Kubernetes)?
            .unwrap_or(0);
        let w = given
            .world_size
            .ok_or(RankError::KubernetesNeedsSize { index })?;
        // One pod per node: the index is the node.
        return Ok(e.rank(
            Launcher::Kubernetes,
            (r, w),
            Some(0),
            Some(r),
            &["JOB_COMPLETION_INDEX"],
        ));
    }
    Ok(e.rank(Launcher::Single, (0, 1), Some(0), Some(0), &[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let v: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| v.iter().find(|(n, _)| n == k).map(|(_, x)| x.clone())
    }

    fn none() -> Given {
        Given::default()
    }

    #[test]
    fn each_launcher_is_read_by_its_own_contract() {
        // Values as the launchers set them (shared/notes/cluster.md §1, §5).
        let r = detect(
            &env_of(&[
                ("OMPI_COMM_WORLD_RANK", "2"),
                ("OMPI_COMM_WORLD_SIZE", "4"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
                ("PMIX_RANK", "2"),
            ]),
            none(),
        )
        .unwrap();
        assert_eq!(
            (r.launcher, r.rank, r.world_size, r.local_rank),
            (Launcher::OpenMpi, 2, 4, Some(0))
        );
        assert!(r.source.contains(&"OMPI_COMM_WORLD_SIZE=4".to_string()));
        let r = detect(
            &env_of(&[
                ("PMI_RANK", "1"),
                ("PMI_SIZE", "3"),
                ("MPI_LOCALRANKID", "1"),
            ]),
            none(),
        )
        .unwrap();
        assert_eq!((r.launcher, r.rank, r.world_size), (Launcher::Mpich, 1, 3));
        let r = detect(
            &env_of(&[
                ("RANK", "3"),
                ("WORLD_SIZE", "8"),
                ("LOCAL_RANK", "1"),
                ("GROUP_RANK", "1"),
                ("TORCHELASTIC_RUN_ID", "x"),
            ]),
            none(),
        )
        .unwrap();
        assert_eq!(
            (r.launcher, r.rank, r.world_size, r.node),
            (Launcher::Torchrun, 3, 8, Some(1))
        );
        // srun -N 2 -n 4: the step's task count, the node index.
        let r = detect(
            &env_of(&[
                ("SLURM_PROCID", "3"),
                ("SLURM_STEP_ID", "0"),
                ("SLURM_STEP_NUM_TASKS", "4"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_LOCALID", "1"),
                ("SLURM_NODEID", "1"),
            ]),
            none(),
        )
        .unwrap();
        assert_eq!(
            (r.launcher, r.rank, r.world_size, r.local_rank, r.node),
            (Launcher::Slurm, 3, 4, Some(1), Some(1))
        );
        // srun --mpi=pmix: PMIX_RANK and Slurm's step, no OMPI_* before MPI_Init.
        let r = detect(
            &env_of(&[
                ("PMIX_RANK", "1"),
                ("SLURM_PROCID", "1"),
                ("SLURM_STEP_ID", "0"),
                ("SLURM_STEP_NUM_TASKS", "2"),
            ]),
            none(),
        )
        .unwrap();
        assert_eq!((r.launcher, r.rank, r.world_size), (Launcher::Pmix, 1, 2));
    }

    #[test]
    fn a_slurm_batch_script_is_one_process_not_rank_0_of_4() {
        let r = detect(
            &env_of(&[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_NODEID", "0"),
            ]),
            none(),
        )
        .unwrap();
        assert_eq!((r.launcher, r.rank, r.world_size), (Launcher::Single, 0, 1));
        assert!(r.notes[0].contains("srun"), "{:?}", r.notes);
    }

    #[test]
    fn kubernetes_needs_the_world_size_and_hand_values_win() {
        let k = env_of(&[("JOB_COMPLETION_INDEX", "2")]);
        assert!(matches!(
            detect(&k, none()),
            Err(RankError::KubernetesNeedsSize { .. })
        ));
        let r = detect(
            &k,
            Given {
                rank: None,
                world_size: Some(3),
            },
        )
        .unwrap();
        assert_eq!(
            (r.launcher, r.rank, r.world_size),
            (Launcher::Kubernetes, 2, 3)
        );
        let r = detect(
            &env_of(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2")]),
            Given {
                rank: Some(0),
                world_size: Some(5),
            },
        )
        .unwrap();
        assert_eq!((r.launcher, r.rank, r.world_size), (Launcher::Manual, 0, 5));
        assert_eq!(
            detect(
                &env_of(&[]),
                Given {
                    rank: Some(1),
                    world_size: None
                }
            ),
            Err(RankError::HalfManual)
        );
    }

    #[test]
    fn bad_values_are_errors_naming_the_variable() {
        let e = detect(
            &env_of(&[("OMPI_COMM_WORLD_RANK", "x"), ("OMPI_COMM_WORLD_SIZE", "2")]),
            none(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("OMPI_COMM_WORLD_RANK='x'"), "{e}");
        let e = detect(&env_of(&[("PMI_RANK", "0")]), none()).unwrap_err();
        assert!(e.to_string().contains("PMI_SIZE"), "{e}");
        let e = detect(&env_of(&[("RANK", "4"), ("WORLD_SIZE", "4")]), none()).unwrap_err();
        assert!(matches!(e, RankError::OutOfRange { rank: 4, .. }), "{e}");
        assert_eq!(
            detect(&env_of(&[]), none()).unwrap().launcher,
            Launcher::Single
        );
    }
}
