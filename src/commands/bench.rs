//! `acceval bench`: settings → `measure::bench::measure` → emit.

use crate::Outcome;
use crate::cli::BenchArgs;
use crate::measure::bench;
use crate::report::bench::{samples_table, telemetry_table};
use crate::report::schema::Verdict;
use crate::util::fs::write_file;
use crate::util::progress::Progress;
use crate::util::signal::stop_flag;

pub fn run(args: BenchArgs) -> anyhow::Result<Outcome> {
    let s = args.settings()?;
    if let Some(dir) = &args.cluster.cluster {
        return cluster_rank(&args, s, dir);
    }
    let progress = Progress::new(
        s.policy.runs as u64,
        "{spinner} {elapsed_precise} {pos} samples (min {len}) {msg}",
    );
    let report = bench::measure(&s, &progress, &stop_flag()).map_err(crate::cli::flags::measure)?;
    progress.finish();
    let out = args.output.outputs();
    out.write_files(&report)?;
    if let Some(p) = &args.export_samples {
        write_file(p, &samples_table(&report).to_csv())?;
    }
    if let Some(p) = &args.export_telemetry {
        let Some(rec) = &report.recording else {
            anyhow::bail!("--export-telemetry: telemetry is off (--sample-ms 0)");
        };
        write_file(p, &telemetry_table(rec).to_csv())?;
    }
    out.print(&report)?;
    if let Some(p) = report.pipelined.as_ref().filter(|p| !p.complete) {
        anyhow::bail!(
            "the pipelined run did not finish: {}: {} of {} outputs were written before it{}",
            p.error.as_deref().unwrap_or("incomplete"),
            p.samples,
            s.policy.runs.max(1),
            if out.export_json.is_some() {
                " (written, pipelined.complete: false)"
            } else {
                ""
            }
        );
    }
    if let (Some(e), false) = (&report.error, report.interrupted) {
        anyhow::bail!(
            "{e}: {} samples were measured before it{}",
            report.samples,
            if out.export_json.is_some() {
                " (written, complete: false)"
            } else {
                ""
            }
        );
    }
    Ok(
        if report.validity.result == Verdict::Valid || args.allow_invalid {
            Outcome::Ok
        } else {
            Outcome::NotCompliant
        },
    )
}

