//! The sampler thread: a tick at the window start, one every interval, one at its end;
//! late ticks are recorded as gaps. Sensors are read on this thread only, so the measured
//! loop never waits for a sensor.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{Channel, Gap, Kind, ReadFailure, Recording, Sensor, Tick};

pub struct Sampler {
    stop: mpsc::Sender<()>,
    handle: std::thread::JoinHandle<Recording>,
}

/// Starts sampling now: a tick at once (the window start), then every `interval`.
pub fn start(mut sensors: Vec<Box<dyn Sensor>>, interval: Duration) -> Sampler {
    let (tx, rx) = mpsc::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let handle = std::thread::spawn(move || {
        let channels: Vec<Channel> = sensors.iter().flat_map(|s| s.channels()).collect();
        let widths: Vec<usize> = sensors.iter().map(|s| s.channels().len()).collect();
        let mut ticks = Vec::with_capacity(64);
        let mut gaps = Vec::new();
        let mut failures: Vec<ReadFailure> = Vec::new();
        let t0 = Instant::now();
        let mut read_all = |t0: Instant, failures: &mut Vec<ReadFailure>| {
            let mut values = vec![f64::NAN; channels.len()];
            let mut off = 0;
            let t_ms = t0.elapsed().as_secs_f64() * 1e3;
            for (s, w) in sensors.iter_mut().zip(&widths) {
                s.read(&mut values[off..off + w]);
                for j in 0..*w {
                    let Some(why) = values[off + j].is_nan().then(|| s.failure(j)).flatten() else {
                        continue;
                    };
                    let name = &channels[off + j].name;
                    match failures.iter_mut().find(|f| &f.channel == name) {
                        Some(f) => {
                            f.count += 1;
                            f.last_at_ms = t_ms;
                        }
                        None => failures.push(ReadFailure {
                            channel: name.clone(),
                            count: 1,
                            first_at_ms: t_ms,
                            last_at_ms: t_ms,
                            error: why,
                        }),
                    }
                }
                off += w;
            }
            Tick { t_ms, values }
        };
        // The first tick is the baseline: utilizations are deltas over the previous tick,
        // and before the window there is none inside it.
        let mut first = read_all(t0, &mut failures);
        for (v, c) in first.values.iter_mut().zip(&channels) {
            if c.kind == Kind::Utilization {
                *v = f64::NAN;
            }
        }
        ticks.push(first);
        let _ = ready_tx.send(());
        let mut k = 1u64;
        loop {
            let due = t0 + interval * k as u32;
            let now = Instant::now();
            let wait = due.saturating_duration_since(now);
            match rx.recv_timeout(wait) {
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let late = Instant::now().duration_since(due);
                    let missed = (late.as_secs_f64() / interval.as_secs_f64()) as u64;
                    if late > interval / 2 {
                        gaps.push(Gap {
                            at_ms: t0.elapsed().as_secs_f64() * 1e3,
                            missed_ticks: missed.max(1),
                        });
                    }
                    ticks.push(read_all(t0, &mut failures));
                    k += 1 + missed;
                }
                // Stopped (or the harness went away): one last tick at the window end. A
                // utilization over a sliver of time (under half an interval) is mostly
                // counter granularity (/proc ticks are 10 ms): it is left out.
                _ => {
                    let mut last = read_all(t0, &mut failures);
                    let prev = ticks.last().map(|t: &Tick| t.t_ms).unwrap_or(0.0);
                    if last.t_ms - prev < interval.as_secs_f64() * 1e3 / 2.0 {
                        for (v, c) in last.values.iter_mut().zip(&channels) {
                            if c.kind == Kind::Utilization {
                                *v = f64::NAN;
                            }
                        }
                    }
                    ticks.push(last);
                    break;
                }
            }
        }
        Recording {
            interval_ms: interval.as_secs_f64() * 1e3,
            channels,
            ticks,
            gaps,
            failures,
        }
    });
    // The first tick marks the window start: wait for it.
    let _ = ready_rx.recv();
    Sampler { stop: tx, handle }
}

impl Sampler {
    /// Ends the window with a last tick and returns the recording.
    pub fn stop(self) -> Recording {
        let _ = self.stop.send(());
        self.handle.join().unwrap_or_else(|_| Recording {
            interval_ms: 0.0,
            channels: Vec::new(),
            ticks: Vec::new(),
            gaps: Vec::new(),
            failures: Vec::new(),
        })
    }
}
