//! The bottom of the dependency graph: files written atomically, hashes, the project's
//! folders, the stop flag (Ctrl-C), a reproducible random stream, number formatting, and the
//! shape of a rejected setting (`setting.rs`) that every layer's error uses.
//! Nothing here knows about models, backends or reports; every other module may use it.

pub mod build_info;
pub mod cuda_pin;
pub mod fmt;
pub mod fs;
pub mod isolate;
pub mod limits;
pub mod paths;
pub mod progress;
pub mod rng;
pub mod setting;
pub mod signal;

use std::path::PathBuf;

/// What failed at the bottom layer: a file that could not be written or read, a folder that
/// could not be made. Each names the path and the system's reason.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot write '{}': {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
    #[error("cannot read '{}': {err}", path.display())]
    Read { path: PathBuf, err: std::io::Error },
    #[error("cannot create '{}': {err}", path.display())]
    CreateDir { path: PathBuf, err: std::io::Error },
    /// A tensor whose element count overflows.
    #[error("{what}: the shape {dims:?} has more elements than can be counted")]
    Uncountable { what: String, dims: Vec<usize> },
    /// A tensor whose byte count overflows.
    #[error("{what}: {elements} elements of {elem_bytes} bytes overflow a byte count")]
    ByteOverflow {
        what: String,
        elements: u64,
        elem_bytes: usize,
    },
    /// A tensor larger than the memory budget (`limits.rs`).
    #[error(
        "{what}: shape {dims:?} needs {bytes} bytes, more than the {limit} bytes one tensor may take here (half the available memory; ACCEVAL_MAX_TENSOR_BYTES sets it): use a smaller shape"
    )]
    OverBudget {
        what: String,
        dims: Vec<usize>,
        bytes: u64,
        limit: u64,
    },
    /// CUDA device `device` beyond the `count` devices `CUDA_VISIBLE_DEVICES` lists.
    #[error("CUDA device {device}: CUDA_VISIBLE_DEVICES={list} makes {count} visible")]
    NotVisible {
        device: u32,
        list: String,
        count: usize,
    },
    /// `CUDA_VISIBLE_DEVICES` names a device by UUID or MIG instance, not by index.
    #[error(
        "CUDA_VISIBLE_DEVICES={list} names GPU {device} as '{entry}' (a UUID or MIG instance); acceval matches CUDA devices to NVML's by index: set it to indices (e.g. 0,1)"
    )]
    NotAnIndex {
        device: u32,
        list: String,
        entry: String,
    },
    /// `cuda@N` beyond the devices `CUDA_VISIBLE_DEVICES` lists.
    #[error(
        "cuda@{device}: CUDA_VISIBLE_DEVICES={list} makes {count} device(s) visible, numbered from 0: use cuda@0..cuda@{}",
        count.saturating_sub(1)
    )]
    PinNotVisible {
        device: usize,
        list: String,
        count: usize,
    },
    /// More than one tract-cuda device on one command line.
    #[error(
        "tract's CUDA runtime uses one GPU per process, and the command line names {}: run one acceval per GPU",
        devices.iter().map(|d| format!("cuda@{d}")).collect::<Vec<_>>().join(", ")
    )]
    ManyCudaDevices { devices: Vec<usize> },
}

impl Error {
    /// `Write` of `path`, for `map_err`.
    pub fn write(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
        move |err| Error::Write {
            path: path.to_path_buf(),
            err,
        }
    }
    /// `Read` of `path`, for `map_err`.
    pub fn read(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
        move |err| Error::Read {
            path: path.to_path_buf(),
            err,
        }
    }
    /// `CreateDir` of `path`, for `map_err`.
    pub fn create_dir(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
        move |err| Error::CreateDir {
            path: path.to_path_buf(),
            err,
        }
    }
}

/// `From<$inner>` for an error enum whose variant `$variant` holds `$inner` boxed: the box
/// keeps the enum small (a lower layer's error can be large), and `?` still converts.
macro_rules! boxed_from {
    ($outer:ty, $variant:ident, $inner:ty) => {
        impl From<$inner> for $outer {
            fn from(e: $inner) -> Self {
                Self::$variant(Box::new(e))
            }
        }
    };
}
pub(crate) use boxed_from;

/// `std::fs::read`, with an error that names the file.
pub fn read(path: &std::path::Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(Error::read(path))
}

/// `std::fs::create_dir_all`, with an error that names the folder.
pub fn create_dir_all(path: &std::path::Path) -> Result<(), Error> {
    std::fs::create_dir_all(path).map_err(Error::create_dir(path))
}
