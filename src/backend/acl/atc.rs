//! IR conversion for the ACL backend (§5.3 a): ONNX → `.om` with CANN's `atc`, timed as the
//! IR-conversion stage and cached by the model's SHA-256 with everything else that changes
//! the result (SoC, input shapes, precision mode, the `atc` used).
//!
//! Precision: ATC's default is fp16, which would silently grade an FP32 model's accuracy at
//! FP16. acceval passes `--precision_mode_v2=origin` unless the lab asks for another mode
//! (`--ep-option precision_mode=MODE`), and the session options record the mode used.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::ffi::cann_roots;

/// The precision modes of `--precision_mode_v2` (newer ATC) and `--precision_mode` (older).
const V2_MODES: [&str; 5] = [
    "origin",
    "fp16",
    "mixed_float16",
    "cube_fp16in_fp32out",
    "mixed_bfloat16",
];
const V1_MODES: [&str; 5] = [
    "force_fp16",
    "allow_fp32_to_fp16",
    "allow_mix_precision",
    "must_keep_origin_dtype",
    "force_fp32",
];

/// The default: keep the model's own precision (FP32 stays FP32, FP16 stays FP16).
pub const DEFAULT_PRECISION: &str = "origin";

/// The ATC flag for `mode`, or why it is not one.
pub fn precision_flag(mode: &str) -> Result<String, String> {
    if V2_MODES.contains(&mode) {
        Ok(format!("--precision_mode_v2={mode}"))
    } else if V1_MODES.contains(&mode) {
        Ok(format!("--precision_mode={mode}"))
    } else {
        Err(format!(
            "precision_mode '{mode}' is not an ATC precision mode ({} with --precision_mode_v2; {} with the older --precision_mode)",
            V2_MODES.join(", "),
            V1_MODES.join(", ")
        ))
    }
}

