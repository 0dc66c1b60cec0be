//! Scenario profiles (`profiles/*.toml`): what `acceval grade` measures and the thresholds it
//! judges by. Tables 4 and 5 give each scenario's required accuracy and speed levels; the
//! draft gives no numbers for the speed levels, so each profile defines them, and reports
//! mark them as the profile's (SPEC.md §4, Decisions).
//!
//! Parsing rejects unknown keys (a typo is an error naming the key and its line); the checks
//! after parsing name the key and line too.

use std::path::{Path, PathBuf};

use crate::standard::Level;

pub const SCHEMA: &str = "acceval.profile/1";

pub use crate::report::schema::profile::{
    AccuracySection, Attestations, LlmSection, ModelSection, PolicySection, Profile, QpsSection,
    SpeedLevel, SpeedSection, TelemetrySection,
};

pub const SENSORS: [&str; 7] = ["cpu", "process", "nvml", "dcmi", "rapl", "ipmi", "ptdaemon"];

/// A profile error: the key, its line (1-based, when found) and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {key}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ProfileError {
    pub file: String,
    pub key: String,
    pub line: Option<usize>,
    pub message: String,
}

/// The line of `key` inside table `[table]` (or at the top when `table` is empty).
fn line_of(text: &str, table: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if let Some(h) = t.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            current = h.trim().to_string();
            if key.is_empty() && current == table {
                return Some(i + 1);
            }
            continue;
        }
        if current == table && t.split('=').next().map(str::trim) == Some(key) && !key.is_empty() {
            return Some(i + 1);
        }
    }
    None
}

/// A shipped profile's name, or a file: `line-inspection-realtime` or `my.toml`.
pub fn locate(arg: &str) -> anyhow::Result<PathBuf> {
    let p = Path::new(arg);
    if p.is_file() {
        return Ok(p.to_path_buf());
    }
    let dir = crate::util::paths::profiles_dir();
    let shipped = dir.join(format!("{arg}.toml"));
    if shipped.is_file() {
        return Ok(shipped);
    }
    let names: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.path()
                .file_stem()
                .filter(|_| e.path().extension().is_some_and(|x| x == "toml"))
                .map(|s| s.to_string_lossy().into_owned())
        })
        .collect();
    anyhow::bail!(
        "profile '{arg}' is neither a file nor a shipped profile; shipped: {}",
        names.join(", ")
    )
}

