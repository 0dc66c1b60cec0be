//! Files: atomic writes (a reader never sees half a file) and SHA-256 of bytes.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename,
/// so a reader never sees a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (dir, name) = beside(path);
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

/// The folder `path` is in (`.` for a bare name) and its file name: where a temporary name
/// beside it goes.
fn beside(path: &Path) -> (&Path, String) {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, name)
}

/// [`write_atomic`] with an error that names the file.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), super::Error> {
    write_atomic(path, bytes).map_err(super::Error::write(path))
}

/// Writes a new generation of the folder `dir` at once. `fill` writes the new files into a
/// staging folder beside `dir` that starts as hard links to everything `dir` holds; then the
/// two swap in one `renameat2(RENAME_EXCHANGE)` and the old generation is removed. A reader,
/// or a run killed at any point, sees the whole old folder or the whole new one, never new
/// files beside an old manifest. Where the filesystem cannot exchange (NFS, non-Linux) the
/// files move into `dir` one by one instead (each still atomically), the names in `last` last
/// and in their order. A SIGKILL between the exchange and the removal leaves the old
/// generation as `.<name>.old.<pid>` beside it.
pub fn replace_dir<E: From<super::Error>>(
    dir: &Path,
    last: &[&str],
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let (parent, name) = beside(dir);
    if !exchange_supported() {
        super::create_dir_all(dir)?;
        return fill(dir);
    }
    remove_stale(parent, &name);
    let next = parent.join(format!(".{name}.next.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&next);
    let filled = (|| {
        if dir.is_dir() {
            link_tree(dir, &next).map_err(super::Error::write(&next))?;
        } else {
            super::create_dir_all(&next)?;
        }
        fill(&next)
    })();
    if let Err(e) = filled {
        let _ = std::fs::remove_dir_all(&next);
        return Err(e);
    }
    let swapped = if dir.exists() {
        match exchange(&next, dir) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
                move_into(&next, dir, last).map(|()| false)
            }
            r => r.map(|()| true),
        }
    } else {
        std::fs::rename(&next, dir).map(|()| false)
    };
    match swapped {
        Ok(true) => {
            let old = parent.join(format!(".{name}.old.{}", std::process::id()));
            // Renamed first so that a kill during the removal leaves a name that says what it is.
            if std::fs::rename(&next, &old).is_ok() {
                let _ = std::fs::remove_dir_all(&old);
            } else {
                let _ = std::fs::remove_dir_all(&next);
            }
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(err) => {
            let _ = std::fs::remove_dir_all(&next);
            Err(super::Error::Write {
                path: dir.to_path_buf(),
                err,
            }
            .into())
        }
    }
}

/// Removes what a killed [`replace_dir`] of `name` left beside it: `.<name>.next.<pid>` and
/// `.<name>.old.<pid>` folders whose process is gone.
fn remove_stale(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let pid = [".next.", ".old."].iter().find_map(|k| {
            n.strip_prefix(&format!(".{name}{k}"))
                .and_then(|p| p.parse::<u32>().ok())
        });
        if let Some(pid) = pid
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Moves the top-level entries of `from` into `to` (replacing), the names in `last` last,
/// then removes `from`.
fn move_into(from: &Path, to: &Path, last: &[&str]) -> std::io::Result<()> {
    let mut names: Vec<_> = std::fs::read_dir(from)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort_by_key(|n| last.iter().position(|l| n == l).map_or(0, |i| i + 1));
    for n in names {
        let dst = to.join(&n);
        if dst.is_dir() {
            std::fs::remove_dir_all(&dst)?;
        }
        std::fs::rename(from.join(&n), dst)?;
    }
    std::fs::remove_dir_all(from)
}

/// `to` as a tree of hard links to the files of `from` (copies where a link is refused).
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type()?;
        if t.is_dir() {
            link_tree(&src, &dst)?;
        } else if t.is_file() && std::fs::hard_link(&src, &dst).is_err() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// Whether this system can swap two folders atomically (Linux ≥ 3.15 on most filesystems;
/// tried for real on the folder's filesystem by [`exchange`], which reports EINVAL where not).
fn exchange_supported() -> bool {
    cfg!(target_os = "linux")
}

/// Swaps the folders `a` and `b` in one step: renameat2 with RENAME_EXCHANGE. Written here
/// because std and the crates at hand (tempfile, fs-err) have no exchanging rename.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let ca = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let cb = std::ffi::CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: two NUL-terminated paths that live across the call; the syscall only reads them.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
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

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_folder_is_replaced_by_whole_generations() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("r");
        let write_gen = |n: &str| {
            replace_dir(
                &dir,
                &["manifest.json"],
                |d| -> Result<(), crate::util::Error> {
                    write_file(&d.join("report.json"), n.as_bytes())?;
                    write_file(&d.join("manifest.json"), n.as_bytes())
                },
            )
        };
        write_gen("1").unwrap();
        // A file another step wrote into the folder stays in the next generation.
        std::fs::write(dir.join("train.mllog"), b"log").unwrap();
        write_gen("2").unwrap();
        assert_eq!(names(&dir), ["manifest.json", "report.json", "train.mllog"]);
        assert_eq!(std::fs::read(dir.join("report.json")).unwrap(), b"2");
        assert_eq!(std::fs::read(dir.join("train.mllog")).unwrap(), b"log");
        // A generation that fails part-way leaves the previous one whole, and nothing beside.
        let e = replace_dir(&dir, &[], |d| -> Result<(), crate::util::Error> {
            write_file(&d.join("report.json"), b"3")?;
            Err(crate::util::Error::write(d)(std::io::Error::other(
                "disk full",
            )))
        });
        assert!(e.is_err());
        assert_eq!(std::fs::read(dir.join("report.json")).unwrap(), b"2");
        assert_eq!(std::fs::read(dir.join("manifest.json")).unwrap(), b"2");
        assert_eq!(names(root.path()), ["r"]);
        // What a killed writer left (a process that is gone) is removed by the next write.
        let stale = root.path().join(".r.next.4294967295");
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("report.json"), b"half").unwrap();
        write_gen("4").unwrap();
        assert_eq!(names(root.path()), ["r"]);
    }

    #[test]
    fn the_fallback_moves_every_file_and_removes_the_staging_folder() {
        let root = tempfile::tempdir().unwrap();
        let (from, to) = (root.path().join("a"), root.path().join("b"));
        std::fs::create_dir_all(&from).unwrap();
        std::fs::create_dir_all(&to).unwrap();
        for n in ["manifest.json", "z.csv", "a.json"] {
            std::fs::write(from.join(n), n).unwrap();
        }
        move_into(&from, &to, &["manifest.json"]).unwrap();
        assert_eq!(names(&to), ["a.json", "manifest.json", "z.csv"]);
        assert!(!from.exists());
    }

    #[test]
    fn sha256_of_abc() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
