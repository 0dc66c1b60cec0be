//! MLPerf's `:::MLLOG {json}` lines (mlcommons/logging `mllog`): read from a lab's
//! training script (`--exec`) and written by acceval's own trainer, so MLPerf's tooling
//! reads both.
//!
//! A line is `:::MLLOG ` then a JSON object with, in this order, `namespace`, `time_ms`
//! (Unix wall clock, ms), `event_type` (`INTERVAL_START`, `INTERVAL_END`, `POINT_IN_TIME`),
//! `key`, `value` and `metadata` (which always has the caller's `file` and `lineno`). Keys
//! read: `run_start`, `run_stop`, `epoch_start`/`epoch_stop` (metadata `epoch_num`,
//! `samples_count`), `eval_accuracy` (metadata `epoch_num`), `train_samples`,
//! `global_batch_size`, `seed`, and acceval's step events: `step_time_ms` (POINT_IN_TIME,
//! the synchronised step time in ms) or `step_start`/`step_stop` pairs.

use std::io::Write;

use serde::{Deserialize, Serialize};

/// The marker that starts an event (after an optional prefix such as a rank tag).
pub const MARKER: &str = ":::MLLOG ";

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(default)]
    pub namespace: String,
    pub time_ms: f64,
    pub event_type: String,
    pub key: String,
    #[serde(default)]
    pub value: serde_json::Value,
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl Event {
    pub fn meta_u64(&self, k: &str) -> Option<u64> {
        self.metadata.get(k).and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_f64().filter(|x| *x >= 0.0).map(|x| x as u64))
        })
    }
    pub fn value_f64(&self) -> Option<f64> {
        self.value.as_f64()
    }
}

/// Why a line that carries the marker is not an event.
#[derive(Debug, thiserror::Error)]
#[error("not an mllog event ({reason}): {line}")]
pub struct BadLine {
    pub line: String,
    pub reason: String,
}

/// The event of `line`, `None` when the line has no marker.
pub fn parse_line(line: &str) -> Option<Result<Event, BadLine>> {
    let at = line.find(MARKER)?;
    let json = line[at + MARKER.len()..].trim();
    Some(serde_json::from_str(json).map_err(|e| BadLine {
        line: line.chars().take(200).collect(),
        reason: e.to_string(),
    }))
}

/// Python's `json.dumps` spacing (`", "` and `": "`), as mllog writes it.
struct PyFormatter;

impl serde_json::ser::Formatter for PyFormatter {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}

/// The event as one `:::MLLOG` line (no newline).
pub fn format_line(e: &Event) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        namespace: &'a str,
        time_ms: u64,
        event_type: &'a str,
        key: &'a str,
        value: &'a serde_json::Value,
        metadata: &'a serde_json::Map<String, serde_json::Value>,
    }
    let out = Out {
        namespace: &e.namespace,
        time_ms: e.time_ms.max(0.0) as u64,
        event_type: &e.event_type,
        key: &e.key,
        value: &e.value,
        metadata: &e.metadata,
    };
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, PyFormatter);
    // Serializing plain values into memory cannot fail.
    let _ = out.serialize(&mut ser);
    format!("{MARKER}{}", String::from_utf8_lossy(&buf))
}

/// Unix time now, ms.
pub fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1e3)
        .unwrap_or(0.0)
}

/// Collects acceval's own events (written beside the report as `<name>.mllog`).
#[derive(Debug, Default, Clone)]
pub struct Log {
    pub events: Vec<Event>,
}

impl Log {
    fn push(&mut self, kind: &str, key: &str, value: serde_json::Value, meta: &[(&str, u64)]) {
        let mut metadata = serde_json::Map::new();
        metadata.insert("file".into(), "acceval/src/train".into());
        metadata.insert("lineno".into(), 0.into());
        for (k, v) in meta {
            metadata.insert((*k).into(), (*v).into());
        }
        self.events.push(Event {
            namespace: String::new(),
            time_ms: now_ms(),
            event_type: kind.into(),
            key: key.into(),
            value,
            metadata,
        });
    }
    pub fn start(&mut self, key: &str, meta: &[(&str, u64)]) {
        self.push("INTERVAL_START", key, serde_json::Value::Null, meta);
    }
    pub fn end(&mut self, key: &str, meta: &[(&str, u64)]) {
        self.push("INTERVAL_END", key, serde_json::Value::Null, meta);
    }
    pub fn event(&mut self, key: &str, value: serde_json::Value, meta: &[(&str, u64)]) {
        self.push("POINT_IN_TIME", key, value, meta);
    }
    /// `run_stop` with `metadata.status` (`success` or `aborted`).
    /// Whether an event of `key` is logged.
    pub fn has(&self, key: &str) -> bool {
        self.events.iter().any(|e| e.key == key)
    }
    /// MLPerf's submission fields: the benchmark (the workload trained) always, the
    /// organisation, platform and division as the lab gave them (absent ones are not
    /// written: MLPerf's checker then says which are missing).
    pub fn submission(&mut self, s: &super::Submission, benchmark: &str) {
        let given = [
            ("submission_org", s.org.as_deref()),
            ("submission_platform", s.platform.as_deref()),
            ("submission_division", s.division.map(|d| d.as_str())),
        ];
        for (key, v) in given {
            if let Some(v) = v {
                self.event(key, v.into(), &[]);
            }
        }
        self.event("submission_benchmark", benchmark.into(), &[]);
    }
    pub fn run_stop(&mut self, success: bool) {
        self.push("INTERVAL_END", "run_stop", serde_json::Value::Null, &[]);
        if let Some(e) = self.events.last_mut() {
            e.metadata.insert(
                "status".into(),
                if success { "success" } else { "aborted" }.into(),
            );
        }
    }
    /// Every event, one line each.
    pub fn text(&self) -> String {
        self.events.iter().map(|e| format_line(e) + "\n").collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_in_mllog_layout() {
        let line = r#":::MLLOG {"namespace": "", "time_ms": 1714000000000, "event_type": "POINT_IN_TIME", "key": "eval_accuracy", "value": 0.75, "metadata": {"file": "train.py", "lineno": 120, "epoch_num": 3}}"#;
        let e = parse_line(line).unwrap().unwrap();
        assert_eq!(e.key, "eval_accuracy");
        assert_eq!(e.value_f64(), Some(0.75));
        assert_eq!(e.meta_u64("epoch_num"), Some(3));
        assert_eq!(e.time_ms, 1_714_000_000_000.0);
        let out = format_line(&e);
        assert!(
            out.starts_with(r#":::MLLOG {"namespace": "", "time_ms": 1714000000000, "event_type": "POINT_IN_TIME", "key": "eval_accuracy", "value": 0.75, "metadata": {"#),
            "{out}"
        );
        assert_eq!(parse_line(&out).unwrap().unwrap(), e);
        // A rank prefix is allowed; a line without the marker is not an event.
        assert!(parse_line(&format!("0: {line}")).unwrap().is_ok());
        assert!(parse_line("epoch 3 done").is_none());
        assert!(parse_line(":::MLLOG {broken").unwrap().is_err());
    }

    #[test]
    fn log_writes_run_stop_with_status() {
        let mut l = Log::default();
        l.start("run_start", &[]);
        l.event("eval_accuracy", 0.5.into(), &[("epoch_num", 1)]);
        l.run_stop(true);
        let t = l.text();
        assert_eq!(t.lines().count(), 3);
        let last = parse_line(t.lines().last().unwrap()).unwrap().unwrap();
        assert_eq!(last.metadata["status"], "success");
    }
}
