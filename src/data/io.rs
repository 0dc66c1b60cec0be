//! Reading and writing tensors: NumPy `.npy`/`.npz` (via `ndarray-npy`) and serialised ONNX
//! `TensorProto` files (`.pb`, the format of ONNX test-data sets).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use ndarray::ArrayD;
use ndarray_npy::{NpzReader, NpzWriter, ReadNpyExt};
use prost::Message;

use crate::model::onnx::{DataType, TensorProto};
use crate::model::tensor::{HostTensor, SUPPORTED_IO_TYPES, TensorData};

#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("cannot read '{path}': {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "'{path}' is not a readable .npy array of a supported type ({SUPPORTED_IO_TYPES}): {reason}"
    )]
    Npy { path: PathBuf, reason: String },
    #[error("'{path}' is not a readable .npz archive: {reason}")]
    Npz { path: PathBuf, reason: String },
    #[error("'{path}' has no array named '{name}'; it holds: {names}")]
    NpzMissing {
        path: PathBuf,
        name: String,
        names: String,
    },
    #[error("'{path}' is not a serialised ONNX TensorProto: {reason}")]
    Pb { path: PathBuf, reason: String },
    #[error("cannot write '{path}': {reason}")]
    Write { path: PathBuf, reason: String },
}

fn open(path: &Path) -> Result<File, IoError> {
    File::open(path).map_err(|source| IoError::Open {
        path: path.to_path_buf(),
        source,
    })
}

/// The shape and element size an `.npy` header declares, and the header's length.
fn npy_header(bytes: &[u8]) -> Result<(Vec<usize>, usize, usize), String> {
    let rest = bytes
        .strip_prefix(b"\x93NUMPY")
        .ok_or("no .npy magic (\\x93NUMPY)")?;
    let (major, after) = rest.split_first().ok_or("truncated header")?;
    let after = after.get(1..).ok_or("truncated header")?;
    let (len, start) = match major {
        1 => (
            u16::from_le_bytes([
                *after.first().ok_or("truncated")?,
                *after.get(1).ok_or("truncated")?,
            ]) as usize,
            10usize,
        ),
        2 | 3 => {
            let b = after.get(..4).ok_or("truncated header")?;
            (
                u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
                12usize,
            )
        }
        v => return Err(format!("unknown .npy version {v}")),
    };
    let text = bytes
        .get(start..start.checked_add(len).ok_or("header length overflows")?)
        .ok_or("the header is longer than the file")?;
    let text = std::str::from_utf8(text).map_err(|_| "the header is not text")?;
    let descr = text
        .split("'descr':")
        .nth(1)
        .and_then(|s| s.split('\'').nth(1))
        .ok_or("the header names no 'descr'")?;
    let elem: usize = descr
        .trim_start_matches(['<', '>', '|', '='])
        .get(1..)
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| format!("element type '{descr}' has no size"))?;
    let shape = text
        .split("'shape':")
        .nth(1)
        .and_then(|s| s.split('(').nth(1))
        .and_then(|s| s.split(')').next())
        .ok_or("the header names no 'shape'")?;
    let dims: Vec<usize> = shape
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            d.parse::<usize>()
                .map_err(|_| format!("dimension '{d}' is not a count"))
        })
        .collect::<Result<_, _>>()?;
    Ok((dims, elem, start + len))
}

/// Checks that the array an `.npy` header declares fits in `available` bytes of data (and in
/// the memory budget) before anything is allocated for it.
fn check_npy(head: &[u8], available: u64, what: &str) -> Result<(), String> {
    let (dims, elem, header) = npy_header(head)?;
    let need = crate::util::limits::tensor_bytes(what, &dims, elem).map_err(|e| e.to_string())?;
    let have = available.saturating_sub(header as u64);
    if need > have {
        return Err(format!(
            "the header declares shape {dims:?} ({need} bytes of data) but the file holds {have}: truncated or altered"
        ));
    }
    Ok(())
}

