//! Cluster runs (issue 25): the rank each process reads from a real launcher. Open MPI's
//! `mpirun` (Debian `openmpi-bin`, which `.ci/run` installs) starts three ranks of
//! `acceval cluster rank --json`; the launchers that cannot run here (Slurm steps, torchrun,
//! Kubernetes) are given their documented variables (unit tests in `src/cluster/rank.rs`
//! hold the full contracts).

mod common;

use serde_json::Value;

fn rank_json(env: &[(&str, &str)], args: &[&str]) -> (i32, Value, String) {
    let mut c = common::command();
    for k in [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "RANK",
        "SLURM_PROCID",
        "SLURM_STEP_ID",
        "JOB_COMPLETION_INDEX",
    ] {
        c.env_remove(k);
    }
    c.envs(env.iter().copied());
    c.args(["cluster", "rank", "--json"]).args(args);
    let o = c.output().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (
        o.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn mpirun_starts_three_ranks_that_know_who_they_are() {
    let mpirun = std::process::Command::new("mpirun")
        .arg("--version")
        .output();
    if !mpirun.is_ok_and(|o| o.status.success()) {
        common::skip(
            "ACCEVAL_REQUIRE_MPI",
            "no mpirun (apt-get install openmpi-bin)",
        );
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("acceval");
    let o = std::process::Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "3"])
        .arg(&bin)
        .args(["cluster", "rank", "--json"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut ranks: Vec<u64> = out
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["launcher"], "open-mpi", "{v}");
            assert_eq!(v["world_size"], 3, "{v}");
            assert!(
                v["source"].to_string().contains("OMPI_COMM_WORLD_RANK="),
                "{v}"
            );
            v["rank"].as_u64().unwrap()
        })
        .collect();
    ranks.sort_unstable();
    assert_eq!(ranks, [0, 1, 2], "{out}");
}

#[test]
fn launchers_that_cannot_run_here_are_read_from_their_variables() {
    // Alone: one process.
    let (code, v, err) = rank_json(&[], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (v["launcher"].as_str(), v["world_size"].as_u64()),
        (Some("single"), Some(1))
    );
    // A Slurm step (srun -N 2 -n 4, the fourth task).
    let (code, v, err) = rank_json(
        &[
            ("SLURM_PROCID", "3"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_NODEID", "1"),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["launcher"], "slurm");
    assert_eq!((v["rank"].as_u64(), v["node"].as_u64()), (Some(3), Some(1)));
    // The sbatch script itself is one process, with a note.
    let (code, v, _) = rank_json(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4")], &[]);
    assert_eq!(code, 0);
    assert_eq!(v["world_size"], 1);
    assert!(v["notes"][0].as_str().unwrap().contains("srun"), "{v}");
    // A Kubernetes Indexed Job: the world size is the lab's to give.
    let (code, _, err) = rank_json(&[("JOB_COMPLETION_INDEX", "2")], &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("give the world size") && err.contains("--world-size"),
        "{err}"
    );
    let (code, v, err) = rank_json(&[("JOB_COMPLETION_INDEX", "2")], &["--world-size", "3"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (v["launcher"].as_str(), v["rank"].as_u64()),
        (Some("kubernetes"), Some(2))
    );
    // A bad value names the variable; a rank past the world size is refused.
    let (code, _, err) = rank_json(&[("RANK", "1"), ("WORLD_SIZE", "one")], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("WORLD_SIZE='one'"), "{err}");
    let (code, _, err) = rank_json(&[], &["--rank", "3", "--world-size", "3"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("rank 3 is not below the world size 3"),
        "{err}"
    );
}
