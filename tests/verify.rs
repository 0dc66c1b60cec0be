//! `acceval verify` against tampered report folders (issue 16's campaign, and the signed
//! evidence of issue 14): a real report (tests/fixtures/report-v2, written by `acceval grade
//! --profile bigdata-forecast`) is copied, edited one way at a time, and must fail verify —
//! with a signature, even when the editor re-hashed the manifest.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report-v2")
}

/// A copy of the fixture report in a temporary folder.
fn copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(fixture()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    (tmp, dir)
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// Writes a manifest as acceval does when it still is one (its typed form: the fields in
/// their order, pretty JSON and a newline), as a careful forger would; else as given.
fn write_manifest(dir: &Path, m: &Value) {
    let typed: Option<acceval::report::schema::grade::Manifest> =
        serde_json::from_value(m.clone()).ok();
    let mut b = match typed {
        Some(t) => serde_json::to_vec_pretty(&t).unwrap(),
        None => serde_json::to_vec_pretty(m).unwrap(),
    };
    b.push(b'\n');
    std::fs::write(dir.join("manifest.json"), b).unwrap();
}

/// Recomputes the hash and size of `file` in the manifest, as a forger would.
fn rehash(dir: &Path, file: &str) {
    let mut m = manifest(dir);
    let b = std::fs::read(dir.join(file)).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        if f["file"] == file {
            f["sha256"] = Value::String(acceval::util::fs::sha256_hex(&b));
            f["bytes"] = Value::from(b.len());
        }
    }
    write_manifest(dir, &m);
}

fn verify(dir: &Path, extra: &[&str]) -> (i32, String) {
    let mut a = vec!["verify", dir.to_str().unwrap()];
    a.extend_from_slice(extra);
    let (code, out, err) = acceval(&a);
    (code, out + &err)
}

#[test]
fn the_fixture_verifies() {
    let (code, out) = verify(&fixture(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("unsigned (integrity only)"), "{out}");
}

/// Each forgery, and the words its failure must contain.
#[test]
fn tampered_folders_fail_naming_the_problem() {
    type Forge = fn(&Path);
    let cases: Vec<(&str, Forge, &str)> = vec![
        (
            "an added file",
            |d| std::fs::write(d.join("extra.txt"), "x").unwrap(),
            "extra.txt: in the folder but not in manifest.json",
        ),
        (
            "a file deleted with its entry",
            |d| {
                std::fs::remove_file(d.join("samples.csv")).unwrap();
                let mut m = manifest(d);
                m["files"]
                    .as_array_mut()
                    .unwrap()
                    .retain(|f| f["file"] != "samples.csv");
                write_manifest(d, &m);
            },
            "samples.csv: what report.json says was measured needs it",
        ),
        (
            "a duplicated entry",
            |d| {
                let mut m = manifest(d);
                let first = m["files"][0].clone();
                m["files"].as_array_mut().unwrap().push(first);
                write_manifest(d, &m);
            },
            "listed twice",
        ),
        (
            "an empty file list",
            |d| {
                let mut m = manifest(d);
                m["files"] = Value::Array(Vec::new());
                write_manifest(d, &m);
            },
            "lists no file",
        ),
        (
            "a wrong size",
            |d| {
                let mut m = manifest(d);
                m["files"][0]["bytes"] = Value::from(1);
                write_manifest(d, &m);
            },
            "changed",
        ),
        (
            "an entry outside the folder",
            |d| {
                let mut m = manifest(d);
                m["files"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!({"file": "/etc/hostname", "sha256": "00", "bytes": 1}));
                write_manifest(d, &m);
            },
            "not a file of the report folder",
        ),
        (
            "an entry up the tree",
            |d| {
                let mut m = manifest(d);
                m["files"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!({"file": "../../..", "sha256": "00", "bytes": 1}));
                write_manifest(d, &m);
            },
            "not a file of the report folder",
        ),
        (
            "an edited command line",
            |d| {
                let mut m = manifest(d);
                m["command_line"] = serde_json::json!(["acceval", "grade", "--profile", "other"]);
                write_manifest(d, &m);
            },
            "different command lines",
        ),
        (
            "an edited git commit",
            |d| {
                let mut m = manifest(d);
                m["tool"]["git_commit"] = Value::String("0000000".into());
                write_manifest(d, &m);
            },
            "the manifest 0.",
        ),
        (
            "a verdict that its clauses do not give, re-hashed",
            |d| {
                let p = d.join("report.json");
                let mut r: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
                r["verdict"] = Value::String(
                    if r["verdict"] == "COMPLIANT" {
                        "NOT COMPLIANT"
                    } else {
                        "COMPLIANT"
                    }
                    .into(),
                );
                std::fs::write(&p, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
                rehash(d, "report.json");
            },
            "its clauses and stages give",
        ),
        (
            "an edited view, re-hashed",
            |d| {
                let p = d.join("report.md");
                let md = std::fs::read_to_string(&p).unwrap();
                std::fs::write(&p, md.replace("Verdict", "Verdikt")).unwrap();
                rehash(d, "report.md");
            },
            "report.md: differs from what report.json renders to",
        ),
        (
            "a manifest that lists itself",
            |d| {
                let mut m = manifest(d);
                m["files"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!({"file": "manifest.json", "sha256": "00", "bytes": 1}));
                write_manifest(d, &m);
            },
            "cannot list itself",
        ),
        (
            "a file replaced by a link",
            |d| {
                std::fs::remove_file(d.join("metrics.csv")).unwrap();
                std::os::unix::fs::symlink("/etc/hostname", d.join("metrics.csv")).unwrap();
            },
            "not a regular file",
        ),
        (
            "a truncated report.json",
            |d| {
                let p = d.join("report.json");
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() / 2]).unwrap();
            },
            "report.json",
        ),
    ];
    for (what, forge, want) in cases {
        let (_t, dir) = copy();
        forge(&dir);
        let (code, out) = verify(&dir, &[]);
        assert_eq!(code, 1, "{what} was not caught:\n{out}");
        assert!(out.contains(want), "{what}: expected '{want}' in:\n{out}");
    }
}

