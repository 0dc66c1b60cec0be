//! `acceval train --exec -- CMD ARGS...`: a lab's own training (PyTorch, MindSpore,
//! Paddle, ...) as acceval's child. Te − Ts is the child's spawn to its exit, timed here;
//! telemetry is sampled here; epochs, steps and evaluations come from the MLPerf
//! `:::MLLOG` lines the script prints on stdout (see `mllog` for the keys read). Epoch
//! windows for the telemetry are the times acceval received the `epoch_start`/`epoch_stop`
//! lines (its own monotonic clock); epoch durations are the script's `time_ms` differences.
//! Other output lines pass through to stderr.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::mllog::{self, Event};
use super::timing::Window;
use super::{Epochs, EvalPoint, Measured, TrainMode, TrainReport, TrainSettings};
use crate::util::progress::Progress;
use crate::util::signal::Cut;

/// An event with the time acceval read it (ms on the sampler's clock).
#[derive(Debug, Clone)]
pub struct Received {
    pub at_ms: f64,
    pub event: Event,
}

/// What the events say, on the clocks they give.
#[derive(Debug, Default)]
pub struct Parsed {
    pub epochs: Epochs,
    /// The script's epoch durations (its time_ms), s.
    pub epoch_times_s: Vec<f64>,
    pub step_ms: Vec<f64>,
    pub batch: Option<f64>,
    pub seed: Option<f64>,
    pub bad_lines: usize,
}

/// Reads the epochs, steps and evaluations from the events; `target` decides time to
/// target (from `run_start` to the first `eval_accuracy` that meets it).
pub fn parse_events(events: &[Received], target: Option<&super::Target>) -> Parsed {
    let mut p = Parsed::default();
    let run_start = events
        .iter()
        .find(|e| e.event.key == "run_start")
        .map(|e| e.event.time_ms);
    let mut open: Option<(&Received, u64)> = None;
    let mut step_open: Option<f64> = None;
    let mut interval_steps = Vec::new();
    let mut point_steps = Vec::new();
    for r in events {
        let e = &r.event;
        match e.key.as_str() {
            "epoch_start" => open = Some((r, e.meta_u64("epoch_num").unwrap_or(0))),
            "epoch_stop" => {
                if let Some((s, num)) = open.take() {
                    let samples = e
                        .meta_u64("samples_count")
                        .or_else(|| s.event.meta_u64("samples_count"))
                        .unwrap_or(0);
                    p.epochs.push(
                        Window {
                            start_ms: s.at_ms,
                            end_ms: r.at_ms,
                        },
                        samples,
                        None,
                        None,
                    );
                    p.epoch_times_s.push((e.time_ms - s.event.time_ms) / 1e3);
                    let _ = num;
                }
            }
            "eval_accuracy" => {
                let (Some(v), Some(t0)) = (e.value_f64(), run_start) else {
                    continue;
                };
                let at_s = (e.time_ms - t0) / 1e3;
                let point = EvalPoint {
                    metric: "eval_accuracy".into(),
                    value: v,
                    at_s,
                };
                let epoch = e.meta_u64("epoch_num").map(|n| n as usize);
                // Attach it to its epoch (by number, else the latest).
                let idx = epoch
                    .and_then(|n| n.checked_sub(1))
                    .filter(|&i| i < p.epochs.eval.len())
                    .or_else(|| p.epochs.eval.len().checked_sub(1));
                if let Some(i) = idx {
                    p.epochs.eval[i] = Some(point.clone());
                }
                if let Some(t) = target
                    && t.metric == "eval_accuracy"
                    && t.reached(v)
                {
                    p.epochs
                        .reached(epoch.unwrap_or(p.epochs.windows.len()), at_s);
                }
            }
            "step_time_ms" => point_steps.extend(e.value_f64()),
            "step_start" => step_open = Some(e.time_ms),
            "step_stop" => {
                if let Some(t) = step_open.take() {
                    interval_steps.push(e.time_ms - t);
                }
            }
            "global_batch_size" => p.batch = e.value_f64(),
            "seed" => p.seed = e.value_f64(),
            _ => {}
        }
    }
    p.step_ms = if point_steps.is_empty() {
        interval_steps
    } else {
        point_steps
    };
    p
}

