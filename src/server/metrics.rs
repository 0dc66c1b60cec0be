//! Prometheus metrics of `serve`, in the text exposition format (version 0.0.4).
//!
//! Written here rather than with the `prometheus` crates: the server has six series with
//! fixed labels, lock-free atomics suffice, and the format is a few lines of text; a
//! registry with dynamic labels would cost more than it brings.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Bucket upper bounds, seconds (Prometheus' `le`).
const BOUNDS: [f64; 15] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    10.0,
];

/// A cumulative histogram of durations.
pub struct Histogram {
    counts: [AtomicU64; BOUNDS.len() + 1],
    sum_ns: AtomicU64,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
        }
    }
    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        let k = BOUNDS.iter().position(|&b| s <= b).unwrap_or(BOUNDS.len());
        self.counts[k].fetch_add(1, Ordering::Relaxed);
        self.sum_ns
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }
    fn render(&self, out: &mut String, name: &str, help: &str, labels: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cum = 0;
        for (k, b) in BOUNDS.iter().enumerate() {
            cum += self.counts[k].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{b}\"}} {cum}");
        }
        cum += self.counts[BOUNDS.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {cum}");
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(
            out,
            "{name}_sum{{{labels}}} {sum}\n{name}_count{{{labels}}} {cum}"
        );
    }
}

/// Everything `/metrics` shows.
pub struct Metrics {
    model: String,
    /// Inference requests by HTTP status.
    by_status: Mutex<BTreeMap<u16, u64>>,
    /// Request time, arrival to response (all statuses).
    pub latency: Histogram,
    /// Time a request waited in the queue before its batch ran.
    pub queue: Histogram,
    /// Time of each model run (one batch).
    pub compute: Histogram,
    pub batches: AtomicU64,
}

impl Metrics {
    pub fn new(model: &str) -> Metrics {
        Metrics {
            model: model.replace(['"', '\\', '\n'], "_"),
            by_status: Mutex::new(BTreeMap::new()),
            latency: Histogram::new(),
            queue: Histogram::new(),
            compute: Histogram::new(),
            batches: AtomicU64::new(0),
        }
    }

    pub fn request(&self, status: u16, took: Duration) {
        *self.by_status.lock().unwrap().entry(status).or_insert(0) += 1;
        self.latency.observe(took);
    }

    pub fn render(&self, inflight: usize) -> String {
        let m = &self.model;
        let l = format!("model=\"{m}\"");
        let mut out = String::new();
        let by = self.by_status.lock().unwrap().clone();
        out.push_str("# HELP acceval_inference_requests_total Inference requests, by HTTP status.\n# TYPE acceval_inference_requests_total counter\n");
        for (code, n) in &by {
            let _ = writeln!(
                out,
                "acceval_inference_requests_total{{{l},code=\"{code}\"}} {n}"
            );
        }
        let failed: u64 = by.iter().filter(|(c, _)| **c >= 400).map(|(_, n)| n).sum();
        let _ = writeln!(
            out,
            "# HELP acceval_inference_failures_total Inference requests answered with a 4xx or 5xx status.\n# TYPE acceval_inference_failures_total counter\nacceval_inference_failures_total{{{l}}} {failed}"
        );
        let _ = writeln!(
            out,
            "# HELP acceval_inflight_requests Inference requests admitted and not yet answered.\n# TYPE acceval_inflight_requests gauge\nacceval_inflight_requests{{{l}}} {inflight}"
        );
        let _ = writeln!(
            out,
            "# HELP acceval_batches_total Model runs (one per batch).\n# TYPE acceval_batches_total counter\nacceval_batches_total{{{l}}} {}",
            self.batches.load(Ordering::Relaxed)
        );
        self.latency.render(
            &mut out,
            "acceval_request_duration_seconds",
            "Inference request time in the server, arrival to response, seconds.",
            &l,
        );
        self.queue.render(
            &mut out,
            "acceval_queue_duration_seconds",
            "Time a request waited for a model instance, seconds.",
            &l,
        );
        self.compute.render(
            &mut out,
            "acceval_compute_duration_seconds",
            "Time of one model run (a batch), seconds.",
            &l,
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let m = Metrics::new("m");
        m.request(200, Duration::from_micros(300));
        m.request(200, Duration::from_millis(3));
        m.request(400, Duration::from_secs(20));
        let t = m.render(1);
        assert!(t.contains("acceval_inference_requests_total{model=\"m\",code=\"200\"} 2"));
        assert!(t.contains("acceval_inference_failures_total{model=\"m\"} 1"));
        assert!(t.contains("acceval_request_duration_seconds_bucket{model=\"m\",le=\"0.0005\"} 1"));
        assert!(t.contains("acceval_request_duration_seconds_bucket{model=\"m\",le=\"0.005\"} 2"));
        assert!(t.contains("acceval_request_duration_seconds_bucket{model=\"m\",le=\"+Inf\"} 3"));
        assert!(t.contains("acceval_request_duration_seconds_count{model=\"m\"} 3"));
    }
}