/// One rank of `bench --cluster DIR`: its shard of the --runs samples between the cluster's
/// barriers, written to DIR/rank-<r>.json (also when it or the meeting fails).
fn cluster_rank(
    args: &BenchArgs,
    mut s: bench::BenchSettings,
    dir: &std::path::Path,
) -> anyhow::Result<Outcome> {
    use crate::cluster::run::{Part, meet};
    use crate::report::schema::cluster::Shard;

    if !s.batch.is_empty() || s.peak_power {
        anyhow::bail!(
            "--cluster times one pass over the samples; run --batch and --peak-power on one node"
        );
    }
    let c = &args.cluster;
    let found = c.by_hand.find()?;
    let n = s.policy.runs;
    if n < found.world_size {
        anyhow::bail!(
            "--runs {n} is the cluster's samples in all: it must be at least the {} ranks",
            found.world_size
        );
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("--cluster {}: {e}", dir.display()))?;
    let shard = Shard::of(n, found.world_size, found.rank);
    s.policy.runs = shard.len();
    s.policy.duration_s = 0.0;
    let file = rank_record(&found, n, shard);
    let path = dir.join(format!("rank-{}.json", found.rank));
    let stop = stop_flag();
    let rf = crate::cluster::file::RankFile::new(path.clone(), file, &stop);
    let timeout = std::time::Duration::from_secs_f64(c.cluster_timeout);
    rf.stage("meeting the other ranks");
    let mut meeting = match meet(&found, dir, timeout) {
        Ok(m) => m,
        Err(e) => return Err(rf.fail(format!("meeting the other ranks: {e}"))),
    };
    rf.with(|f| f.rendezvous = meeting.how.clone());
    rf.stage("probing the clock against rank 0's");
    match meeting.clock() {
        Ok(o) => rf.with(|f| f.clock_offset_before = Some(o)),
        Err(e) => return Err(rf.fail(format!("clock probes before the run: {e}"))),
    }
    rf.stage("loading the model and warming up");
    let mut part = Part {
        meeting: &mut meeting,
        shard,
        start_barrier_unix_s: None,
        end_barrier_unix_s: None,
        error: None,
        stage: Some(rf.stage_handle()),
    };
    let measured = bench::measure_part(&s, &Progress::hidden(), &stop, Some(&mut part));
    let (start_b, end_b, part_error) = (
        part.start_barrier_unix_s,
        part.end_barrier_unix_s,
        part.error.take(),
    );
    rf.with(|f| {
        f.start_barrier_unix_s = start_b;
        f.end_barrier_unix_s = end_b;
    });
    let report = match measured {
        Ok(r) => r,
        Err(e) => {
            let e = format!("{}", crate::cli::flags::measure(e));
            meeting.abort(&format!("rank {}: {e}", found.rank));
            return Err(rf.fail(e));
        }
    };
    if let (Some(o), Some(first), Some(last)) =
        (report.origin_unix_ms, report.raw.first(), report.raw.last())
    {
        rf.with(|f| {
            f.start_unix_s = Some((o + first.start_ms) / 1e3);
            f.end_unix_s = Some((o + last.start_ms + last.total_ms) / 1e3);
        });
    }
    rf.with(|f| f.samples = report.samples);
    let mut error = part_error.or_else(|| report.error.clone());
    if error.is_none() {
        rf.stage("probing the clock after the run");
        match meeting.clock() {
            Ok(o) => rf.with(|f| f.clock_offset_after = Some(o)),
            Err(e) => error = Some(format!("clock probes after the run: {e}")),
        }
    }
    if report.interrupted && error.is_none() {
        error = Some("interrupted (Ctrl-C or SIGTERM)".into());
    }
    rf.with(|f| {
        f.common.complete = error.is_none() && report.complete && report.samples == shard.len();
        f.report = Some(report);
    });
    if let Some(e) = error {
        return Err(rf.fail(e));
    }
    rf.write()?;
    // Only the summary reads it; the clone leaves the watcher its own record.
    print_rank_summary(&rf.with(|f| f.clone()), &path, dir);
    Ok(Outcome::Ok)
}

/// A rank's record before it meets the others: its shard of N, nothing measured yet.
fn rank_record(
    found: &crate::cluster::Rank,
    n: usize,
    shard: crate::report::schema::cluster::Shard,
) -> crate::report::schema::cluster::RankReport {
    crate::report::schema::cluster::RankReport {
        schema: "acceval.cluster-rank/1".into(),
        kind: "bench".into(),
        common: crate::cluster::run::common(found),
        rendezvous: "n/a: the ranks did not meet".into(),
        total_samples: n,
        shard,
        samples: 0,
        start_unix_s: None,
        end_unix_s: None,
        start_barrier_unix_s: None,
        end_barrier_unix_s: None,
        clock_offset_before: None,
        clock_offset_after: None,
        report: None,
    }
}

/// The rank's line on stdout, and what to run next on rank 0.
fn print_rank_summary(
    file: &crate::report::schema::cluster::RankReport,
    path: &std::path::Path,
    dir: &std::path::Path,
) {
    let t = file.end_unix_s.zip(file.start_unix_s).map(|(b, a)| b - a);
    println!(
        "rank {} of {} on {}: samples {}..{} ({}) in {} ({}); wrote {}",
        file.common.rank,
        file.common.world_size,
        file.common.host,
        file.shard.start,
        file.shard.end,
        file.samples,
        t.map_or("n/a".into(), |t| format!("{t:.3} s")),
        t.filter(|t| *t > 0.0).map_or("n/a".into(), |t| format!(
            "{:.1} inferences/s",
            file.samples as f64 / t
        )),
        path.display()
    );
    if file.common.rank == 0 {
        println!(
            "when every rank has finished: acceval merge {}",
            dir.display()
        );
    }
}