/// Runs the lab's command and reads its events.
pub fn run(
    s: &TrainSettings,
    argv: &[String],
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<TrainReport, super::Error> {
    let (program, args) = argv.split_first().ok_or_else(|| {
        crate::util::setting::SettingError::says(
            super::Setting::Exec,
            "needs a command: CMD ARGS...",
        )
    })?;
    let (sampler, sensors, clock) = super::start_telemetry(&s.telemetry);
    let ts = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        // Python block-buffers a piped stdout: the events would arrive at exit.
        .env("PYTHONUNBUFFERED", "1")
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|err| super::Error::Start {
            program: program.clone(),
            err,
        })?;
    let stdout = child.stdout.take().ok_or(super::Error::NoStdout)?;
    let mut events = Vec::new();
    let mut bad = 0usize;
    let mut interrupted = false;
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let at_ms = clock.ms(Instant::now());
        match mllog::parse_line(&line) {
            Some(Ok(event)) => {
                if event.key == "epoch_stop" {
                    progress.set_message(format!(
                        "epoch {} done",
                        event.meta_u64("epoch_num").unwrap_or(0)
                    ));
                }
                events.push(Received { at_ms, event });
            }
            Some(Err(e)) => {
                bad += 1;
                progress.note(format!("acceval: {e}"));
            }
            None => progress.note(&line),
        }
        if stop.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            let _ = child.kill();
        }
    }
    let status = child.wait().map_err(super::Error::Wait)?;
    let total_s = ts.elapsed().as_secs_f64();
    let recording = sampler.map(|x| x.stop());
    let mut p = parse_events(&events, s.target.as_ref());
    p.bad_lines = bad;
    let mut r = super::blank_report(s, TrainMode::Exec, argv.join(" "));
    r.framework = "the lab's own (read through MLPerf :::MLLOG events)".into();
    r.device = "as the script chose".into();
    r.precision = "as the script chose".into();
    r.batch = Measured::of(p.batch, "the script logs no global_batch_size");
    r.seed = Measured::of(p.seed, "the script logs no seed");
    r.learning_rate = Measured::na("not read from the script");
    r.optimizer = "the script's".into();
    r.total_s = total_s;
    r.total_definition = "Te − Ts: acceval spawns the training as its child and times it to its exit, including the interpreter's start, data loading, evaluation and saving".into();
    r.step_definition = "the script's step_time_ms events (its synchronised step time), else step_start → step_stop time_ms".into();
    r.mllog_events = events.len();
    r.exit_code = status.code();
    super::fill_figures(
        &mut r,
        super::Figures {
            epochs: &p.epochs,
            step_ms: &p.step_ms,
            recording: recording.as_ref(),
            sensors,
            bytes_per_sample: None,
            prefer_cpu: false,
        },
    );
    // Epoch durations are the script's own clock; throughput follows them.
    for (e, t) in r.epochs.iter_mut().zip(&p.epoch_times_s) {
        e.time_s = *t;
        e.throughput_samples_per_s = if *t > 0.0 { e.samples as f64 / t } else { 0.0 };
    }
    let n = r.epochs.len() as f64;
    if n > 0.0 {
        let mt = r.epochs.iter().map(|e| e.time_s).sum::<f64>() / n;
        let ms = r.epochs.iter().map(|e| e.samples as f64).sum::<f64>() / n;
        r.throughput_samples_per_s = Measured::of(Some(ms / mt), "no epoch");
    }
    r.complete = status.success() && !interrupted;
    r.interrupted = interrupted;
    r.error = if interrupted {
        Some(Cut::Interrupted.to_string())
    } else if !status.success() {
        Some(format!("the training exited with {status}"))
    } else if events.is_empty() {
        Some("the training printed no :::MLLOG event".into())
    } else {
        None
    };
    if r.error.is_some() && !interrupted && events.is_empty() {
        r.complete = false;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(at: f64, line: &str) -> Received {
        Received {
            at_ms: at,
            event: mllog::parse_line(line).unwrap().unwrap(),
        }
    }

    #[test]
    fn epochs_steps_and_target_from_events() {
        let l = |t: u64, kind: &str, key: &str, value: &str, meta: &str| {
            format!(
                r#":::MLLOG {{"namespace": "", "time_ms": {t}, "event_type": "{kind}", "key": "{key}", "value": {value}, "metadata": {{"file": "t.py", "lineno": 1{meta}}}}}"#
            )
        };
        let events = vec![
            ev(0.0, &l(1000, "INTERVAL_START", "run_start", "null", "")),
            ev(
                10.0,
                &l(
                    1010,
                    "INTERVAL_START",
                    "epoch_start",
                    "null",
                    ", \"epoch_num\": 1",
                ),
            ),
            ev(20.0, &l(1020, "POINT_IN_TIME", "step_time_ms", "4.5", "")),
            ev(30.0, &l(1030, "POINT_IN_TIME", "step_time_ms", "5.5", "")),
            ev(
                2010.0,
                &l(
                    3010,
                    "INTERVAL_END",
                    "epoch_stop",
                    "null",
                    ", \"epoch_num\": 1, \"samples_count\": 100",
                ),
            ),
            ev(
                2020.0,
                &l(
                    3020,
                    "POINT_IN_TIME",
                    "eval_accuracy",
                    "0.9",
                    ", \"epoch_num\": 1",
                ),
            ),
        ];
        let t = super::super::Target {
            metric: "eval_accuracy".into(),
            op: ">=".into(),
            value: 0.8,
        };
        let p = parse_events(&events, Some(&t));
        assert_eq!(p.epochs.windows.len(), 1);
        assert_eq!(p.epoch_times_s, vec![2.0]);
        assert_eq!(p.epochs.samples, vec![100]);
        assert_eq!(p.step_ms, vec![4.5, 5.5]);
        assert_eq!(p.epochs.target, Some((1, 2.02)));
        assert_eq!(p.epochs.eval[0].as_ref().unwrap().value, 0.9);
    }
}
