//! `acceval verify DIR [--pubkey KEY.pub]` and `acceval keygen --out NAME`.

use std::path::Path;

use crate::Outcome;
use crate::grade::sign::{self, SignatureStatus};
use crate::grade::verify;

pub fn run(dir: &Path, pubkey: Option<&Path>) -> anyhow::Result<Outcome> {
    let v = verify::verify(dir, pubkey)?;
    let signed = match &v.signature {
        SignatureStatus::Unsigned => "unsigned (integrity only)".to_string(),
        SignatureStatus::Valid { public_key } => {
            format!("signed by key {public_key} (signature verified)")
        }
        SignatureStatus::NotChecked { public_key } => {
            format!("signed by key {public_key} (not checked: give --pubkey)")
        }
        SignatureStatus::Invalid(why) => format!("signature INVALID: {why}"),
    };
    for n in &v.notes {
        println!("note: {n}");
    }
    if v.problems.is_empty() {
        println!(
            "{}: OK — {} files match manifest.json; report.json matches the schema ({}); {signed}",
            dir.display(),
            v.matched,
            v.schema
        );
        Ok(Outcome::Ok)
    } else {
        println!("{}: FAILED ({signed})", dir.display());
        for p in &v.problems {
            println!("  {p}");
        }
        Ok(Outcome::NotCompliant)
    }
}

pub fn keygen(out: &Path) -> anyhow::Result<Outcome> {
    let (key, public) = sign::keygen(out)?;
    println!(
        "wrote {} (private: keep it, sign with `acceval grade --sign {}`) and {} (public: give it to reviewers, `acceval verify DIR --pubkey {}`)",
        key.display(),
        key.display(),
        public.display(),
        public.display()
    );
    Ok(Outcome::Ok)
}

pub fn sign(dir: &Path, key: &Path) -> anyhow::Result<Outcome> {
    let p = sign::sign(dir, key)?;
    println!("wrote {}", p.display());
    Ok(Outcome::Ok)
}
