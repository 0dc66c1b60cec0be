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

/// Whether Debian's mpirun is here (skips the test otherwise, unless ACCEVAL_REQUIRE_MPI).
fn have_mpirun() -> bool {
    let mpirun = std::process::Command::new("mpirun")
        .arg("--version")
        .output();
    if !mpirun.is_ok_and(|o| o.status.success()) {
        common::skip(
            "ACCEVAL_REQUIRE_MPI",
            "no mpirun (apt-get install openmpi-bin)",
        );
        return false;
    }
    true
}

/// `mpirun -np 3` of a shell line (`$ACCEVAL` is the binary under test, `$OMPI_COMM_WORLD_RANK`
/// the rank), without MASTER_ADDR: the ranks meet through the cluster folder.
fn mpirun_sh(line: &str) -> std::process::Output {
    let mut c = common::command();
    let bin = assert_cmd::cargo::cargo_bin("acceval");
    c.env_remove("MASTER_ADDR").env_remove("MASTER_PORT");
    let mut m = std::process::Command::new("mpirun");
    m.envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env_remove("MASTER_ADDR")
        .env_remove("MASTER_PORT")
        .env("ACCEVAL", &bin)
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            "3",
            "sh",
            "-c",
            line,
        ]);
    m.output().unwrap()
}

fn read_json(p: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_default()).unwrap_or(Value::Null)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

