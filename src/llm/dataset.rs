//! Prompts for `acceval llm`: MindIE's synthetic data (input and output lengths drawn from
//! uniform, gaussian or zipf distributions, clipped to [MinValue, MaxValue]; the prompt is
//! the token "A" repeated) and JSONL prompt files. Without a configuration, the synthetic
//! data follows [`default_synthetic`], the sample `synthetic_config.json` MindIE ships.

use std::path::Path;

use serde_json::Value;

use super::Error;
use crate::load::{Setting, SettingsError};

pub use crate::report::schema::llm::{LengthDist, SyntheticConfig};
use crate::util::rng::SplitMix64;

/// One request to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub text: String,
    pub max_tokens: u64,
    /// The input length the dataset asked for (synthetic), in tokens.
    pub requested_input_tokens: Option<u64>,
}

/// MindIE's largest token count and request count (2^20).
pub const MAX_LEN: u64 = 1 << 20;

/// The sample `synthetic_config.json` MindIE Benchmark ships (its documentation's example):
/// input lengths uniform in [1, 200], output lengths gaussian (mean 100, variance 200)
/// clipped to [1, 100], 100 requests.
pub fn default_synthetic() -> SyntheticConfig {
    SyntheticConfig {
        input: LengthDist::Uniform { min: 1, max: 200 },
        output: LengthDist::Gaussian {
            mean: 100.0,
            var: 200.0,
            min: 1,
            max: 100,
        },
        request_count: 100,
    }
}

/// A synthetic_config.json at `path` that breaks a rule, said by `why`.
fn bad_config(path: &Path, why: String) -> Error {
    Error::SyntheticConfig {
        path: path.to_path_buf(),
        why,
    }
}

/// One length distribution of a synthetic_config.json, checked against MindIE's ranges;
/// `what` names it in messages (`Input`).
fn parse_dist(v: &Value, path: &Path, what: &str) -> Result<LengthDist, Error> {
    let bad = |why: String| bad_config(path, why);
    let method = v.get("Method").and_then(|m| m.as_str()).ok_or_else(|| {
        bad(format!(
            "{what}.Method is missing: uniform, gaussian or zipf"
        ))
    })?;
    let params = v
        .get("Params")
        .ok_or_else(|| bad(format!("{what}.Params is missing")))?;
    let num = |k: &str| -> Result<f64, Error> {
        params
            .get(k)
            .and_then(|x| x.as_f64())
            .ok_or_else(|| bad(format!("{what}.Params.{k} is missing or not a number")))
    };
    let len = |k: &str| -> Result<u64, Error> {
        let x = num(k)?;
        if x.fract() != 0.0 || !(1.0..=MAX_LEN as f64).contains(&x) {
            return Err(bad(format!(
                "{what}.Params.{k} = {x}: a token count in [1, {MAX_LEN}] (2^20)"
            )));
        }
        Ok(x as u64)
    };
    let (min, max) = (len("MinValue")?, len("MaxValue")?);
    if min > max {
        return Err(bad(format!(
            "{what}.Params: MinValue {min} is above MaxValue {max}"
        )));
    }
    Ok(match method {
        "uniform" => LengthDist::Uniform { min, max },
        "gaussian" => {
            let (mean, var) = (num("Mean")?, num("Var")?);
            if !(-3.0e38..=3.0e38).contains(&mean) {
                return Err(bad(format!(
                    "{what}.Params.Mean = {mean}: allowed range [-3.0e38, 3.0e38]"
                )));
            }
            if !(0.0..=3.0e38).contains(&var) {
                return Err(bad(format!(
                    "{what}.Params.Var = {var}: allowed range [0, 3.0e38]"
                )));
            }
            LengthDist::Gaussian {
                mean,
                var,
                min,
                max,
            }
        }
        "zipf" => {
            let alpha = num("Alpha")?;
            if !(alpha > 1.0 && alpha <= 10.0) {
                return Err(bad(format!(
                    "{what}.Params.Alpha = {alpha}: allowed range (1.0, 10.0]"
                )));
            }
            LengthDist::Zipf { alpha, min, max }
        }
        m => {
            return Err(bad(format!(
                "{what}.Method '{m}': use uniform, gaussian or zipf"
            )));
        }
    })
}

/// One draw, clipped to [min, max].
pub fn sample(d: &LengthDist, rng: &mut SplitMix64) -> u64 {
    let (x, min, max) = match *d {
        LengthDist::Uniform { min, max } => (
            min as f64 + (rng.unit() * (max - min + 1) as f64).floor(),
            min,
            max,
        ),
        LengthDist::Gaussian {
            mean,
            var,
            min,
            max,
        } => (mean + var.sqrt() * normal(rng), min, max),
        LengthDist::Zipf { alpha, min, max } => (zipf(alpha, rng) as f64, min, max),
    };
    x.round().clamp(min as f64, max as f64) as u64
}

