//! Files: atomic writes (a reader never sees half a file) and SHA-256 of bytes.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename,
/// so a reader never sees a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        // A full disk or a refused rename leaves nothing behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// [`write_atomic`] with an error that names the file.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), super::Error> {
    write_atomic(path, bytes).map_err(super::Error::write(path))
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `path` exists with SHA-256 `sha`.
pub fn file_matches(path: &Path, sha: &str) -> bool {
    std::fs::read(path).is_ok_and(|b| crate::util::fs::sha256_hex(&b) == sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the file should go: the rename fails after the data is written.
        let p = dir.path().join("report.json");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("x"), b"keep").unwrap();
        assert!(write_atomic(&p, b"data").is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["report.json"], "{left:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_device_leaves_no_temporary_file() {
        // /dev/full fails every write with ENOSPC; a symlink to it stands in for the
        // temporary file on a full disk.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        let tmp = dir
            .path()
            .join(format!(".r.json.tmp.{}", std::process::id()));
        std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
        let e = write_atomic(&p, b"data").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
        assert!(!tmp.exists() && !p.exists());
    }

    #[test]
    fn sha256_of_abc() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