/// Reads a `.npy` file, whatever its (supported) element type.
pub fn read_npy(path: &Path) -> Result<TensorData, IoError> {
    {
        use std::io::Read;
        let mut head = Vec::new();
        let f = open(path)?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        f.take(1 << 16)
            .read_to_end(&mut head)
            .map_err(|e| IoError::Open {
                path: path.to_path_buf(),
                source: e,
            })?;
        check_npy(&head, len, &path.display().to_string()).map_err(|reason| IoError::Npy {
            path: path.to_path_buf(),
            reason,
        })?;
    }
    macro_rules! try_type {
        ($t:ty, $v:ident) => {
            if let Ok(a) = ArrayD::<$t>::read_npy(BufReader::new(open(path)?)) {
                return Ok(TensorData::$v(a));
            }
        };
    }
    crate::for_each_io_type!(try_type);
    let reason = match ArrayD::<f32>::read_npy(BufReader::new(open(path)?)) {
        Err(e) => e.to_string(),
        Ok(_) => "unknown".into(),
    };
    Err(IoError::Npy {
        path: path.to_path_buf(),
        reason,
    })
}

/// Checks every member of an `.npz` archive: its header against its declared size and the
/// memory budget, so reading it allocates only what the file holds.
fn check_npz(path: &Path) -> Result<(), IoError> {
    use std::io::Read;
    let err = |reason: String| IoError::Npz {
        path: path.to_path_buf(),
        reason,
    };
    let mut z = zip::ZipArchive::new(open(path)?).map_err(|e| err(e.to_string()))?;
    for i in 0..z.len() {
        let mut m = z.by_index(i).map_err(|e| err(e.to_string()))?;
        let name = m.name().to_string();
        let size = m.size();
        let mut head = Vec::new();
        (&mut m)
            .take(1 << 16)
            .read_to_end(&mut head)
            .map_err(|e| err(format!("member '{name}': {e}")))?;
        check_npy(&head, size, &format!("{}[{name}]", path.display()))
            .map_err(|r| err(format!("member '{name}': {r}")))?;
    }
    Ok(())
}