/// A standard normal by Box–Muller.
fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = 1.0 - rng.unit();
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A Zipf(alpha) draw on 1, 2, 3, ... by rejection (Devroye, Non-Uniform Random Variate
/// Generation, 1986, p. 551), as numpy's `zipf`.
fn zipf(alpha: f64, rng: &mut SplitMix64) -> u64 {
    let am1 = alpha - 1.0;
    let b = 2f64.powf(am1);
    loop {
        let u = 1.0 - rng.unit();
        let v = rng.unit();
        let x = u.powf(-1.0 / am1).floor();
        if !(1.0..=1e18).contains(&x) {
            continue;
        }
        let t = (1.0 + 1.0 / x).powf(am1);
        if v * x * (t - 1.0) / (b - 1.0) <= t / b {
            return x as u64;
        }
    }
}

/// Reads and checks MindIE's synthetic_config.json.
pub fn read_synthetic(path: &Path) -> Result<SyntheticConfig, Error> {
    let file = |why: String| SettingsError::bad(Setting::SyntheticConfig, path.display(), why);
    let text = std::fs::read_to_string(path).map_err(|e| file(format!("cannot read it: {e}")))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| file(format!("is not JSON: {e}")))?;
    let part = |k: &str| {
        v.get(k)
            .ok_or_else(|| bad_config(path, format!("'{k}' is missing")))
            .and_then(|x| parse_dist(x, path, k))
    };
    let (input, output) = (part("Input")?, part("Output")?);
    let n = v
        .get("RequestCount")
        .and_then(|x| x.as_u64())
        .ok_or_else(|| bad_config(path, "RequestCount is missing or not an integer".into()))?;
    if !(1..=MAX_LEN).contains(&n) {
        return Err(bad_config(
            path,
            format!("RequestCount = {n}: allowed range [1, {MAX_LEN}] (2^20)"),
        ));
    }
    Ok(SyntheticConfig {
        input,
        output,
        request_count: n,
    })
}

/// The prompts of a synthetic configuration: lengths drawn with `seed`, each prompt "A"
/// repeated (space-separated) to its input length.
pub fn synthetic_prompts(c: &SyntheticConfig, seed: u64) -> Vec<Prompt> {
    let mut rng = SplitMix64(seed);
    (0..c.request_count)
        .map(|_| {
            let i = sample(&c.input, &mut rng);
            let o = sample(&c.output, &mut rng);
            Prompt {
                text: vec!["A"; i as usize].join(" "),
                max_tokens: o,
                requested_input_tokens: Some(i),
            }
        })
        .collect()
}

/// MindIE's synthetic_config.json, read and drawn.
pub fn synthetic(path: &Path, seed: u64) -> Result<Vec<Prompt>, Error> {
    Ok(synthetic_prompts(&read_synthetic(path)?, seed))
}

/// Each non-blank line of a JSONL file, parsed as JSON and mapped by `item`, which gets the
/// line's object and a maker of errors that name the file and line. `what` names the kind of
/// item in the error for a file with none ("prompt", "GSM8K item").
pub(crate) fn jsonl_items<T>(
    path: &Path,
    what: &str,
    mut item: impl FnMut(&Value, &dyn Fn(&str) -> Error) -> Result<T, Error>,
) -> Result<Vec<T>, Error> {
    let file = |why: String| SettingsError::bad(Setting::Dataset, path.display(), why);
    let text = std::fs::read_to_string(path).map_err(|e| file(format!("cannot read it: {e}")))?;
    let mut out = Vec::new();
    for (k, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: &str| Error::Jsonl {
            path: path.to_path_buf(),
            line: k + 1,
            why: why.to_string(),
        };
        let v: Value =
            serde_json::from_str(line).map_err(|e| bad(&format!("not a JSON object: {e}")))?;
        out.push(item(&v, &bad)?);
    }
    if out.is_empty() {
        return Err(file(format!("holds no {what}")).into());
    }
    Ok(out)
}

