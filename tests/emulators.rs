//! The accelerator paths through acceval's device emulators (emulators/, laid out by
//! `scripts/fake-devices.sh`): the ACL backend's whole FFI sequence on CANN's ABI, ATC
//! conversion, DCMI and NVML identification and sampling, fault injection and teardown, and
//! the rule that an emulated device is never certified. The emulators are loaded exactly as
//! the vendor libraries are (ASCEND_HOME_PATH, the loader's search path, PATH); the models
//! are real and their outputs are checked against the CPU engine.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use serde_json::Value;

/// The environment that points acceval at the emulators.
fn fake_env() -> &'static Vec<(String, String)> {
    static ENV: OnceLock<Vec<(String, String)>> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake-devices");
        // The profile the test binary was built with: its examples are the emulators.
        let exe = std::env::current_exe().expect("test binary path");
        let profile = if exe.components().any(|c| c.as_os_str() == "release") {
            "release"
        } else {
            "debug"
        };
        let out = std::process::Command::new(root.join("scripts/fake-devices.sh"))
            .arg(&dir)
            .env("PROFILE", profile)
            .output()
            .expect("run scripts/fake-devices.sh");
        assert!(
            out.status.success(),
            "fake-devices.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let mut env = Vec::new();
        for line in text.lines() {
            let (k, v) = line
                .strip_prefix("export ")
                .and_then(|l| l.split_once('='))
                .unwrap_or_else(|| panic!("unexpected line from fake-devices.sh: {line}"));
            // 'A'${X:+:$X} — the quoted part, then what the shell would append.
            let quoted = v.split('\'').nth(1).unwrap_or_default().to_string();
            let value = match k {
                "PATH" => format!("{quoted}:{}", std::env::var("PATH").unwrap_or_default()),
                _ => quoted,
            };
            env.push((k.to_string(), value));
        }
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fake-devices-cache");
        env.push(("ACCEVAL_CACHE".into(), tmp.display().to_string()));
        env
    })
}

/// acceval with the emulators and `extra` variables.
fn acceval(args: &[&str], extra: &[(&str, String)]) -> Output {
    let mut c = common::command();
    c.args(args)
        .envs(fake_env().iter().map(|(k, v)| (k.as_str(), v.as_str())));
    for (k, v) in extra {
        c.env(k, v);
    }
    c.output().expect("run acceval")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A bench that ran to the end: exit 0 (VALID) or 1 (INVALID: the 2-core host is noisy; the
/// validity verdict is not what these tests check), with a complete report.
fn bench_json(o: &Output) -> Value {
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(o));
    let r = json(o);
    assert_eq!(r["complete"], true, "{}", text(o));
    r
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(o)))
}

fn squeezenet() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/squeezenet1_1.onnx")
        .display()
        .to_string()
}

fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The arrays of an .npz as f64.
fn npz(path: &Path) -> HashMap<String, Vec<f64>> {
    let mut r =
        ndarray_npy::NpzReader::new(std::fs::File::open(path).expect("open npz")).expect("npz");
    let names = r.names().expect("names");
    names
        .into_iter()
        .map(|n| {
            let a: ndarray::ArrayD<f32> = r.by_name(&n).expect("f32 array");
            (n, a.iter().map(|&v| v as f64).collect())
        })
        .collect()
}