/// Names of the arrays in an `.npz` archive.
pub fn npz_names(path: &Path) -> Result<Vec<String>, IoError> {
    check_npz(path)?;
    let mut r = NpzReader::new(open(path)?).map_err(|e| IoError::Npz {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let names = r.names().map_err(|e| IoError::Npz {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    // numpy stores `name` as `name.npy`; callers use the bare name.
    Ok(names
        .into_iter()
        .map(|n| n.strip_suffix(".npy").map(str::to_string).unwrap_or(n))
        .collect())
}

/// Reads array `name` from an `.npz` archive.
pub fn read_npz(path: &Path, name: &str) -> Result<TensorData, IoError> {
    let names = npz_names(path)?;
    if !names.iter().any(|n| n == name) {
        return Err(IoError::NpzMissing {
            path: path.to_path_buf(),
            name: name.to_string(),
            names: names.join(", "),
        });
    }
    macro_rules! try_type {
        ($t:ty, $v:ident) => {
            let mut r = NpzReader::new(open(path)?).map_err(|e| IoError::Npz {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
            if let Ok(a) = r.by_name::<ndarray::OwnedRepr<$t>, ndarray::IxDyn>(name) {
                return Ok(TensorData::$v(a));
            }
        };
    }
    crate::for_each_io_type!(try_type);
    Err(IoError::Npz {
        path: path.to_path_buf(),
        reason: format!("array '{name}' is not of a supported type ({SUPPORTED_IO_TYPES})"),
    })
}

/// Writes tensors into an `.npz` archive atomically (temporary file, then rename).
pub fn write_npz(path: &Path, tensors: &[HostTensor]) -> Result<(), IoError> {
    let err = |reason: String| IoError::Write {
        path: path.to_path_buf(),
        reason,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp.{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let written = (|| {
        let f = File::create(&tmp).map_err(|e| err(e.to_string()))?;
        let mut w = NpzWriter::new(f);
        for t in tensors {
            crate::with_array!(&t.data, a => w.add_array(t.name.as_str(), a))
                .map_err(|e| err(e.to_string()))?;
        }
        let f = w.finish().map_err(|e| err(e.to_string()))?;
        f.sync_all().map_err(|e| err(e.to_string()))?;
        std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))
    })();
    if written.is_err() {
        // A full disk or a refused rename leaves nothing behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Converts a decoded `TensorProto` into host data (raw or typed fields).
fn tensor_from_proto(t: &TensorProto) -> Result<TensorData, String> {
    let shape: Vec<usize> = t.dims.iter().map(|&d| d.max(0) as usize).collect();
    let n: usize = shape.iter().product();
    let raw = &t.raw_data[..];
    macro_rules! from_raw {
        ($t:ty, $size:expr, $v:ident) => {{
            let vals: Vec<$t> = if !raw.is_empty() {
                raw.chunks_exact($size)
                    .map(|c| <$t>::from_le_bytes(c.try_into().expect("chunk size")))
                    .collect()
            } else {
                return Err("typed data field".into());
            };
            TensorData::$v(ArrayD::from_shape_vec(shape.clone(), vals).map_err(|e| e.to_string())?)
        }};
    }
    let dt = t.dtype();
    let data = if !raw.is_empty() {
        match dt {
            DataType::FLOAT => from_raw!(f32, 4, F32),
            DataType::DOUBLE => from_raw!(f64, 8, F64),
            DataType::INT64 => from_raw!(i64, 8, I64),
            DataType::INT32 => from_raw!(i32, 4, I32),
            DataType::INT8 => from_raw!(i8, 1, I8),
            DataType::UINT8 => from_raw!(u8, 1, U8),
            DataType::BOOL => TensorData::Bool(
                ArrayD::from_shape_vec(shape.clone(), raw.iter().map(|&b| b != 0).collect())
                    .map_err(|e| e.to_string())?,
            ),
            other => return Err(format!("element type {} is not supported", other.name())),
        }
    } else {
        let arr = |v: Vec<_>| ArrayD::from_shape_vec(shape.clone(), v).map_err(|e| e.to_string());
        match dt {
            DataType::FLOAT => TensorData::F32(arr(t.float_data.clone())?),
            DataType::DOUBLE => TensorData::F64(
                ArrayD::from_shape_vec(shape.clone(), t.double_data.clone())
                    .map_err(|e| e.to_string())?,
            ),
            DataType::INT64 => TensorData::I64(
                ArrayD::from_shape_vec(shape.clone(), t.int64_data.clone())
                    .map_err(|e| e.to_string())?,
            ),
            DataType::INT32 => TensorData::I32(
                ArrayD::from_shape_vec(shape.clone(), t.int32_data.clone())
                    .map_err(|e| e.to_string())?,
            ),
            DataType::INT8 => TensorData::I8(
                ArrayD::from_shape_vec(
                    shape.clone(),
                    t.int32_data.iter().map(|&v| v as i8).collect(),
                )
                .map_err(|e| e.to_string())?,
            ),
            DataType::UINT8 => TensorData::U8(
                ArrayD::from_shape_vec(
                    shape.clone(),
                    t.int32_data.iter().map(|&v| v as u8).collect(),
                )
                .map_err(|e| e.to_string())?,
            ),
            DataType::BOOL => TensorData::Bool(
                ArrayD::from_shape_vec(
                    shape.clone(),
                    t.int32_data.iter().map(|&v| v != 0).collect(),
                )
                .map_err(|e| e.to_string())?,
            ),
            other => return Err(format!("element type {} is not supported", other.name())),
        }
    };
    if data.len() != n {
        return Err(format!("{} values for shape {:?}", data.len(), shape));
    }
    Ok(data)
}

/// Reads a serialised `TensorProto` (`input_0.pb`), returning its name and data.
pub fn read_pb(path: &Path) -> Result<(String, TensorData), IoError> {
    let bytes = std::fs::read(path).map_err(|source| IoError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let err = |reason: String| IoError::Pb {
        path: path.to_path_buf(),
        reason,
    };
    let mut t = TensorProto::default();
    t.merge(Bytes::from(bytes))
        .map_err(|e| err(e.to_string()))?;
    let data = tensor_from_proto(&t).map_err(err)?;
    Ok((t.name.clone(), data))
}

/// Converts host data into a `TensorProto` (little-endian `raw_data`, as ONNX's
/// `numpy_helper.from_array` writes it).
pub fn tensor_to_proto(name: &str, data: &TensorData) -> TensorProto {
    let mut raw: Vec<u8> = Vec::with_capacity(data.len() * 8);
    match data {
        TensorData::F32(a) => a
            .iter()
            .for_each(|v| raw.extend_from_slice(&v.to_le_bytes())),
        TensorData::F64(a) => a
            .iter()
            .for_each(|v| raw.extend_from_slice(&v.to_le_bytes())),
        TensorData::I64(a) => a
            .iter()
            .for_each(|v| raw.extend_from_slice(&v.to_le_bytes())),
        TensorData::I32(a) => a
            .iter()
            .for_each(|v| raw.extend_from_slice(&v.to_le_bytes())),
        TensorData::I8(a) => a
            .iter()
            .for_each(|v| raw.extend_from_slice(&v.to_le_bytes())),
        TensorData::U8(a) => raw.extend(a.iter()),
        TensorData::Bool(a) => raw.extend(a.iter().map(|&b| b as u8)),
    }
    TensorProto {
        name: name.to_string(),
        data_type: data.dtype().0,
        dims: data.shape().iter().map(|&d| d as i64).collect(),
        raw_data: Bytes::from(raw),
        ..Default::default()
    }
}

/// Writes a serialised `TensorProto` (`output_0.pb`) atomically; returns its bytes.
pub fn write_pb(path: &Path, name: &str, data: &TensorData) -> Result<Vec<u8>, IoError> {
    let bytes = tensor_to_proto(name, data).encode_to_vec();
    crate::util::fs::write_atomic(path, &bytes).map_err(|e| IoError::Write {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray_npy::WriteNpyExt;

    #[test]
    fn npy_and_npz_round_trip_all_types() {
        let dir = tempfile::tempdir().unwrap();
        let tensors = vec![
            HostTensor {
                name: "f".into(),
                data: TensorData::F32(
                    ArrayD::from_shape_vec(vec![2, 2], vec![1.0, -2.5, 3.0, 4.0]).unwrap(),
                ),
            },
            HostTensor {
                name: "i".into(),
                data: TensorData::I64(ArrayD::from_shape_vec(vec![3], vec![1, -2, 3]).unwrap()),
            },
            HostTensor {
                name: "b".into(),
                data: TensorData::Bool(ArrayD::from_shape_vec(vec![2], vec![true, false]).unwrap()),
            },
        ];
        let p = dir.path().join("o.npz");
        write_npz(&p, &tensors).unwrap();
        assert_eq!(npz_names(&p).unwrap(), vec!["f", "i", "b"]);
        for t in &tensors {
            assert_eq!(read_npz(&p, &t.name).unwrap(), t.data);
        }
        assert!(matches!(
            read_npz(&p, "zz"),
            Err(IoError::NpzMissing { .. })
        ));
        let q = dir.path().join("a.npy");
        let a = ArrayD::<u8>::from_shape_vec(vec![4], vec![1, 2, 3, 4]).unwrap();
        a.write_npy(File::create(&q).unwrap()).unwrap();
        assert_eq!(read_npy(&q).unwrap(), TensorData::U8(a));
        std::fs::write(&q, b"garbage").unwrap();
        assert!(matches!(read_npy(&q), Err(IoError::Npy { .. })));
    }

    #[test]
    fn pb_raw_and_typed() {
        let raw = crate::model::build::tensor_f32("x", &[2, 3], 1);
        let d = tensor_from_proto(&raw).unwrap();
        assert_eq!(d.shape(), &[2, 3]);
        let typed = TensorProto {
            name: "y".into(),
            data_type: 7,
            dims: vec![2],
            int64_data: vec![5, -6],
            ..Default::default()
        };
        assert_eq!(
            tensor_from_proto(&typed).unwrap(),
            TensorData::I64(ArrayD::from_shape_vec(vec![2], vec![5, -6]).unwrap())
        );
        let bad = TensorProto {
            data_type: 1,
            dims: vec![3],
            float_data: vec![1.0],
            ..Default::default()
        };
        assert!(tensor_from_proto(&bad).is_err());
    }

    #[test]
    fn pb_write_read_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        for (k, d) in [
            TensorData::F32(ArrayD::from_shape_vec(vec![1, 3], vec![1.5, -0.0, 3e-39]).unwrap()),
            TensorData::I64(ArrayD::from_shape_vec(vec![2], vec![i64::MIN, 7]).unwrap()),
            TensorData::Bool(ArrayD::from_shape_vec(vec![2, 1], vec![true, false]).unwrap()),
            TensorData::I8(ArrayD::from_shape_vec(vec![], vec![-3]).unwrap()),
        ]
        .into_iter()
        .enumerate()
        {
            let p = dir.path().join(format!("t{k}.pb"));
            write_pb(&p, "t", &d).unwrap();
            assert_eq!(read_pb(&p).unwrap(), ("t".to_string(), d));
        }
        // A truncated file names itself.
        let p = dir.path().join("t0.pb");
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() - 3]).unwrap();
        let e = read_pb(&p).unwrap_err().to_string();
        assert!(e.contains("t0.pb"), "{e}");
    }
}
