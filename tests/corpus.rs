//! The corpus of real models (`scripts/fetch-corpus.py`: ONNX files that registry packages
//! ship in their wheels, with ONNX Runtime reference outputs): every model is inspected, run
//! and graded for accuracy against its reference on `cpu` (tract) and `ort:cpu`.
//!
//! A model passes when `run` exits 0 on both backends and every output of `accuracy`
//! agrees with ONNX Runtime (Python) to a relative L2 error of at most 1e-4 on both.
//! `inspect` is run at the corpus shapes and its resolution is printed (it must not
//! crash; what it resolves is `src/model`'s business). All failures are collected and
//! reported together, with a table of the results.
//!
//! The corpus is found at `$ACCEVAL_CORPUS`, else `~/.cache/acceval/corpus`. Without it the
//! test prints SKIPPED and passes, unless `ACCEVAL_REQUIRE_CORPUS=1` (CI, which fetches
//! it), where it fails.

use std::path::PathBuf;

use serde_json::Value;

mod common;
use common::acceval;

/// The largest relative L2 error an output may have against ONNX Runtime.
const MAX_REL_L2: f64 = 1e-4;

fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("ACCEVAL_CORPUS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/acceval/corpus"))
        });
    let ok = dir
        .as_ref()
        .is_some_and(|d| d.join(".complete").is_file() && d.join("corpus.json").is_file());
    if ok {
        return dir;
    }
    let why = format!(
        "the model corpus is not at {} (python scripts/fetch-corpus.py fetches it; ACCEVAL_CORPUS=DIR points elsewhere)",
        dir.map_or("$HOME/.cache/acceval/corpus".into(), |d| d
            .display()
            .to_string())
    );
    common::skip("ACCEVAL_REQUIRE_CORPUS", &why);
    None
}

/// One model of corpus.json.
struct Model {
    name: String,
    package: String,
    dir: PathBuf,
    shapes: Vec<String>,
}

fn models(dir: &std::path::Path) -> Vec<Model> {
    let text = std::fs::read_to_string(dir.join("corpus.json")).expect("corpus.json");
    let v: Value = serde_json::from_str(&text).expect("corpus.json is JSON");
    v["models"]
        .as_array()
        .expect("models[]")
        .iter()
        .map(|m| Model {
            name: m["name"].as_str().unwrap().to_string(),
            package: format!(
                "{} {}",
                m["package"].as_str().unwrap(),
                m["version"].as_str().unwrap()
            ),
            dir: dir.join(m["name"].as_str().unwrap()),
            shapes: m["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|i| {
                    let dims: Vec<String> = i["shape"]
                        .as_array()?
                        .iter()
                        .map(|d| d.to_string())
                        .collect();
                    let name = i["name"].as_str()?;
                    (!dims.is_empty()).then(|| format!("{name}:{}", dims.join("x")))
                })
                .collect(),
        })
        .collect()
}

/// The first lines of a failed command's stderr.
fn first_lines(s: &str) -> String {
    s.lines().take(3).collect::<Vec<_>>().join(" / ")
}

/// `inspect` at the corpus shapes: a short description of what it resolved.
fn inspect(m: &Model) -> Result<String, String> {
    let model = m.dir.join("model.onnx");
    let mut args = vec!["inspect".to_string(), model.display().to_string()];
    for s in &m.shapes {
        args.extend(["--input".to_string(), s.clone()]);
    }
    args.push("--json".into());
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = acceval(&a);
    match code {
        0 => {
            let v: Value = serde_json::from_str(&out).map_err(|e| format!("inspect JSON: {e}"))?;
            let unresolved = v["unresolved_nodes"].as_array().map_or(0, Vec::len);
            let nodes = v["model"]["node_count"].as_u64().unwrap_or(0);
            let gflops = v["gflops"].as_f64();
            Ok(format!(
                "{} of {nodes} nodes resolved, {} GFLOPs{}",
                nodes.saturating_sub(unresolved as u64),
                gflops.map_or("?".into(), |g| format!("{g:.3}")),
                if v["lower_bound"].as_bool() == Some(true) {
                    " (lower bound)"
                } else {
                    ""
                }
            ))
        }
        // A refusal with a message is inspect's own limit, reported, not a crash.
        2 => Ok(format!("refused: {}", first_lines(&err))),
        c => Err(format!("inspect exited {c}: {}", first_lines(&err))),
    }
}

