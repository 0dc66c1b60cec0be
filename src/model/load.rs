//! Opening and decoding a model file without copying its weights.
//!
//! The file is memory-mapped and decoded with prost so that every `raw_data` is a slice
//! of the map (a 100 MB model loads in well under a second and under 2× its size in
//! memory). A lab feeds files it did not make: the path must be a regular file (a FIFO
//! would block `open()`, a device would never end), checked before opening and again on
//! the opened handle, and opened non-blocking.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use prost::Message;

use super::onnx::{GraphProto, ModelProto};

/// Why a model could not be read. Each message names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot open model '{path}': {source}; check the path")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "'{path}' is not a regular file (a folder, FIFO, socket or device); pass an ONNX model file"
    )]
    NotAFile { path: PathBuf },
    #[error("'{path}' is empty (0 bytes); pass an ONNX model file")]
    Empty { path: PathBuf },
    #[error(
        "'{path}' is not a valid ONNX model ({reason}); the file may be truncated or of another format: re-export or re-download it"
    )]
    Decode { path: PathBuf, reason: String },
    #[error(
        "'{path}' has no graph: it decodes as protobuf but is not an ONNX ModelProto; pass an .onnx model"
    )]
    NoGraph { path: PathBuf },
    #[error(
        "tensor '{tensor}' of '{model}' {problem}; the file is damaged or was not written by an ONNX exporter: re-export it"
    )]
    Tensor {
        model: PathBuf,
        tensor: String,
        problem: String,
    },
    #[error(
        "tensor '{tensor}' of '{model}' stores its data in external file '{file}', which {problem}; keep the external data file beside the model (as written by onnx.save_model(..., save_as_external_data=True))"
    )]
    ExternalData {
        model: PathBuf,
        tensor: String,
        file: PathBuf,
        problem: String,
    },
}

/// A decoded model together with the memory map its tensors borrow from.
pub struct OnnxFile {
    pub path: PathBuf,
    pub file_bytes: u64,
    /// The model; its `graph` has been moved to [`OnnxFile::graph`].
    pub proto: ModelProto,
    graph: GraphProto,
}

/// `O_NONBLOCK` where its value is known without the `libc` crate (a library dependency
/// this module does not otherwise need).
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    any(
        target_arch = "x86",
        target_arch = "x86_64",
        target_arch = "arm",
        target_arch = "aarch64",
        target_arch = "riscv64",
        target_arch = "powerpc64",
        target_arch = "s390x",
        target_arch = "loongarch64"
    )
))]
const O_NONBLOCK: Option<i32> = Some(0o4000);
#[cfg(any(
    target_os = "macos",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "netbsd"
))]
const O_NONBLOCK: Option<i32> = Some(0x0004);
#[cfg(not(any(
    all(
        any(target_os = "linux", target_os = "android"),
        any(
            target_arch = "x86",
            target_arch = "x86_64",
            target_arch = "arm",
            target_arch = "aarch64",
            target_arch = "riscv64",
            target_arch = "powerpc64",
            target_arch = "s390x",
            target_arch = "loongarch64"
        )
    ),
    target_os = "macos",
    target_os = "freebsd",
    target_os = "openbsd",
    target_os = "netbsd"
)))]
const O_NONBLOCK: Option<i32> = None;

/// Opens `path` for reading without blocking on a FIFO swapped in after the metadata check
/// (the caller checks the opened handle is a regular file).
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    if let Some(flag) = O_NONBLOCK {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(flag);
    }
    o.open(path)
}

/// Opens `path` for reading if it is a regular file: checked before opening (a FIFO would
/// block `open()`, a device would never end) and again on the opened handle, opened
/// non-blocking. Every reader of a user's model file goes through here.
pub fn open_regular(path: &Path) -> Result<(std::fs::File, std::fs::Metadata), LoadError> {
    let open_err = |source| LoadError::Open {
        path: path.to_path_buf(),
        source,
    };
    let not_file = || LoadError::NotAFile {
        path: path.to_path_buf(),
    };
    if !std::fs::metadata(path).map_err(open_err)?.is_file() {
        return Err(not_file());
    }
    let file = open_nonblocking(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if !meta.is_file() {
        return Err(not_file());
    }
    Ok((file, meta))
}

impl OnnxFile {
    /// Opens and decodes `path` without copying tensor data.
    pub fn open(path: &Path) -> Result<OnnxFile, LoadError> {
        let open_err = |source| LoadError::Open {
            path: path.to_path_buf(),
            source,
        };
        let (file, meta) = open_regular(path)?;
        if meta.len() == 0 {
            return Err(LoadError::Empty {
                path: path.to_path_buf(),
            });
        }
        // SAFETY: the map is read-only. Another process truncating the file while we read
        // it would fault (SIGBUS), the usual caveat of every mmap-based model loader.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(open_err)?;
        // Only the protobuf framing is read, a few bytes per tensor: tell the kernel not
        // to read around each touched page (with an 8 MB read-ahead that alone maps half
        // of a large model).
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        let mut proto = decode(Bytes::from_owner(map), path)?;
        let graph = proto.graph.take().ok_or_else(|| LoadError::NoGraph {
            path: path.to_path_buf(),
        })?;
        Ok(OnnxFile {
            path: path.to_path_buf(),
            file_bytes: meta.len(),
            proto,
            graph,
        })
    }

    /// The main graph.
    pub fn graph(&self) -> &GraphProto {
        &self.graph
    }

    /// Version of the default ("" / "ai.onnx") operator set.
    pub fn default_opset(&self) -> i64 {
        self.proto
            .opset_import
            .iter()
            .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
            .map(|o| o.version)
            .unwrap_or(1)
    }
}

/// Decodes a model from bytes (zero-copy for `raw_data` when `bytes` is backed by a map).
pub fn decode(bytes: Bytes, path: &Path) -> Result<ModelProto, LoadError> {
    // `Message::decode` hands prost a `&mut Bytes`, and `impl Buf for &mut T` does not
    // forward `copy_to_bytes`, so every `raw_data` would be copied. `merge` with the
    // `Bytes` itself keeps each `raw_data` a slice of the map.
    let mut proto = ModelProto::default();
    proto.merge(bytes).map_err(|e| LoadError::Decode {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    // Anything that is not an ONNX model but happens to parse as protobuf (or is empty of
    // the fields we know) has no graph or no IR version.
    if proto.graph.is_none() || proto.ir_version <= 0 {
        return Err(LoadError::NoGraph {
            path: path.to_path_buf(),
        });
    }
    Ok(proto)
}