#[test]
fn a_signed_report_edited_and_rehashed_fails_with_the_key() {
    let (tmp, dir) = copy();
    let key = tmp.path().join("lab");
    let (code, out, err) = acceval(&["keygen", "--out", key.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let (k, pubkey) = (key.with_extension("key"), key.with_extension("pub"));
    // OpenSSL-compatible PEM.
    assert!(
        std::fs::read_to_string(&k)
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----")
    );
    assert!(
        std::fs::read_to_string(&pubkey)
            .unwrap()
            .starts_with("-----BEGIN PUBLIC KEY-----")
    );
    let (code, _, err) = acceval(&["sign", dir.to_str().unwrap(), "--key", k.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, out) = verify(&dir, &["--pubkey", pubkey.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("signature verified"), "{out}");

    // Edit a measured number in report.json and in its views, and re-hash everything: the
    // hashes all match, only the signature can tell.
    let p = dir.join("report.json");
    let mut r: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    r["speed"]["fps"] = Value::from(9999.0);
    std::fs::write(&p, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    for (f, fmt) in [("report.md", "md"), ("report.html", "html")] {
        let (_, view, _) = acceval(&["report", dir.to_str().unwrap(), "--format", fmt]);
        std::fs::write(dir.join(f), view).unwrap();
        rehash(&dir, f);
    }
    rehash(&dir, "report.json");
    let (code, out) = verify(&dir, &[]);
    assert_eq!(code, 0, "without the key the forgery is consistent: {out}");
    assert!(out.contains("not checked: give --pubkey"), "{out}");
    let (code, out) = verify(&dir, &["--pubkey", pubkey.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("signature INVALID"), "{out}");

    // Another lab's key does not verify the original either.
    let (_t2, fresh) = copy();
    acceval(&[
        "sign",
        fresh.to_str().unwrap(),
        "--key",
        k.to_str().unwrap(),
    ]);
    let other = tmp.path().join("other");
    acceval(&["keygen", "--out", other.to_str().unwrap()]);
    let (code, out) = verify(
        &fresh,
        &["--pubkey", other.with_extension("pub").to_str().unwrap()],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not by the given public key"), "{out}");
}