impl Profile {
    /// Reads and validates a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError {
            file: file.clone(),
            key: "(file)".into(),
            line: None,
            message: format!("cannot read: {e}"),
        })?;
        Profile::parse(&text, &file)
    }

    pub fn parse(text: &str, file: &str) -> Result<Profile, ProfileError> {
        let p: Profile = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let msg = e.message().to_string();
            // serde names the offending key in the message: "unknown field `x`, expected ...".
            let key = msg
                .split('`')
                .nth(1)
                .map(str::to_string)
                .unwrap_or_else(|| "(syntax)".into());
            ProfileError {
                file: file.to_string(),
                key,
                line,
                message: msg,
            }
        })?;
        p.check(text, file)?;
        Ok(p)
    }

    fn check(&self, text: &str, file: &str) -> Result<(), ProfileError> {
        let err = |table: &str, key: &str, message: String| ProfileError {
            file: file.to_string(),
            key: if table.is_empty() {
                key.to_string()
            } else {
                format!("{table}.{key}")
            },
            line: line_of(text, table, key),
            message,
        };
        if self.schema != SCHEMA {
            return Err(err(
                "",
                "schema",
                format!("'{}', expected '{SCHEMA}'", self.schema),
            ));
        }
        if self.model.precisions.is_empty() {
            return Err(err(
                "model",
                "precisions",
                "list at least one of fp32, fp16, int8".into(),
            ));
        }
        for p in self
            .model
            .precisions
            .iter()
            .chain([&self.model.speed_precision])
        {
            if !matches!(p.as_str(), "fp32" | "fp16" | "int8") {
                let key = if p == &self.model.speed_precision {
                    "speed_precision"
                } else {
                    "precisions"
                };
                return Err(err(
                    "model",
                    key,
                    format!("'{p}' is not fp32, fp16 or int8"),
                ));
            }
        }
        if !(self.speed.percentile > 0.0 && self.speed.percentile < 100.0) {
            return Err(err(
                "speed",
                "percentile",
                format!("{} must be in (0, 100)", self.speed.percentile),
            ));
        }
        if let Some(q) = &self.qps {
            if let Err(e) = crate::load::slo::parse(&q.slo) {
                return Err(err("qps", "slo", e));
            }
            if !(q.min_qps > 0.0 && q.min_qps.is_finite()) {
                return Err(err(
                    "qps",
                    "min_qps",
                    format!(
                        "{} must be a positive number of queries per second",
                        q.min_qps
                    ),
                ));
            }
            if !(0.0..1.0).contains(&q.error_budget) {
                return Err(err(
                    "qps",
                    "error_budget",
                    format!("{} must lie in [0, 1)", q.error_budget),
                ));
            }
            if !(q.step_duration_s > 0.0 && q.warmup_s >= 0.0 && q.max_rate > 0.0) {
                return Err(err(
                    "qps",
                    "step_duration_s",
                    "step_duration_s and max_rate must be positive, warmup_s not negative".into(),
                ));
            }
        }
        if let Some(l) = &self.llm {
            use clap::ValueEnum;
            if crate::protocol::generate::Api::from_str(&l.api, false).is_err() {
                return Err(err(
                    "llm",
                    "api",
                    format!(
                        "'{}' is not openai, openai-chat, tgi, triton or vllm",
                        l.api
                    ),
                ));
            }
            if !(1..=1000).contains(&l.concurrency) {
                return Err(err(
                    "llm",
                    "concurrency",
                    format!("{} must lie in [1, 1000]", l.concurrency),
                ));
            }
            for (k, v) in [
                ("max_first_token_ms", l.max_first_token_ms),
                ("max_tpot_ms", l.max_tpot_ms),
                ("min_throughput", l.min_throughput),
                ("min_generate_speed", l.min_generate_speed),
            ] {
                if let Some(v) = v
                    && !(v > 0.0 && v.is_finite())
                {
                    return Err(err("llm", k, format!("{v} must be a positive number")));
                }
            }
        }
        if !matches!(self.speed.mode.as_str(), "pipeline" | "model-only") {
            return Err(err(
                "speed",
                "mode",
                format!("'{}' is not pipeline or model-only", self.speed.mode),
            ));
        }
        let mut prev: Option<(&str, &SpeedLevel)> = None;
        for l in ["C1", "C2", "C3", "C4"] {
            let table = format!("speed.levels.{l}");
            let Some(v) = self.speed.levels.get(l) else {
                return Err(ProfileError {
                    file: file.to_string(),
                    key: table.clone(),
                    line: line_of(text, "speed", "").or(line_of(text, "speed", "required")),
                    message: "missing: every level C1..C4 needs max_latency_ms and min_fps".into(),
                });
            };
            if !(v.max_latency_ms > 0.0 && v.max_latency_ms.is_finite()) {
                return Err(err(
                    &table,
                    "max_latency_ms",
                    "must be a positive number of ms".into(),
                ));
            }
            if !(v.min_fps >= 0.0 && v.min_fps.is_finite()) {
                return Err(err(&table, "min_fps", "must be a number >= 0".into()));
            }
            if let Some((pl, pv)) = prev
                && (v.max_latency_ms < pv.max_latency_ms || v.min_fps > pv.min_fps)
            {
                return Err(err(
                    &table,
                    "max_latency_ms",
                    format!("{l} must be no more demanding than {pl} (C1 is the most demanding)"),
                ));
            }
            prev = Some((l, v));
        }
        if let Some(k) = self
            .speed
            .levels
            .keys()
            .find(|k| !["C1", "C2", "C3", "C4"].contains(&k.as_str()))
        {
            return Err(err("speed.levels", k, "levels are C1, C2, C3, C4".into()));
        }
        let pol = &self.policy;
        if pol.runs == 0
            || pol.duration_s.is_nan()
            || pol.duration_s < 0.0
            || pol.interval_ms.is_nan()
            || pol.interval_ms < 0.0
        {
            return Err(err(
                "policy",
                "runs",
                "runs >= 1, duration_s >= 0, interval_ms >= 0".into(),
            ));
        }
        for s in &self.telemetry.require {
            if !SENSORS.contains(&s.as_str()) {
                return Err(err(
                    "telemetry",
                    "require",
                    format!("'{s}' is not a sensor; sensors: {}", SENSORS.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// The strictest (most demanding) speed level whose thresholds a measurement meets.
    pub fn speed_level(&self, latency_ms: f64, fps: f64) -> Option<Level> {
        [Level::C1, Level::C2, Level::C3, Level::C4]
            .into_iter()
            .find(|l| {
                self.speed
                    .levels
                    .get(&l.to_string())
                    .is_some_and(|t| latency_ms <= t.max_latency_ms && fps >= t.min_fps)
            })
    }
}

/// Whether an achieved Table 5 level meets a required one (C1 is the most demanding, so a
/// requirement of C2 is met by C1 or C2) — the opposite direction of Table 3.
pub fn speed_meets(achieved: Option<Level>, required: Level) -> bool {
    achieved.is_some_and(|a| a <= required)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> Vec<(String, String)> {
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles"))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .map(|p| {
                (
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn shipped_profiles_are_valid() {
        let all = shipped();
        assert_eq!(all.len(), 4);
        for (f, t) in &all {
            let p = Profile::parse(t, f).unwrap_or_else(|e| panic!("{e}"));
            assert!(f.ends_with(&format!("{}.toml", p.name)));
        }
    }

    #[test]
    fn typos_and_bad_values_name_the_key_and_line() {
        let (f, t) = shipped()
            .into_iter()
            .find(|(f, _)| f.ends_with("line-inspection-realtime.toml"))
            .unwrap();
        let typo = t.replace("max_latency_ms", "max_latencyms");
        let e = Profile::parse(&typo, &f).unwrap_err();
        assert_eq!(e.key, "max_latencyms");
        let want = typo
            .lines()
            .position(|l| l.contains("max_latencyms"))
            .unwrap()
            + 1;
        assert_eq!(e.line, Some(want), "{e}");
        let bad = t.replace("percentile = 90", "percentile = 190");
        let e = Profile::parse(&bad, &f).unwrap_err();
        assert_eq!(e.key, "speed.percentile");
        assert!(
            e.line.is_some() && e.to_string().contains("(0, 100)"),
            "{e}"
        );
        let bad = t.replace("\"int8\"]", "\"int4\"]");
        let e = Profile::parse(&bad, &f).unwrap_err();
        assert_eq!(e.key, "model.precisions");
    }

    #[test]
    fn speed_levels_and_their_direction() {
        let (f, t) = shipped()
            .into_iter()
            .find(|(f, _)| f.ends_with("line-inspection-realtime.toml"))
            .unwrap();
        let p = Profile::parse(&t, &f).unwrap();
        assert_eq!(p.speed_level(30.0, 30.0), Some(Level::C1));
        assert_eq!(p.speed_level(30.0, 20.0), Some(Level::C2));
        assert_eq!(p.speed_level(5000.0, 0.1), None);
        assert!(speed_meets(Some(Level::C1), Level::C2));
        assert!(!speed_meets(Some(Level::C3), Level::C2));
        assert!(!speed_meets(None, Level::C4));
    }
}