/// `run` on the first reference input set.
fn run(m: &Model, backend: &str) -> Result<(), String> {
    let model = m.dir.join("model.onnx");
    let inputs = m.dir.join("test_data_set_0");
    let (code, _, err) = acceval(&[
        "run",
        "--model",
        model.to_str().unwrap(),
        "--backend",
        backend,
        "--inputs",
        inputs.to_str().unwrap(),
        "--runs",
        "1",
        "--json",
    ]);
    if code == 0 {
        Ok(())
    } else {
        Err(format!("run exited {code}: {}", first_lines(&err)))
    }
}

/// The operator of a load error that names a tract limitation ("tract limitation (operator
/// If): ..."), which the report states with its reason and the way out.
fn named_limitation(err: &str) -> Option<String> {
    let rest = err.split("tract limitation (operator ").nth(1)?;
    let op = rest.split(')').next()?;
    (!op.is_empty() && rest.contains("use --backend ort:cpu")).then(|| format!("operator {op}"))
}

/// `accuracy` against the ONNX Runtime reference: the worst output's relative L2 error.
fn accuracy(m: &Model, backend: &str) -> Result<(f64, String), String> {
    let model = m.dir.join("model.onnx");
    let (code, out, err) = acceval(&[
        "accuracy",
        "--model",
        model.to_str().unwrap(),
        "--reference",
        m.dir.to_str().unwrap(),
        "--backend",
        backend,
        "--json",
    ]);
    if code != 0 {
        return Err(format!("accuracy exited {code}: {}", first_lines(&err)));
    }
    let v: Value = serde_json::from_str(&out).map_err(|e| format!("accuracy JSON: {e}"))?;
    let mut worst = (0.0f64, String::new());
    for o in v["outputs"].as_array().into_iter().flatten() {
        let name = o["name"].as_str().unwrap_or("?").to_string();
        let r = match o["rel_l2_error"].as_f64() {
            Some(r) => r,
            None => return Err(format!("output '{name}': relative L2 error is not finite")),
        };
        if r >= worst.0 {
            worst = (r, name);
        }
    }
    Ok(worst)
}

#[test]
fn every_corpus_model_loads_runs_and_matches_onnx_runtime() {
    let Some(dir) = corpus_dir() else { return };
    let backends: &[&str] = if common::ort_available() {
        &["cpu", "ort:cpu"]
    } else {
        &["cpu"]
    };
    let models = models(&dir);
    assert!(models.len() >= 8, "the corpus has {} models", models.len());
    let mut fails = Vec::new();
    let mut named = Vec::new();
    let mut table = vec![format!(
        "| model | package | inspect | {} |",
        backends
            .iter()
            .map(|b| format!("{b} rel L2"))
            .collect::<Vec<_>>()
            .join(" | ")
    )];
    for m in &models {
        let insp = inspect(m).unwrap_or_else(|e| {
            fails.push(format!("{}: {e}", m.name));
            "crashed".into()
        });
        let mut cells = Vec::new();
        for b in backends {
            let ran = run(m, b);
            // The Done-when of the issue: a model tract cannot run passes only when the
            // error names the operator and why (a known tract limitation), on `cpu` alone.
            if let Err(e) = &ran
                && *b == "cpu"
                && let Some(op) = named_limitation(e)
            {
                named.push(format!("{} on {b}: {op}", m.name));
                cells.push(format!("not run: tract limitation ({op}), named"));
                continue;
            }
            if let Err(e) = ran {
                fails.push(format!("{} on {b}: {e}", m.name));
            }
            match accuracy(m, b) {
                Ok((r, out)) => {
                    if r > MAX_REL_L2 {
                        fails.push(format!(
                            "{} on {b}: output '{out}' differs from ONNX Runtime by relative L2 {r:.3e} (> {MAX_REL_L2:e})",
                            m.name
                        ));
                    }
                    cells.push(format!("{r:.2e}"));
                }
                Err(e) => {
                    fails.push(format!("{} on {b}: {e}", m.name));
                    cells.push("failed".into());
                }
            }
        }
        table.push(format!(
            "| {} | {} | {insp} | {} |",
            m.name,
            m.package,
            cells.join(" | ")
        ));
    }
    eprintln!("{}", table.join("\n"));
    if !named.is_empty() {
        eprintln!("named tract limitations:\n{}", named.join("\n"));
    }
    // Most of the corpus must run: a limitation may be named, not be the rule.
    assert!(
        named.len() * 2 < models.len(),
        "{} of {} models hit a named limitation",
        named.len(),
        models.len()
    );
    assert!(
        fails.is_empty(),
        "{} corpus failure(s):\n{}",
        fails.len(),
        fails.join("\n")
    );
}
