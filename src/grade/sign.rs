//! Signed evidence: a lab's ed25519 key signs `manifest.json` (which holds the SHA-256 of
//! every file of the report, the tool version and commit, the command line), so an edited
//! report fails `verify --pubkey` whether or not the editor re-hashed it. Keys are PEM files
//! (PKCS#8 private key, SPKI public key) that OpenSSL reads too (`openssl pkey -in KEY`).

use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};

use super::Error;
use crate::util::fs::{sha256_hex, write_file};

/// The signature file beside `manifest.json`.
pub const SIGNATURE_FILE: &str = "manifest.json.sig";
/// Its schema.
pub const SCHEMA: &str = "acceval.signature/1";

/// `manifest.json.sig`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
pub struct SignatureFile {
    pub schema: String,
    pub algorithm: String,
    pub signed_file: String,
    /// SHA-256 of the signed file, for a reader without the key.
    pub signed_sha256: String,
    /// The signer's public key, hex (32 bytes).
    pub public_key: String,
    /// The ed25519 signature of the signed file's bytes, hex (64 bytes).
    pub signature: String,
}

/// Writes a new key pair: `PATH.key` (private, mode 0600) and `PATH.pub`.
pub fn keygen(path: &Path) -> Result<(PathBuf, PathBuf), Error> {
    use std::io::Read;
    let mut seed = [0u8; 32];
    // The OS's random source (the kernel CSPRNG).
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(Error::Random)?;
    let key = SigningKey::from_bytes(&seed);
    let key_path = path.with_extension("key");
    let pub_path = path.with_extension("pub");
    if key_path.exists() {
        return Err(Error::KeyExists { path: key_path });
    }
    let pem = key
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| Error::Encode {
            what: "key",
            why: e.to_string(),
        })?;
    write_file(&key_path, pem.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).map_err(
            |err| Error::Permissions {
                path: key_path.clone(),
                err,
            },
        )?;
    }
    let public = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| Error::Encode {
            what: "public key",
            why: e.to_string(),
        })?;
    write_file(&pub_path, public.as_bytes())?;
    Ok((key_path, pub_path))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Signs `dir/manifest.json` with the private key at `key`.
pub fn sign(dir: &Path, key: &Path) -> Result<PathBuf, Error> {
    let pem = String::from_utf8_lossy(&crate::util::read(key)?).into_owned();
    let key = SigningKey::from_pkcs8_pem(&pem).map_err(|e| Error::NotAPrivateKey {
        path: key.to_path_buf(),
        why: e.to_string(),
    })?;
    let manifest = crate::util::read(&dir.join("manifest.json"))?;
    let sig: Signature = key.sign(&manifest);
    let file = SignatureFile {
        schema: SCHEMA.into(),
        algorithm: "ed25519".into(),
        signed_file: "manifest.json".into(),
        signed_sha256: sha256_hex(&manifest),
        public_key: hex(key.verifying_key().as_bytes()),
        signature: hex(&sig.to_bytes()),
    };
    let p = dir.join(SIGNATURE_FILE);
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| Error::Report(e.into()))?;
    bytes.push(b'\n');
    write_file(&p, &bytes)?;
    Ok(p)
}

/// What the signature check found.
#[derive(Debug, Clone, PartialEq)]
pub enum SignatureStatus {
    /// No signature file: the hashes are checked, but anyone could have re-hashed.
    Unsigned,
    /// Signed by the given public key, and the signature matches the manifest.
    Valid {
        public_key: String,
    },
    /// Signed, and no public key was given to check it with.
    NotChecked {
        public_key: String,
    },
    Invalid(String),
}

/// Checks `dir`'s signature against the public key at `pubkey` (when given).
pub fn check(dir: &Path, pubkey: Option<&Path>) -> Result<SignatureStatus, Error> {
    let sig_path = dir.join(SIGNATURE_FILE);
    let want = match pubkey {
        Some(p) => {
            let pem = String::from_utf8_lossy(&crate::util::read(p)?).into_owned();
            Some(
                VerifyingKey::from_public_key_pem(&pem).map_err(|e| Error::NotAPublicKey {
                    path: p.to_path_buf(),
                    why: e.to_string(),
                })?,
            )
        }
        None => None,
    };
    if !sig_path.exists() {
        return Ok(match want {
            Some(_) => SignatureStatus::Invalid(format!(
                "{SIGNATURE_FILE} is missing: the report is not signed, and a public key was given to check its signature"
            )),
            None => SignatureStatus::Unsigned,
        });
    }
    let file: SignatureFile =
        serde_json::from_slice(&crate::util::read(&sig_path)?).map_err(|e| Error::NotA {
            path: sig_path.clone(),
            what: "an acceval signature",
            why: e.to_string(),
        })?;
    let manifest = crate::util::read(&dir.join("manifest.json"))?;
    let Some(want) = want else {
        return Ok(SignatureStatus::NotChecked {
            public_key: file.public_key,
        });
    };
    if file.public_key != hex(want.as_bytes()) {
        return Ok(SignatureStatus::Invalid(format!(
            "signed by key {}, not by the given public key {}",
            file.public_key,
            hex(want.as_bytes())
        )));
    }
    let Some(bytes) = unhex(&file.signature).filter(|b| b.len() == 64) else {
        return Ok(SignatureStatus::Invalid(
            "the signature is not 64 hex-encoded bytes".into(),
        ));
    };
    let mut arr = [0u8; 64];
    arr.copy_from_slice(&bytes);
    match want.verify(&manifest, &Signature::from_bytes(&arr)) {
        Ok(()) => Ok(SignatureStatus::Valid {
            public_key: file.public_key,
        }),
        Err(_) => Ok(SignatureStatus::Invalid(
            "the signature does not match manifest.json: the manifest was changed after signing"
                .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_then_tamper() {
        let d = tempfile::tempdir().unwrap();
        let (key, public) = keygen(&d.path().join("lab")).unwrap();
        let r = d.path().join("r");
        std::fs::create_dir_all(&r).unwrap();
        std::fs::write(r.join("manifest.json"), b"{\"files\": []}").unwrap();
        sign(&r, &key).unwrap();
        assert!(matches!(
            check(&r, Some(&public)).unwrap(),
            SignatureStatus::Valid { .. }
        ));
        std::fs::write(r.join("manifest.json"), b"{\"files\": [1]}").unwrap();
        assert!(matches!(
            check(&r, Some(&public)).unwrap(),
            SignatureStatus::Invalid(_)
        ));
        // Another lab's key does not verify it.
        let (_, other) = keygen(&d.path().join("other")).unwrap();
        assert!(matches!(
            check(&r, Some(&other)).unwrap(),
            SignatureStatus::Invalid(_)
        ));
        assert!(
            keygen(&d.path().join("lab")).is_err(),
            "never overwrites a key"
        );
    }
}