/// Where `atc` is: beside the CANN install acceval found, else on PATH.
pub fn find_atc() -> Result<PathBuf, String> {
    for root in cann_roots() {
        for sub in ["bin/atc", "compiler/bin/atc", "atc/bin/atc"] {
            let p = root.join(sub);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join("atc");
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err("CANN's atc (the ONNX → .om compiler) was not found beside the toolkit or on PATH: install the CANN toolkit (not only nnrt) and source its set_env.sh, or give an .om converted elsewhere".into())
}

/// What a conversion recorded, kept beside the cached `.om`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conversion {
    pub om: PathBuf,
    pub atc: String,
    pub args: Vec<String>,
    /// The wall time `atc` took when the `.om` was built, ms.
    pub convert_ms: f64,
    /// When it was built (UNIX s).
    pub built_unix_s: f64,
    /// Operators ATC's log says run on the AI CPU (`name (op type)`).
    pub aicpu_ops: Vec<String>,
    /// Whether this run found it in the cache.
    #[serde(skip)]
    pub cached: bool,
}

/// Operators ATC's log places on the AI CPU, from lines naming `op[NAME]` and `type[TYPE]`
/// beside "AI CPU"/"AICPU". A heuristic: the real log's wording varies across CANN versions
/// and was not seen here; a line it cannot read is left out, never invented.
pub fn aicpu_ops(log: &str) -> Vec<String> {
    let field = |l: &str, key: &str| {
        let i = l.find(key)? + key.len();
        let j = l[i..].find(']')?;
        Some(l[i..i + j].to_string())
    };
    log.lines()
        .filter(|l| {
            let u = l.to_ascii_uppercase();
            u.contains("AI CPU") || u.contains("AICPU")
        })
        .filter_map(|l| match (field(l, "op["), field(l, "type[")) {
            (Some(n), Some(t)) => Some(format!("{n} ({t})")),
            _ => None,
        })
        .collect()
}

fn identity(atc: &Path) -> String {
    let meta = std::fs::metadata(atc).ok();
    format!(
        "{} {} {:?}",
        atc.display(),
        meta.as_ref().map_or(0, |m| m.len()),
        meta.and_then(|m| m.modified().ok())
    )
}

/// Converts `onnx` for `soc` at `shapes` in `precision` mode, or returns the cached `.om`.
/// An `atc` still running after `limit` is killed (with anything it started) and the
/// conversion fails naming the budget.
pub fn convert(
    onnx: &Path,
    soc: &str,
    shapes: &[(String, Vec<usize>)],
    precision: &str,
    limit: Duration,
) -> Result<Conversion, String> {
    let atc = find_atc()?;
    let bytes =
        std::fs::read(onnx).map_err(|e| format!("cannot read '{}': {e}", onnx.display()))?;
    let shape_arg = shapes
        .iter()
        .map(|(n, d)| {
            format!(
                "{n}:{}",
                d.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect::<Vec<_>>()
        .join(";");
    let flag = precision_flag(precision)?;
    let key = crate::util::fs::sha256_hex(
        format!(
            "{}|{soc}|{shape_arg}|{flag}|{}",
            crate::util::fs::sha256_hex(&bytes),
            identity(&atc)
        )
        .as_bytes(),
    );
    let dir = crate::util::paths::cache_dir().join("om").join(&key[..32]);
    let meta_path = dir.join("conversion.json");
    if let Ok(text) = std::fs::read_to_string(&meta_path)
        && let Ok(mut c) = serde_json::from_str::<Conversion>(&text)
        && c.om.is_file()
    {
        c.cached = true;
        return Ok(c);
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create the .om cache '{}': {e}", dir.display()))?;
    let args = vec![
        format!("--model={}", onnx.display()),
        "--framework=5".into(),
        format!("--output={}", dir.join("model").display()),
        format!("--soc_version={soc}"),
        format!("--input_shape={shape_arg}"),
        flag,
        "--log=error".into(),
    ];
    let t = Instant::now();
    let (status, log) = run_bounded(&atc, &args, &dir.join("atc.log"), limit)?;
    let convert_ms = t.elapsed().as_secs_f64() * 1e3;
    let om = dir.join("model.om");
    if !status.success() || !om.is_file() {
        let tail: Vec<&str> = log.lines().rev().take(8).collect();
        return Err(format!(
            "atc failed ({status}): {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    let c = Conversion {
        om,
        atc: atc.display().to_string(),
        args,
        convert_ms,
        built_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        aicpu_ops: aicpu_ops(&log),
        cached: false,
    };
    let json = serde_json::to_vec_pretty(&c).map_err(|e| e.to_string())?;
    crate::util::fs::write_atomic(&meta_path, &json)
        .map_err(|e| format!("cannot write '{}': {e}", meta_path.display()))?;
    Ok(c)
}

/// Runs `atc ARGS` in its own process group with its output (stdout and stderr, interleaved
/// as written) in `log`, for at most `limit`: past it the whole group is killed (SIGKILL)
/// and reaped. Returns its exit status and its output.
fn run_bounded(
    atc: &Path,
    args: &[String],
    log: &Path,
    limit: Duration,
) -> Result<(std::process::ExitStatus, String), String> {
    use std::os::unix::process::CommandExt;
    let file = std::fs::File::create(log)
        .map_err(|e| format!("cannot create ATC's log '{}': {e}", log.display()))?;
    let err_file = file
        .try_clone()
        .map_err(|e| format!("cannot share ATC's log: {e}"))?;
    let mut child = std::process::Command::new(atc)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(file)
        .stderr(err_file)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run '{}': {e}", atc.display()))?;
    let t = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                // SAFETY: kill(2) on the child's own process group (its pid, made leader by
                // process_group(0)); the child is not yet reaped, so the pid is still ours.
                unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
                let _ = child.wait();
                let secs = format!("{:.3}", limit.as_secs_f64());
                let secs = secs.trim_end_matches('0').trim_end_matches('.');
                return Err(format!(
                    "ATC's conversion (ONNX → .om) did not finish within {secs} s (--load-timeout S; by default the larger of 600 s and 15 s + 1 s per 5 MB of model, since ATC compiles for minutes): acceval killed it; its output so far is in '{}'",
                    log.display()
                ));
            }
            Err(e) => return Err(format!("cannot wait for atc: {e}")),
        }
    };
    let text = std::fs::read(log)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    Ok((status, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_flags_and_log_parsing() {
        assert_eq!(
            precision_flag("origin").unwrap(),
            "--precision_mode_v2=origin"
        );
        assert_eq!(
            precision_flag("must_keep_origin_dtype").unwrap(),
            "--precision_mode=must_keep_origin_dtype"
        );
        assert!(precision_flag("fp64").unwrap_err().contains("origin"));
        let log = "ATC start\n[WARNING] op[nms_1] type[NonMaxSuppression] is not supported by AI Core, it will be executed on AI CPU\n[INFO] op[conv] type[Conv2D] AI Core\nATC run success";
        assert_eq!(aicpu_ops(log), vec!["nms_1 (NonMaxSuppression)"]);
    }
}
