//! `acceval train`: settings → `train::run` → emit. An interrupted or failed training
//! still writes its JSON (complete: false) before the error (exit 2).

use crate::Outcome;
use crate::cli::TrainArgs;
use crate::util::progress::Progress;
use crate::util::signal::stop_flag;

pub fn run(args: TrainArgs) -> anyhow::Result<Outcome> {
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        // candle 0.11 runs its elementwise ops on a second pool beside rayon's, whose
        // CANDLE_NUM_THREADS − 1 workers spin 25,000 rounds after each op before they sleep:
        // during the trainer's own ops (on rayon's pool) they take cores from it (15 % of a
        // MobileNetV2 step's CPU samples at 2 threads). With one thread that pool has no
        // workers and its ops run on the calling thread. A/B, 3 interleaved rounds, 2 threads,
        // step P50: LSTM 155/124/123 → 123/114/113 ms, MobileNetV2 462/415/419 → 393/349/341,
        // YOLOv8n 285/235/235 → 199/211/206 (docs/train.md).
        // SAFETY: as below, no other thread runs yet.
        unsafe { std::env::set_var("CANDLE_NUM_THREADS", "1") };
    }
    if let Some(n) = args.threads {
        // candle sizes its matrix products by RAYON_NUM_THREADS at every call, and rayon
        // its pool by it at first use.
        // SAFETY: no other thread runs yet: the progress bar, the sampler and candle's
        // pool all start after this line.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", n.to_string()) };
    }
    let s = args.settings()?;
    if let Some(dir) = &args.cluster.cluster {
        return data_parallel(&args, s, dir);
    }
    let progress = Progress::new(
        0,
        "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} steps {msg}",
    );
    let report =
        crate::train::run(&s, &progress, &stop_flag()).map_err(crate::cli::flags::train)?;
    progress.finish();
    let out = args.output.outputs();
    out.emit(&report)?;
    // Interrupted or failed: the report says complete: false, and the exit code (2) too.
    match &report.error {
        Some(e) => anyhow::bail!(
            "{e}{}",
            if out.export_json.is_some() || out.out.is_some() {
                " (the report is written, complete: false)"
            } else {
                ""
            }
        ),
        _ => Ok(Outcome::Ok),
    }
}

/// `--path` of rank `r` > 0: `stem.rank<r>.ext`, so ranks sharing a folder do not overwrite
/// each other's weights (every rank's are the same after each step; a test compares them).
fn per_rank(p: &std::path::Path, r: usize) -> std::path::PathBuf {
    if r == 0 {
        return p.to_path_buf();
    }
    let stem = p.file_stem().unwrap_or_default().to_string_lossy();
    let name = match p.extension() {
        Some(e) => format!("{stem}.rank{r}.{}", e.to_string_lossy()),
        None => format!("{stem}.rank{r}"),
    };
    p.with_file_name(name)
}

/// One rank of data-parallel training (`train --cluster DIR`).
fn data_parallel(
    args: &TrainArgs,
    mut s: crate::train::TrainSettings,
    dir: &std::path::Path,
) -> anyhow::Result<Outcome> {
    use crate::cluster::collective::Reducer;
    use crate::cluster::run::meet;
    use crate::report::schema::cluster::TrainRankReport;

    let c = &args.cluster;
    let found = c.by_hand.find()?;
    if !matches!(s.source, crate::train::Source::Builtin(_)) {
        anyhow::bail!(
            "--cluster trains a built-in workload (--workload); a lab's own script (--exec) runs its own data parallelism"
        );
    }
    if s.repeat > 1 || s.peak_power {
        anyhow::bail!("--cluster runs one training: leave out --repeat and --peak-power");
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("--cluster {}: {e}", dir.display()))?;
    let r = found.rank;
    for p in [&mut s.save_weights, &mut s.export_onnx, &mut s.mllog]
        .into_iter()
        .flatten()
    {
        *p = per_rank(p, r);
    }
    let file = TrainRankReport {
        schema: "acceval.cluster-train-rank/1".into(),
        common: crate::cluster::run::common(&found),
        rendezvous: "n/a: the ranks did not meet".into(),
        all_reduce: args.all_reduce.to_string(),
        global_batch: 0,
        local_samples: 0,
        local_samples_per_s: None,
        comm: Default::default(),
        compute_s: None,
        report: None,
    };
    let path = dir.join(format!("train-rank-{r}.json"));
    let stop = stop_flag();
    let rf = crate::cluster::file::RankFile::new(path.clone(), file, &stop);
    let timeout = std::time::Duration::from_secs_f64(c.cluster_timeout);
    rf.stage("meeting the other ranks");
    let meeting = match meet(&found, dir, timeout) {
        Ok(m) => m,
        Err(e) => return Err(rf.fail(format!("meeting the other ranks: {e}"))),
    };
    rf.with(|f| f.rendezvous = meeting.how.clone());
    rf.stage("setting up the all-reduce");
    let reducer = match Reducer::new(meeting, found.world_size, args.all_reduce) {
        Ok(x) => x,
        Err(e) => return Err(rf.fail(format!("setting up the all-reduce: {e}"))),
    };
    // With MPI the reducer is neither Send nor Sync (MPI's handles stay on the thread that
    // initialised it): only this thread, the one that trains, ever touches it.
    #[allow(clippy::arc_with_non_send_sync)]
    let shared = std::sync::Arc::new(std::sync::Mutex::new(reducer));
    s.data_parallel = Some(crate::train::DataParallel(std::sync::Arc::clone(&shared)));
    let progress = if r == 0 {
        Progress::new(
            0,
            "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} steps {msg}",
        )
    } else {
        Progress::hidden()
    };
    rf.stage("training (or waiting in an all-reduce)");
    let result = crate::train::run(&s, &progress, &stop);
    progress.finish();
    let red = shared
        .lock()
        .map_err(|_| anyhow::anyhow!("rank {r}: the all-reduce was poisoned"))?;
    rf.with(|f| {
        f.comm = red.stats.clone();
        f.local_samples = red.local_samples;
        f.compute_s = (red.stats.calls > 0).then(|| red.step_seconds - red.stats.seconds);
    });
    drop(red);
    let report = match result {
        Ok(x) => x,
        Err(e) => {
            let e = format!("{}", crate::cli::flags::train(e));
            if let Ok(mut red) = shared.lock() {
                red.meeting().abort(&format!("rank {r}: {e}"));
            }
            return Err(rf.fail(e));
        }
    };
    let error = report.error.clone();
    let (total_s, thr) = (report.total_s, report.throughput_samples_per_s.value());
    rf.with(|f| {
        f.global_batch = report.batch.value().map_or(0, |b| b as usize);
        f.local_samples_per_s =
            (report.total_s > 0.0).then(|| f.local_samples as f64 / report.total_s);
        f.common.complete = report.error.is_none();
        f.report = Some(report);
    });
    if let Some(e) = error {
        return Err(rf.fail(e));
    }
    rf.write()?;
    // Only the summary line below reads it; the clone leaves the watcher its own record.
    let file = rf.with(|f| f.clone());
    println!(
        "rank {r} of {}: trained {} samples (its shares of global batches of {}) in {total_s:.3} s; global {} samples/s; all-reduce {} calls, {:.3} s, {} bytes sent; wrote {}",
        file.common.world_size,
        file.local_samples,
        file.global_batch,
        thr.map_or("n/a".into(), |t| format!("{t:.1}")),
        file.comm.calls,
        file.comm.seconds,
        file.comm.bytes_sent,
        path.display()
    );
    Ok(Outcome::Ok)
}