#[test]
fn devices_lists_the_emulated_npu_and_gpu_with_power() {
    let o = acceval(&["devices", "--json"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let d = json(&o);
    let npu = &d["ascend"]["npus"][0];
    assert!(npu["power_w"].as_f64().unwrap() > 0.0, "{npu}");
    assert!(
        npu["chip_name"].as_str().unwrap().contains("emulated"),
        "{npu}"
    );
    assert!(
        d["ascend"]["emulated"]
            .as_str()
            .unwrap()
            .contains("emulator")
    );
    assert!(d["ascend"]["driver_version"].is_string());
    assert!(
        d["ascend"]["cann_version"]
            .as_str()
            .unwrap()
            .contains("acceval emulator")
    );
    let gpu = &d["nvidia"]["gpus"][0];
    assert!(gpu["power_w"].as_f64().unwrap() > 0.0, "{gpu}");
    assert!(gpu["name"].as_str().unwrap().contains("emulated"));
    assert!(
        d["nvidia"]["emulated"]
            .as_str()
            .unwrap()
            .contains("NVML emulator")
    );
    let acl = d["backends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "acl")
        .unwrap();
    assert_eq!(acl["availability"]["status"], "available", "{acl}");
    assert!(
        acl["availability"]["detail"]
            .as_str()
            .unwrap()
            .contains("EMULATED")
    );
    // The terminal view says it too.
    let o = acceval(&["devices"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.matches("EMULATED").count() >= 3, "{out}");
}

#[test]
fn without_dcmi_npu_smi_lists_the_npus() {
    // The driver's libdcmi.so off the search path; npu-smi (on PATH) answers instead.
    let ld: String = fake_env()
        .iter()
        .find(|(k, _)| k == "LD_LIBRARY_PATH")
        .map(|(_, v)| {
            v.split(':')
                .filter(|d| !d.contains("driver"))
                .collect::<Vec<_>>()
                .join(":")
        })
        .unwrap();
    let o = acceval(&["devices", "--json"], &[("LD_LIBRARY_PATH", ld)]);
    assert!(o.status.success(), "{}", text(&o));
    let d = json(&o);
    let a = &d["ascend"];
    assert_eq!(a["source"], "npu-smi info", "{a}");
    assert!(a["emulated"].as_str().unwrap().contains("npu-smi"));
    let npu = &a["npus"][0];
    assert_eq!(npu["chip_name"], "910B3", "{npu}");
    assert!(npu["power_w"].as_f64().unwrap() > 0.0, "{npu}");
    assert_eq!(npu["hbm_total_mb"], 65536, "{npu}");
    assert_eq!(npu["bus_id"], "0000:C1:00.0", "{npu}");
}

#[test]
fn acl_runs_a_real_model_like_the_cpu_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (a, c) = (dir.path().join("acl.npz"), dir.path().join("cpu.npz"));
    let o = acceval(
        &[
            "run",
            "--backend",
            "acl",
            "--model",
            &squeezenet(),
            "--output",
            a.to_str().unwrap(),
            "--runs",
            "3",
            "--json",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let r = json(&o);
    assert!(
        r["session"]["emulated"]
            .as_str()
            .unwrap()
            .contains("CANN emulator")
    );
    assert!(
        r["session"]["device"]
            .as_str()
            .unwrap()
            .contains("EMULATED")
    );
    assert_eq!(r["session"]["options"]["precision_mode"], "origin");
    assert!(
        r["session"]["options"]["atc"]
            .as_str()
            .unwrap()
            .contains("--precision_mode_v2=origin")
    );
    assert!(r["timings"]["convert_ms"].as_f64().unwrap() > 0.0);
    let o = acceval(
        &[
            "run",
            "--backend",
            "cpu",
            "--model",
            &squeezenet(),
            "--output",
            c.to_str().unwrap(),
            "--runs",
            "1",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    // §6.2 f: the whole graph on the NPU, the operators ATC's log puts on the AI CPU named.
    let o = acceval(
        &[
            "run",
            "--backend",
            "acl",
            "--model",
            &squeezenet(),
            "--runs",
            "1",
            "--placement",
            "--json",
        ],
        // Its own .om cache: the emulator's placement knob is not part of the cache key.
        &[
            ("ATC_FAKE_AICPU_OPS", "Concat".into()),
            (
                "ACCEVAL_CACHE",
                dir.path().join("cache").display().to_string(),
            ),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let p = json(&o);
    let s = &p["placement_summary"];
    assert_eq!(s["nodes_on_device"], s["nodes"], "{s}");
    assert_eq!(s["cpu_fallback"].as_array().unwrap().len(), 0, "{s}");
    let aicpu = p["placement"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["device"].as_str().unwrap().contains("AI CPU"))
        .count();
    assert_eq!(
        aicpu, 8,
        "squeezenet1_1 has 8 Concat nodes: {}",
        p["placement"]
    );
    // The .om acl converted, given as is: the backend declares its inputs, and the outputs are
    // the same.
    let om = r["session"]["options"]["om"].as_str().unwrap().to_string();
    let given = dir.path().join("given.npz");
    let o = acceval(
        &[
            "run",
            "--backend",
            "acl",
            "--model",
            &om,
            "--output",
            given.to_str().unwrap(),
            "--runs",
            "1",
            "--json",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let g = json(&o);
    assert!(
        g["timings"]["convert_ms"].is_null(),
        "a given .om is not converted: {}",
        g["timings"]
    );
    assert_eq!(npz(&given), npz(&a));
    // bench takes it too (model only, the inputs the .om declares).
    let o = acceval(
        &[
            "bench",
            "--backend",
            "acl",
            "--model",
            &om,
            "--runs",
            "5",
            "--duration",
            "0",
            "--json",
        ],
        &[],
    );
    let b = bench_json(&o);
    assert_eq!(b["mode"], "model-only", "{}", b["mode"]);
    assert!(b["stages"]["h2d"].is_object(), "{}", b["stages"]);
    let (x, y) = (npz(&a), npz(&c));
    assert_eq!(x.keys().collect::<Vec<_>>().len(), y.len());
    for (name, ref_v) in &y {
        let v = &x[name];
        assert_eq!(v.len(), ref_v.len(), "{name}");
        let num: f64 = v
            .iter()
            .zip(ref_v)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        let den: f64 = ref_v.iter().map(|b| b * b).sum::<f64>().sqrt();
        assert!(num / den <= 1e-4, "{name}: rel L2 {}", num / den);
        assert!(den > 0.0);
    }
}

#[test]
fn acl_bench_times_copies_apart_and_dcmi_energy_is_the_ramp_integral() {
    let (base, slope, t0) = (100.0, 5.0, now_s());
    let env = [
        ("DCMI_FAKE_T0", format!("{t0}")),
        ("DCMI_FAKE_POWER_BASE", format!("{base}")),
        ("DCMI_FAKE_POWER_SLOPE", format!("{slope}")),
        // No cap: the test may start long after t0 on a busy machine.
        ("DCMI_FAKE_POWER_MAX", "1e9".to_string()),
        ("ACL_FAKE_H2D_US", "3000".to_string()),
        ("ACL_FAKE_D2H_US", "2000".to_string()),
    ];
    let o = acceval(
        &[
            "bench",
            "--backend",
            "acl",
            "--model",
            &squeezenet(),
            "--model-only",
            "--runs",
            "20",
            "--duration",
            "3",
            "--json",
        ],
        &env,
    );
    let r = bench_json(&o);
    let stages = r["stages"].as_object().unwrap();
    assert_eq!(
        stages.keys().cloned().collect::<Vec<_>>(),
        vec!["d2h", "forward", "h2d"],
        "{stages:?}"
    );
    let p50 = |s: &str| stages[s]["latency_ms"]["p50"].as_f64().unwrap();
    // The emulated copies wait 3 ms and 2 ms: the stages see them, and no more than a
    // millisecond of their own.
    assert!((3.0..4.0).contains(&p50("h2d")), "h2d {}", p50("h2d"));
    assert!((2.0..3.0).contains(&p50("d2h")), "d2h {}", p50("d2h"));
    assert!(p50("forward") > 0.0);
    let total = r["latency_ms"]["p50"].as_f64().unwrap();
    assert!(total >= p50("h2d") + p50("d2h"), "{total}");
    assert!(r["copies"].as_str().unwrap().contains("aclrtMemcpy"));
    let tm = &r["telemetry"];
    let e = find(&tm["energy"], "device", "npu0");
    assert_eq!(e["method"], "trapezoid of power samples");
    // The ramp P(t) = base + slope·(t − t0) over the window [origin, origin + window].
    let a = r["origin_unix_ms"].as_f64().unwrap() / 1e3;
    let b = a + tm["window_s"].as_f64().unwrap();
    let expect = (b - a) * (base + slope * ((a + b) / 2.0 - t0));
    let got = e["joules"].as_f64().unwrap();
    assert!(
        (got - expect).abs() / expect < 0.01,
        "energy {got} J, ramp integral {expect} J"
    );
    let avg = e["average_power_w"].as_f64().unwrap();
    assert!((avg - expect / (b - a)).abs() / avg < 0.01, "{avg}");
    let peak = e["peak_power_w"].as_f64().unwrap();
    assert!(
        (peak - (base + slope * (b - t0))).abs() < 0.5,
        "peak {peak}"
    );
    let util = find(&tm["channels"], "name", "npu0.aicore_util_pct");
    assert!(util["samples"].as_u64().unwrap() >= 2, "{util}");
    assert!(util["definition"].as_str().unwrap().contains("emulated"));
}

#[test]
fn acl_errors_exit_2_naming_the_call_and_leave_no_device_memory() {
    let dir = tempfile::tempdir().unwrap();
    for (fault, call, code) in [
        ("aclmdlExecute:507011", "aclmdlExecute", "507011"),
        ("aclrtMalloc:207001@2", "aclrtMalloc", "207001"),
        ("aclrtMemcpy:100000@1", "aclrtMemcpy", "100000"),
        ("aclmdlLoadFromFile:100012", "aclmdlLoadFromFile", "100012"),
    ] {
        let stats = dir.path().join(format!("{call}.json"));
        let o = acceval(
            &[
                "run",
                "--backend",
                "acl",
                "--model",
                &squeezenet(),
                "--runs",
                "1",
            ],
            &[
                ("ACL_FAKE_FAIL", fault.to_string()),
                ("ACL_FAKE_STATS", stats.display().to_string()),
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{fault}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(call) && err.contains(code), "{fault}: {err}");
        assert!(
            err.contains("injected by ACL_FAKE_FAIL"),
            "ACL's recent message: {err}"
        );
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        for k in [
            "live_device_allocations",
            "live_buffers",
            "live_datasets",
            "live_descs",
            "loaded_models",
            "contexts",
            "streams",
            "device_refs",
        ] {
            assert_eq!(s[k], 0, "{fault}: {k} left after teardown: {s}");
        }
        assert_eq!(s["finalized"], true, "{fault}: {s}");
        assert_eq!(s["faults_injected"], 1, "{fault}: {s}");
    }
    // A format acl cannot take names the backend that can.
    let pt = dir.path().join("m.pt");
    std::fs::write(&pt, b"not a model").unwrap();
    let o = acceval(
        &["run", "--backend", "acl", "--model", pt.to_str().unwrap()],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// ACL's model load and ATC's conversion run under `--load-timeout` like the other engines'
/// loads: one still going at the budget ends the run with exit 2 naming the stage, in about
/// the budget, and a load within it is timed as part of the initialisation.
#[test]
fn acl_load_and_atc_past_their_budget_end_naming_the_stage() {
    // `run --backend acl` under `budget` with `env`: its output and wall time, s.
    let timed = |budget: &str, env: &[(&str, String)]| {
        let t = std::time::Instant::now();
        let o = acceval(
            &[
                "run",
                "--backend",
                "acl",
                "--model",
                &squeezenet(),
                "--runs",
                "1",
                "--load-timeout",
                budget,
                "--json",
            ],
            env,
        );
        (o, t.elapsed().as_secs_f64())
    };
    let run =
        |budget: &str, load_us: &str| timed(budget, &[("ACL_FAKE_LOAD_US", load_us.to_string())]);
    // ATC's conversion (cached after the first run) is not part of the load budget.
    let (o, _) = run("30", "0");
    assert!(o.status.success(), "{}", text(&o));
    // A load that sleeps 60 s in the emulated aclmdlLoadFromFile, against a 1 s budget.
    let (o, secs) = run("1", "60000000");
    let all = text(&o);
    assert_eq!(o.status.code(), Some(2), "{all}");
    assert!(
        all.contains("ACL's model load (aclmdlLoadFromFile) did not finish within 1 s"),
        "{all}"
    );
    assert!(secs < 20.0, "took {secs:.1} s: {all}");
    // ATC's conversion is a child process under the same budget: one that would compile for
    // 60 s is killed at 1 s, and nothing is cached, so the next run converts afresh.
    let cache = tempfile::tempdir().unwrap();
    let convert = |budget: &str, sleep_ms: &str| {
        timed(
            budget,
            &[
                ("ATC_FAKE_SLEEP_MS", sleep_ms.to_string()),
                ("ACCEVAL_CACHE", cache.path().display().to_string()),
            ],
        )
    };
    let (o, secs) = convert("1", "60000");
    let all = text(&o);
    assert_eq!(o.status.code(), Some(2), "{all}");
    assert!(
        all.contains("ATC's conversion (ONNX → .om) did not finish within 1 s")
            && all.contains("acceval killed it"),
        "{all}"
    );
    assert!(secs < 20.0, "took {secs:.1} s: {all}");
    let (o, _) = convert("30", "0");
    assert!(o.status.success(), "{}", text(&o));
    let note = json(&o)["timings"]["convert_note"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(note.contains("this run's conversion"), "{note}");
    // 0.8 s of load within a 30 s budget: the run succeeds and its init time holds the wait.
    let (o, _) = run("30", "800000");
    assert!(o.status.success(), "{}", text(&o));
    let init = json(&o)["timings"]["init_ms"].as_f64().unwrap();
    assert!(
        init >= 800.0,
        "init {init} ms should include the 800 ms load"
    );
}

#[test]
fn atc_precision_is_origin_unless_asked_and_fp16_moves_the_accuracy() {
    common::zoo_model("lstm-load-forecast");
    common::reference("lstm-load-forecast");
    let acc = |extra: &[&str]| {
        let mut args = vec![
            "accuracy",
            "--backend",
            "acl",
            "--model",
            "lstm-load-forecast",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = acceval(&args, &[]);
        assert!(
            o.status.success() || o.status.code() == Some(1),
            "{}",
            text(&o)
        );
        json(&o)
    };
    let origin = acc(&[]);
    let mse = |r: &Value| {
        r["mse"]
            .as_f64()
            .or_else(|| r["worst"]["mse"].as_f64())
            .unwrap_or_else(|| panic!("no mse: {r}"))
    };
    assert!(
        mse(&origin) < 1e-12,
        "origin should match the CPU reference: {}",
        mse(&origin)
    );
    let fp16 = acc(&["--ep-option", "precision_mode=fp16"]);
    assert!(
        mse(&fp16) > 1e-10,
        "ATC's fp16 mode should move the outputs: {}",
        mse(&fp16)
    );
    assert_eq!(fp16["session"]["options"]["precision_mode"], "fp16");
}

#[test]
fn grade_on_the_emulated_npu_has_power_and_is_never_compliant() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = acceval(
        &[
            "grade",
            "--profile",
            "bigdata-forecast",
            "--backend",
            "acl",
            "--runs",
            "20",
            "--duration",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(r["verdict"], "NOT COMPLIANT", "{}", r["verdict"]);
    let clauses = r["clauses"].as_array().unwrap();
    let find = |t: &str| {
        clauses
            .iter()
            .find(|c| c["title"] == t)
            .unwrap_or_else(|| panic!("no clause {t}"))
    };
    assert_eq!(find("Device is hardware")["verdict"], "FAIL");
    assert_eq!(find("Compute units")["verdict"], "N/A");
    assert!(
        find("Compute units")["reason"]
            .as_str()
            .unwrap()
            .contains("emulated device")
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("npu0.power_w"),
        "no NPU power channel in the report"
    );
    assert!(
        md.contains("trapezoid of power samples"),
        "no NPU energy in the report"
    );
    assert!(md.contains("emulated"), "the report does not say emulated");
}

/// The element of `list` whose `key` is `value`.
fn find<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|x| x[key] == value)
        .unwrap_or_else(|| panic!("no {key} = {value} in {list}"))
}

/// `bench --backend cpu` of squeezenet1_1, model only, 5 runs over `duration` s, with the
/// emulators and `env`: the complete report.
fn bench_cpu(duration: &str, env: &[(&str, String)]) -> Value {
    let model = squeezenet();
    let args = [
        "bench",
        "--backend",
        "cpu",
        "--model",
        &model,
        "--model-only",
        "--runs",
        "5",
        "--duration",
        duration,
        "--json",
    ];
    bench_json(&acceval(&args, env))
}

#[test]
fn nvml_faults_leave_the_run_complete_with_na_figures() {
    let t0 = now_s();
    // A healthy emulated GPU: energy from the counter, and the integral of its power beside.
    let r = bench_cpu(
        "3",
        &[
            ("NVML_FAKE_T0", format!("{t0}")),
            ("NVML_FAKE_POWER_MAX", "1e9".to_string()),
        ],
    );
    let tm = &r["telemetry"];
    let e = find(&tm["energy"], "device", "gpu0");
    assert_eq!(e["method"], "energy counter");
    let a = r["origin_unix_ms"].as_f64().unwrap() / 1e3;
    let b = a + tm["window_s"].as_f64().unwrap();
    let expect = (b - a) * (100.0 + 3.0 * ((a + b) / 2.0 - t0));
    let got = e["joules"].as_f64().unwrap();
    assert!(
        (got - expect).abs() / expect < 0.01,
        "counter {got} J, ramp {expect} J"
    );
    let integral = e["power_integral_j"].as_f64().unwrap();
    assert!(
        (integral - got).abs() / got < 0.01,
        "integral {integral} vs counter {got}"
    );

    // The GPU falls off the bus 1.5 s in: the run completes, power and energy are n/a.
    let r = bench_cpu("3.5", &[("NVML_FAKE_LOST_AFTER_S", "1.5".into())]);
    let tm = &r["telemetry"];
    let gpu_energy = tm["energy"].as_array().unwrap().iter();
    assert!(gpu_energy.clone().all(|e| e["device"] != "gpu0"), "{tm}");
    let na = find(&tm["energy_na"], "device", "gpu0");
    // nvml-wrapper's text for NVML_ERROR_GPU_IS_LOST.
    assert!(
        na["reason"].as_str().unwrap().contains("fell off the bus"),
        "{na}"
    );
    let power = find(&tm["channels"], "name", "gpu0.power_w");
    assert!(
        power["mean"].is_null(),
        "a lost GPU's mean power must be n/a: {power}"
    );
    assert!(
        power["failure"].as_str().unwrap().contains("n/a"),
        "{power}"
    );

    // One failed power read mid-run: the counter still gives energy; the power integral is
    // not claimed, and the failure is said.
    let r = bench_cpu(
        "3",
        &[("NVML_FAKE_FAIL", "nvmlDeviceGetPowerUsage:999@3".into())],
    );
    let tm = &r["telemetry"];
    let e = find(&tm["energy"], "device", "gpu0");
    assert_eq!(e["method"], "energy counter");
    assert!(e["power_integral_j"].is_null(), "{e}");
    assert!(e["peak_power_w"].is_null(), "{e}");
    let power = find(&tm["channels"], "name", "gpu0.power_w");
    assert!(
        power["failure"].as_str().unwrap().starts_with("1 of "),
        "{power}"
    );
    assert!(power["mean"].as_f64().unwrap() > 0.0, "{power}");
}