/// One `{"prompt": ..., "max_tokens": ...}` per line; `max_tokens` defaults to `default_max`.
pub fn jsonl(path: &Path, default_max: u64) -> Result<Vec<Prompt>, Error> {
    jsonl_items(path, "prompt", |v, bad| {
        let prompt = v
            .get("prompt")
            .and_then(|p| p.as_str())
            .ok_or_else(|| bad("no \"prompt\" string"))?;
        let max_tokens = match v.get("max_tokens") {
            None => default_max,
            Some(m) => m
                .as_u64()
                .filter(|&m| m >= 1)
                .ok_or_else(|| bad("max_tokens must be a positive integer"))?,
        };
        Ok(Prompt {
            text: prompt.to_string(),
            max_tokens,
            requested_input_tokens: None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(dir: &Path, text: &str) -> std::path::PathBuf {
        let p = dir.join("s.json");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn synthetic_lengths_stay_in_range_and_repeat() {
        let d = tempfile::tempdir().unwrap();
        let p = cfg(
            d.path(),
            r#"{"Input":{"Method":"uniform","Params":{"MinValue":3,"MaxValue":9}},
                "Output":{"Method":"gaussian","Params":{"Mean":20,"Var":16,"MinValue":1,"MaxValue":25}},
                "RequestCount":500}"#,
        );
        let a = synthetic(&p, 1).unwrap();
        assert_eq!(a.len(), 500);
        assert_eq!(a, synthetic(&p, 1).unwrap());
        assert!(
            a.iter()
                .all(|x| (3..=9).contains(&x.requested_input_tokens.unwrap()))
        );
        assert!(a.iter().all(|x| (1..=25).contains(&x.max_tokens)));
        let mean = a.iter().map(|x| x.max_tokens as f64).sum::<f64>() / 500.0;
        assert!((mean - 20.0).abs() < 1.0, "{mean}");
        assert_eq!(
            a[0].text.split(' ').count() as u64,
            a[0].requested_input_tokens.unwrap()
        );
        let z = cfg(
            d.path(),
            r#"{"Input":{"Method":"zipf","Params":{"Alpha":2.0,"MinValue":1,"MaxValue":50}},
                "Output":{"Method":"uniform","Params":{"MinValue":4,"MaxValue":4}},"RequestCount":2000}"#,
        );
        let z = synthetic(&z, 2).unwrap();
        let ones = z
            .iter()
            .filter(|x| x.requested_input_tokens == Some(1))
            .count() as f64
            / 2000.0;
        // Zipf(2): P(1) = 1/zeta(2) = 0.608.
        assert!((ones - 0.608).abs() < 0.04, "{ones}");
    }

    #[test]
    fn the_default_is_mindies_sample() {
        let d = default_synthetic();
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"Input":{"Method":"uniform","Params":{"MinValue":1,"MaxValue":200}},"Output":{"Method":"gaussian","Params":{"Mean":100.0,"Var":200.0,"MinValue":1,"MaxValue":100}},"RequestCount":100}"#
        );
        // It reads back through the checked parser.
        let dir = tempfile::tempdir().unwrap();
        let p = cfg(dir.path(), &serde_json::to_string(&d).unwrap());
        assert_eq!(read_synthetic(&p).unwrap(), d);
        let a = synthetic_prompts(&d, 1);
        assert_eq!(a.len(), 100);
        assert!(a.iter().all(|x| (1..=100).contains(&x.max_tokens)));
    }

    #[test]
    fn bad_configs_name_the_key_and_range() {
        let d = tempfile::tempdir().unwrap();
        let cases = [
            (
                r#"{"Input":{"Method":"zipf","Params":{"Alpha":1.0,"MinValue":1,"MaxValue":5}},"Output":{"Method":"uniform","Params":{"MinValue":1,"MaxValue":2}},"RequestCount":1}"#,
                "Input.Params.Alpha = 1: allowed range (1.0, 10.0]",
            ),
            (
                r#"{"Input":{"Method":"uniform","Params":{"MinValue":0,"MaxValue":5}},"Output":{"Method":"uniform","Params":{"MinValue":1,"MaxValue":2}},"RequestCount":1}"#,
                "Input.Params.MinValue = 0: a token count in [1, 1048576]",
            ),
            (
                r#"{"Input":{"Method":"uniform","Params":{"MinValue":1,"MaxValue":5}},"Output":{"Method":"uniform","Params":{"MinValue":1,"MaxValue":2}},"RequestCount":2000000}"#,
                "RequestCount = 2000000: allowed range [1, 1048576]",
            ),
            (
                r#"{"Input":{"Method":"poisson","Params":{"MinValue":1,"MaxValue":5}},"Output":{"Method":"uniform","Params":{"MinValue":1,"MaxValue":2}},"RequestCount":1}"#,
                "Input.Method 'poisson'",
            ),
            (
                r#"{"Input":{"Method":"gaussian","Params":{"Mean":1,"Var":-1,"MinValue":1,"MaxValue":5}},"Output":{"Method":"uniform","Params":{"MinValue":1,"MaxValue":2}},"RequestCount":1}"#,
                "Input.Params.Var = -1",
            ),
        ];
        for (text, want) in cases {
            let e = synthetic(&cfg(d.path(), text), 0).unwrap_err().to_string();
            assert!(e.contains(want), "{e} lacks {want}");
        }
    }
}