#[test]
fn mpirun_three_ranks_bench_their_shards_and_merge_recomputes_the_cluster_fps() {
    if !have_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("run");
    let o = mpirun_sh(&format!(
        "exec \"$ACCEVAL\" bench --model lstm-load-forecast --cluster {} --runs 301 --warmup-runs 5",
        d.display()
    ));
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // The ranks' own files: schema, shards (101, 100, 100: the remainder to rank 0), times.
    let ranks: Vec<Value> = (0..3)
        .map(|r| read_json(&d.join(format!("rank-{r}.json"))))
        .collect();
    let mut covered = vec![0u32; 301];
    let (mut tis, mut tio) = (f64::INFINITY, f64::NEG_INFINITY);
    for (r, v) in ranks.iter().enumerate() {
        common::assert_schema_valid("cluster-rank.schema.json", v);
        assert_eq!(v["rank"], r as u64);
        assert_eq!(v["world_size"], 3);
        assert_eq!(v["launcher"], "Open MPI (mpirun)", "{}", v["launcher"]);
        assert_eq!(v["complete"], true, "{}", v["error"]);
        let (a, b) = (
            v["shard"]["start"].as_u64().unwrap() as usize,
            v["shard"]["end"].as_u64().unwrap() as usize,
        );
        assert_eq!(b - a, if r == 0 { 101 } else { 100 });
        assert_eq!(v["samples"].as_u64(), Some((b - a) as u64));
        for c in &mut covered[a..b] {
            *c += 1;
        }
        // The rank's times onto rank 0's clock with the mean of its two offsets.
        let off = (f(&v["clock_offset_before"]["offset_s"])
            + f(&v["clock_offset_after"]["offset_s"]))
            / 2.0;
        let (s, e) = (f(&v["start_unix_s"]) - off, f(&v["end_unix_s"]) - off);
        assert!(
            s >= f(&v["start_barrier_unix_s"]) - off - 0.01 && e > s,
            "rank {r}: window {s}..{e}"
        );
        (tis, tio) = (tis.min(s), tio.max(e));
        // The node's own report is there, over its shard.
        assert_eq!(v["report"]["samples"].as_u64(), Some((b - a) as u64));
    }
    assert!(
        covered.iter().all(|c| *c == 1),
        "each sample once: {covered:?}"
    );
    let o = common::command()
        .args(["merge", "--json"])
        .arg(&d)
        .output()
        .unwrap();
    let c: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{c}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    common::assert_schema_valid("cluster.schema.json", &c);
    assert_eq!(c, read_json(&d.join("cluster.json")));
    assert_eq!(c["valid"], true, "{}", c["problems"]);
    assert_eq!(c["cluster"]["samples"], 301);
    let fps = f(&c["cluster"]["fps"]["value"]);
    let mine = 301.0 / (tio - tis);
    assert!(
        (fps / mine - 1.0).abs() < 0.005,
        "merge's FPS {fps} vs {mine} recomputed from the rank files"
    );
    // One host: the offsets are within their bounds, the error bar is tight, and the
    // barrier-to-barrier time (an upper bound on T) gives the lower FPS.
    assert!(f(&c["cluster"]["fps_low"]) <= fps && fps <= f(&c["cluster"]["fps_high"]));
    assert!(
        f(&c["cluster"]["fps_barrier"]["value"]) <= fps * 1.001,
        "{c}"
    );
    assert!(f(&c["cluster"]["imbalance"]) >= 1.0);
    let md = std::fs::read_to_string(d.join("cluster.md")).unwrap();
    assert!(md.contains("**VALID**") && md.contains("| 2 |"), "{md}");

    // A rank that ran another model (its file edited as a different build would write it)
    // makes the run invalid, named.
    let p2 = d.join("rank-2.json");
    let mut v = read_json(&p2);
    v["report"]["model_sha256"] = "0".repeat(64).into();
    std::fs::write(&p2, v.to_string()).unwrap();
    let (code, out, _) = common::acceval(&["merge", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("rank 2 ran a different model (SHA-256) than rank 0"),
        "{out}"
    );
    assert!(
        !out.contains("FPS (§7.2.4 b, N"),
        "no FPS for an invalid run: {out}"
    );
}

#[test]
fn a_rank_killed_mid_run_makes_the_cluster_run_invalid_and_is_named() {
    if !have_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("run");
    // Rank 1 is killed (SIGKILL) two seconds into a run of about a minute.
    let run = format!(
        "\"$ACCEVAL\" bench --model lstm-load-forecast --cluster {} --runs 30000 --cluster-timeout 60",
        d.display()
    );
    let t = std::time::Instant::now();
    let o = mpirun_sh(&format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then {run} & p=$!; sleep 2; kill -9 $p; exit 9; else exec {run}; fi"
    ));
    assert!(!o.status.success());
    assert!(
        t.elapsed().as_secs() < 60,
        "the others did not wait out the run"
    );
    // SIGKILL gives no chance to write: rank 1 has no file if it died before it started, or
    // the provisional one naming the stage it had reached.
    let r1 = d.join("rank-1.json");
    let (missing, problem) = if r1.exists() {
        let v = read_json(&r1);
        common::assert_schema_valid("cluster-rank.schema.json", &v);
        assert_eq!(v["complete"], false, "{v}");
        (
            serde_json::json!([]),
            "rank 1 did not complete: interrupted or killed while",
        )
    } else {
        (serde_json::json!([1]), "rank 1 did not report")
    };
    let o = common::command()
        .args(["merge", "--json"])
        .arg(&d)
        .output()
        .unwrap();
    let c: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{c}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    common::assert_schema_valid("cluster.schema.json", &c);
    assert_eq!(c["valid"], false);
    assert_eq!(c["missing_ranks"], missing);
    assert!(
        c["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.as_str().unwrap_or("").contains(problem)),
        "{}",
        c["problems"]
    );
    assert!(
        c["cluster"]["fps"]["value"].is_null(),
        "no FPS of the survivors"
    );
    // merge of a folder with no rank file says what to run.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, _, err) = common::acceval(&["merge", empty.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("bench --cluster"), "{err}");
}

#[test]
fn mpirun_starts_three_ranks_that_know_who_they_are() {
    if !have_mpirun() {
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_hung_rank_is_named_after_the_deadline_and_every_rank_file_says_what_happened() {
    // Two ranks by hand at MASTER_ADDR:MASTER_PORT; rank 1 is stopped (SIGSTOP) a second
    // after it starts, so rank 0 waits for it at a barrier until its 3 s deadline.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("run");
    let port = free_port().to_string();
    let start = |r: &str| {
        let mut c = common::command();
        c.env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", &port)
            .args(["bench", "--model", "lstm-load-forecast", "--runs", "800"])
            .args(["--rank", r, "--world-size", "2", "--cluster-timeout", "3"])
            .arg("--cluster")
            .arg(&d)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };
    let zero = start("0");
    let mut one = start("1");
    std::thread::sleep(std::time::Duration::from_millis(1000));
    unsafe { libc::kill(one.id() as i32, libc::SIGSTOP) };
    let t = std::time::Instant::now();
    let o = zero.wait_with_output().unwrap();
    let _ = one.kill();
    let _ = one.wait();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        t.elapsed().as_secs() < 60,
        "rank 0 waited {:?}",
        t.elapsed()
    );
    // Stopped at a barrier (or, on a slow machine, before it joined): named either way.
    let named = |t: &str| {
        (t.contains("rank 1") && t.contains("silent")) || t.contains("rank(s) [1] did not join")
    };
    assert!(named(&err), "{err}");
    let r0 = read_json(&d.join("rank-0.json"));
    common::assert_schema_valid("cluster-rank.schema.json", &r0);
    assert_eq!(r0["complete"], false);
    assert!(named(r0["error"].as_str().unwrap()), "{r0}");
    let (code, out, _) = common::acceval(&["merge", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    // Rank 1, stopped then killed, left no file or its provisional one naming its stage.
    assert!(
        out.contains("INVALID")
            && (out.contains("rank 1 did not report")
                || out.contains("rank 1 did not complete: interrupted or killed while")),
        "{out}"
    );
}

#[test]
fn ctrl_c_on_mpirun_stops_every_rank_and_each_writes_its_file_marked_incomplete() {
    if !have_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("run");
    let bin = assert_cmd::cargo::cargo_bin("acceval");
    let mut m = std::process::Command::new("mpirun")
        .envs(
            common::command()
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
        )
        .env_remove("MASTER_ADDR")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "3"])
        .arg(&bin)
        .args(["bench", "--model", "lstm-load-forecast", "--runs", "300000"])
        .arg("--cluster")
        .arg(&d)
        // mpirun forwards its stdin to rank 0: it would read the test runner's (in CI, the
        // list of tests still to run).
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until every rank is in its timed window (each has written nothing yet), then SIGINT
    // to the launcher, as Ctrl-C in its terminal.
    std::thread::sleep(std::time::Duration::from_secs(4));
    unsafe { libc::kill(m.id() as i32, libc::SIGINT) };
    let t = std::time::Instant::now();
    let st = m.wait().unwrap();
    assert!(!st.success());
    assert!(
        t.elapsed().as_secs() < 20,
        "the ranks took {:?} to stop",
        t.elapsed()
    );
    for r in 0..3 {
        let v = read_json(&d.join(format!("rank-{r}.json")));
        common::assert_schema_valid("cluster-rank.schema.json", &v);
        assert_eq!(v["complete"], false, "rank {r}: {v}");
        assert!(
            v["error"].as_str().unwrap_or("").contains("interrupted"),
            "rank {r}: {}",
            v["error"]
        );
    }
    let (code, out, _) = common::acceval(&["merge", d.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        out.contains("rank 0 did not complete: interrupted"),
        "{out}"
    );
}

#[test]
fn kubernetes_indexed_job_ranks_meet_at_master_addr_and_merge() {
    // What the Indexed Job in docs/cluster.md gives each pod: JOB_COMPLETION_INDEX, the
    // coordinator in MASTER_ADDR/MASTER_PORT, and the world size on the command line.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("run");
    let port = free_port().to_string();
    let pods: Vec<_> = ["1", "0"]
        .into_iter()
        .map(|i| {
            let mut c = common::command();
            for k in [
                "OMPI_COMM_WORLD_RANK",
                "PMI_RANK",
                "PMIX_RANK",
                "RANK",
                "SLURM_PROCID",
            ] {
                c.env_remove(k);
            }
            c.env("JOB_COMPLETION_INDEX", i)
                .env("MASTER_ADDR", "localhost")
                .env("MASTER_PORT", &port)
                .args(["bench", "--model", "lstm-load-forecast", "--runs", "40"])
                .args(["--world-size", "2", "--cluster-timeout", "60", "--cluster"])
                .arg(&d)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for p in pods {
        let o = p.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    for r in 0..2 {
        let v = read_json(&d.join(format!("rank-{r}.json")));
        assert_eq!(v["launcher"], "Kubernetes Indexed Job", "{v}");
        assert!(
            v["rendezvous"].as_str().unwrap().contains("MASTER_ADDR"),
            "{}",
            v["rendezvous"]
        );
    }
    let (code, out, err) = common::acceval(&["merge", d.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("VALID (2 of 2 rank(s) reported; 40 of N = 40 samples)"),
        "{out}"
    );
}

/// The trained tensors of a safetensors file, by name.
fn weights(p: &std::path::Path) -> std::collections::BTreeMap<String, Vec<f32>> {
    candle_core::safetensors::load(p, &candle_core::Device::Cpu)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .into_iter()
        .map(|(k, t)| {
            let v = t
                .to_dtype(candle_core::DType::F32)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
            (k, v)
        })
        .collect()
}

#[test]
fn data_parallel_training_ends_with_the_weights_of_one_rank_on_the_same_global_batch() {
    if !have_mpirun() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let train = [
        "train",
        "--workload",
        "lstm-load-forecast",
        "--samples",
        "256",
        "--eval-samples",
        "24",
        "--batch",
        "64",
        "--epochs",
        "2",
        "--threads",
        "1",
        "--warmup-steps",
        "0",
    ]
    .join(" ");
    // One rank: the reference.
    let one = dir.path().join("one.safetensors");
    let one_json = dir.path().join("one.json");
    let (code, _, err) = common::acceval(
        &[
            train.split(' ').collect::<Vec<_>>(),
            vec![
                "--save-weights",
                one.to_str().unwrap(),
                "--export-json",
                one_json.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    let reference = weights(&one);
    let mut modes = vec![(3, "ring"), (2, "parameter-server")];
    if cfg!(feature = "mpi") {
        // MPI_Allreduce of Debian's Open MPI (cargo test --features mpi).
        modes.push((3, "mpi"));
    }
    for (np, mode) in modes {
        let d = dir.path().join(format!("{mode}-{np}"));
        let w = dir.path().join(format!("{mode}.safetensors"));
        let mut c = std::process::Command::new("mpirun");
        c.envs(
            common::command()
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
        )
        .env_remove("MASTER_ADDR")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &np.to_string(),
        ])
        .arg(assert_cmd::cargo::cargo_bin("acceval"))
        .args(train.split(' '))
        .args(["--all-reduce", mode, "--save-weights"])
        .arg(&w)
        .arg("--cluster")
        .arg(&d);
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "{mode}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        // Every rank ends with exactly the same weights (one sum, shared)...
        let w0 = weights(&w);
        for r in 1..np {
            let wr = weights(&w.with_file_name(format!("{mode}.rank{r}.safetensors")));
            assert!(wr == w0, "{mode}: rank {r}'s weights differ from rank 0's");
        }
        // ...and they are one rank's on the same global batches, within float tolerance
        // (the sum is taken in another order).
        assert_eq!(
            w0.keys().collect::<Vec<_>>(),
            reference.keys().collect::<Vec<_>>()
        );
        let mut worst = (0f32, String::new());
        for (k, a) in &reference {
            let scale = a.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-3);
            for (x, y) in a.iter().zip(&w0[k]) {
                let rel = (x - y).abs() / scale;
                if rel > worst.0 {
                    worst = (rel, k.clone());
                }
            }
        }
        assert!(
            worst.0 < 1e-4,
            "{mode}: {} differs by {:e} of its scale",
            worst.1,
            worst.0
        );
        // The rank files: the all-reduce's rounds and bytes, and every sample trained once.
        let mut local = 0;
        for r in 0..np {
            let v = read_json(&d.join(format!("train-rank-{r}.json")));
            common::assert_schema_valid("cluster-train-rank.schema.json", &v);
            assert_eq!(v["complete"], true, "{v}");
            let comm = &v["comm"];
            assert_eq!(comm["calls"], 8, "2 epochs × 4 steps: {comm}");
            if mode == "ring" {
                assert_eq!(comm["rounds"].as_u64(), Some(2 * (np as u64 - 1)));
            }
            if mode == "mpi" {
                assert!(
                    v["rendezvous"].as_str().unwrap().contains("MPI_Barrier"),
                    "{v}"
                );
            }
            assert!(f(&v["compute_s"]) > 0.0 && f(&comm["seconds"]) > 0.0, "{v}");
            local += v["local_samples"].as_u64().unwrap();
        }
        assert_eq!(
            local,
            2 * 256,
            "{mode}: each sample of each epoch on one rank"
        );
        eprintln!(
            "{mode} on {np} ranks: worst relative difference {:e} ({})",
            worst.0, worst.1
        );
    }
}

#[test]
fn the_mpi_all_reduce_without_the_feature_says_how_to_build_it() {
    if cfg!(feature = "mpi") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = common::acceval(&[
        "train",
        "--workload",
        "lstm-load-forecast",
        "--samples",
        "64",
        "--epochs",
        "1",
        "--rank",
        "0",
        "--world-size",
        "1",
        "--all-reduce",
        "mpi",
        "--cluster",
        dir.path().to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("cargo feature mpi") && err.contains("libopenmpi-dev"),
        "{err}"
    );
    let v = read_json(&dir.path().join("train-rank-0.json"));
    assert_eq!(v["complete"], false, "{v}");
}

#[test]
fn a_rank_stopped_by_a_signal_while_it_waits_for_the_others_still_writes_its_file() {
    // Rank 1 of 2, alone: it waits for rank 0 (never started) where no measurement loop looks
    // at the stop flag. SIGTERM, as mpirun or scancel sends, must still leave its file,
    // marked incomplete and naming where it was, and end it at once (not at SIGKILL).
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let bench = "bench --model lstm-load-forecast --runs 100";
    let train = "train --workload lstm-load-forecast --samples 64 --eval-samples 8 --batch 16 --epochs 1 --all-reduce ring";
    for (args, file) in [(bench, "rank-1.json"), (train, "train-rank-1.json")] {
        let d = dir.path().join(file.trim_end_matches(".json"));
        let mut c = common::command();
        c.env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", &port)
            .args(args.split(' '))
            .args([
                "--rank",
                "1",
                "--world-size",
                "2",
                "--cluster-timeout",
                "120",
            ])
            .arg("--cluster")
            .arg(&d)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let child = c.spawn().unwrap();
        // Its provisional file says it is meeting the others: from then on it holds SIGTERM.
        let f = d.join(file);
        let waited = std::time::Instant::now();
        while !f.exists() && waited.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let v = read_json(&f);
        assert!(
            v["error"]
                .as_str()
                .unwrap_or("")
                .contains("interrupted or killed while meeting the other ranks"),
            "{args}: the provisional file: {v}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let t = std::time::Instant::now();
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(130), "{args}: {err}");
        assert!(
            t.elapsed().as_secs_f64() < 5.0,
            "{args}: stopped after {:?}",
            t.elapsed()
        );
        assert!(
            err.contains("interrupted while meeting the other ranks"),
            "{err}"
        );
        let v = read_json(&f);
        let schema = if file == "rank-1.json" {
            "cluster-rank.schema.json"
        } else {
            "cluster-train-rank.schema.json"
        };
        common::assert_schema_valid(schema, &v);
        assert_eq!(v["rank"], 1, "{v}");
        assert_eq!(v["complete"], false, "{v}");
        let e = v["error"].as_str().unwrap_or("");
        assert!(
            e.starts_with("interrupted (Ctrl-C or SIGTERM) while meeting the other ranks"),
            "{args}: {v}"
        );
        if file == "rank-1.json" {
            let (code, out, _) = common::acceval(&["merge", d.to_str().unwrap()]);
            assert_eq!(code, 1, "{out}");
            assert!(out.contains("INVALID"), "{out}");
        }
    }
}

/// `accuracy --cluster` (issue 25, point 2): each rank grades its shard of the N inputs;
/// `merge` pools each output's sums into the metrics one node grading all N computes.
#[test]
fn accuracy_over_ranks_merges_to_what_one_node_grades() {
    let model = "lstm-load-forecast-int8";
    let one = common::command()
        .args(["accuracy", "--model", model, "--json"])
        .output()
        .unwrap();
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let one: Value = serde_json::from_slice(&one.stdout).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut runs: Vec<(String, std::path::PathBuf)> = Vec::new();
    // Three ranks by hand (one after the other: accuracy ranks do not meet) and, where
    // Open MPI is installed, three under mpirun.
    let d = dir.path().join("by-hand");
    for r in 0..3 {
        let o = common::command()
            .args(["accuracy", "--model", model, "--cluster"])
            .arg(&d)
            .args(["--rank", &r.to_string(), "--world-size", "3"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    runs.push(("by hand".into(), d));
    if have_mpirun() {
        let d = dir.path().join("mpirun");
        let o = std::process::Command::new("mpirun")
            .envs(
                common::command()
                    .get_envs()
                    .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
            )
            .args(["--allow-run-as-root", "--oversubscribe", "-np", "3"])
            .arg(assert_cmd::cargo::cargo_bin("acceval"))
            .args(["accuracy", "--model", model, "--cluster"])
            .arg(&d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        runs.push(("mpirun".into(), d));
    }
    for (how, d) in &runs {
        for r in 0..3 {
            let v = read_json(&d.join(format!("accuracy-rank-{r}.json")));
            common::assert_schema_valid("cluster-accuracy-rank.schema.json", &v);
            assert_eq!(v["complete"], true, "{how}: {v}");
        }
        let o = common::command()
            .args(["merge", "--json"])
            .arg(d)
            .output()
            .unwrap();
        let c: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        assert_eq!(o.status.code(), Some(0), "{how}: {c}");
        common::assert_schema_valid("cluster.schema.json", &c);
        assert_eq!(c["kind"], "accuracy");
        let a = &c["accuracy"];
        assert_eq!(a["inputs"], one["inputs_used"], "{how}");
        assert_eq!(a["agreement_text"], one["agreement_text"], "{how}");
        assert_eq!(a["level"], one["level"], "{how}");
        let close = |x: &Value, y: &Value| {
            let (x, y) = (f(x), f(y));
            (x - y).abs() <= 1e-12 * x.abs().max(y.abs()) + 1e-300
        };
        assert!(f(&one["mse"]) > 0.0, "INT8 differs from the FP32 reference");
        assert!(close(&a["mse"], &one["mse"]), "{how}: {a} vs {one}");
        for (m, s) in a["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .zip(one["outputs"].as_array().unwrap())
        {
            assert_eq!(m["name"], s["name"]);
            assert_eq!(m["elements"], s["elements"], "{how}");
            for k in ["mse", "max_abs_error", "rel_l2_error", "cosine"] {
                assert!(close(&m[k], &s[k]), "{how}: {k}: {} vs {}", m[k], s[k]);
            }
        }
    }
    // A missing rank makes the run invalid, named; no pooled figure is given as the run's.
    let d = &runs[0].1;
    std::fs::remove_file(d.join("accuracy-rank-1.json")).unwrap();
    let (code, out, _) = common::acceval(&["merge", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("INVALID") && out.contains("rank 1 did not report"),
        "{out}"
    );
}
