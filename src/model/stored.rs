//! Stored tensors (initializers and `Constant` values): their element counts, whether the
//! data behind them matches their dims, where that data lives, and their small values.
//!
//! A file can declare a 10^12-element tensor in 77 bytes; the counts of Table 1 are only
//! worth something when the data is there. [`TensorProto::check`] requires non-negative
//! dims whose product fits 64 bits, and data of exactly the declared size: `raw_data`
//! bytes, the typed field's entries, or an external file's region. External data must be a
//! regular file inside the model's folder (no absolute path, no `..`, no link leading out);
//! a refusal says nothing about the target. Files are inspected with `metadata` only,
//! never opened, so a FIFO cannot block.

use std::path::{Component, Path, PathBuf};

use super::onnx::{DataType, LoadError, NodeProto, TensorProto};

/// Where a tensor's data lives.
#[derive(Debug, Clone)]
pub enum Storage {
    /// Inside the model file (`raw_data` or a typed field).
    Inline,
    /// In an external file.
    External { file: PathBuf },
}

/// Bytes that `n` elements of type `t` occupy when stored (sub-byte types are packed);
/// `None` for strings, unknown types, or a count whose size does not fit 64 bits.
pub fn stored_bytes(t: DataType, n: u64) -> Option<u64> {
    let bits = t.bits()?;
    Some(n.checked_mul(bits)?.div_ceil(8))
}

/// Entries of the typed field that holds `n` elements of type `t`, and that field's name.
fn typed_entries(t: &TensorProto, n: u64) -> Option<(u64, u64, &'static str)> {
    let packed = |per: u64| n.div_ceil(per);
    Some(match t.data_type {
        1 => (t.float_data.len() as u64, n, "float_data"),
        14 => (t.float_data.len() as u64, n.checked_mul(2)?, "float_data"),
        2..=6 | 9 | 10 | 16..=20 | 24 => (t.int32_data.len() as u64, n, "int32_data"),
        21..=23 => (t.int32_data.len() as u64, packed(2), "int32_data"),
        25 | 26 => (t.int32_data.len() as u64, packed(4), "int32_data"),
        7 => (t.int64_data.len() as u64, n, "int64_data"),
        8 => (t.string_data.len() as u64, n, "string_data"),
        11 => (t.double_data.len() as u64, n, "double_data"),
        15 => (t.double_data.len() as u64, n.checked_mul(2)?, "double_data"),
        12 | 13 => (t.uint64_data.len() as u64, n, "uint64_data"),
        _ => return None,
    })
}

fn dims_str(d: &[i64]) -> String {
    format!("{d:?}")
}

impl TensorProto {
    /// Number of elements (product of dims; 1 for a scalar); `None` when a dim is negative
    /// or the product does not fit 64 bits.
    pub fn numel(&self) -> Option<u64> {
        super::shape::numel(&self.dims)
    }

    pub fn dtype(&self) -> DataType {
        DataType(self.data_type)
    }

    pub fn is_external(&self) -> bool {
        self.data_location == 1
    }

    fn external_entry(&self, key: &str) -> Option<&str> {
        self.external_data
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.as_str())
    }

    /// Checks the dims and that the data matches them; returns where the data lives.
    pub fn check(&self, model_path: &Path) -> Result<Storage, LoadError> {
        let bad = |problem: String| LoadError::Tensor {
            model: model_path.to_path_buf(),
            tensor: self.name.clone(),
            problem,
        };
        if let Some(d) = self.dims.iter().find(|&&d| d < 0) {
            return Err(bad(format!(
                "has a negative dim {d} (dims {})",
                dims_str(&self.dims)
            )));
        }
        let n = self.numel().ok_or_else(|| {
            bad(format!(
                "declares dims {}: more elements than a 64-bit count holds",
                dims_str(&self.dims)
            ))
        })?;
        let t = self.dtype();
        let bytes = match t.bits() {
            Some(_) => Some(stored_bytes(t, n).ok_or_else(|| {
                bad(format!(
                    "declares {n} elements of {}: more bytes than a 64-bit count holds",
                    t.name()
                ))
            })?),
            None if t == DataType::STRING => None,
            None => {
                return Err(bad(format!(
                    "has data type {}, which acceval does not know (ONNX defines 1..=26)",
                    self.data_type
                )));
            }
        };
        if self.is_external() {
            return self.check_external(model_path, bytes.unwrap_or(0));
        }
        self.check_inline(n, bytes).map_err(bad)?;
        Ok(Storage::Inline)
    }

    /// Inline data: `raw_data` of exactly `bytes`, or a typed field of the right length.
    fn check_inline(&self, n: u64, bytes: Option<u64>) -> Result<(), String> {
        let declares = || format!("declares dims {} ({n} elements", dims_str(&self.dims));
        if !self.raw_data.is_empty() {
            return match bytes {
                Some(b) if b == self.raw_data.len() as u64 => Ok(()),
                Some(b) => Err(format!(
                    "{}, {b} bytes of {}) but stores {} bytes of raw_data",
                    declares(),
                    self.dtype().name(),
                    self.raw_data.len()
                )),
                None => Err("is a STRING tensor with raw_data (strings go in string_data)".into()),
            };
        }
        let Some((have, need, field)) = typed_entries(self, n) else {
            return Err(format!(
                "has data type {}, which acceval does not know",
                self.data_type
            ));
        };
        if have == need {
            return Ok(());
        }
        if have == 0 {
            return Err(format!("{}) but stores no data", declares()));
        }
        Err(format!(
            "{}) but stores {have} entries in {field} (it needs {need})",
            declares()
        ))
    }

    /// External data: a regular file inside the model's folder, long enough for the
    /// tensor's bytes at its offset.
    fn check_external(&self, model_path: &Path, need: u64) -> Result<Storage, LoadError> {
        let err = |file: PathBuf, problem: String| LoadError::ExternalData {
            model: model_path.to_path_buf(),
            tensor: self.name.clone(),
            file,
            problem,
        };
        let Some(location) = self.external_entry("location") else {
            return Err(err(
                PathBuf::from("?"),
                "is not named (no 'location' entry)".into(),
            ));
        };
        let dir = model_path.parent().unwrap_or_else(|| Path::new("."));
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let rel = Path::new(location);
        let outside = || {
            err(
                rel.to_path_buf(),
                "is outside the model's folder (an absolute path, '..', or a link leading out of it); external data must be a file inside the folder that holds the model".into(),
            )
        };
        if location.is_empty()
            || rel
                .components()
                .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(outside());
        }
        let file = dir.join(rel);
        let real = resolve_inside(dir, &file).map_err(|why| match why {
            Resolve::Outside => outside(),
            Resolve::Missing(e) => err(file.clone(), format!("cannot be read ({e})")),
        })?;
        let meta = std::fs::metadata(&real)
            .map_err(|e| err(file.clone(), format!("cannot be read ({e})")))?;
        if !meta.is_file() {
            return Err(err(
                file,
                "is not a regular file (a folder, FIFO, socket or device)".into(),
            ));
        }
        self.check_region(meta.len(), need)
            .map_err(|p| err(file.clone(), p))?;
        Ok(Storage::External { file })
    }

    /// The tensor's `offset`/`length` against a file of `len` bytes.
    fn check_region(&self, len: u64, need: u64) -> Result<(), String> {
        let num = |key: &str| -> Result<Option<u64>, String> {
            match self.external_entry(key) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| format!("has an '{key}' of '{v}', which is not a byte count")),
            }
        };
        let offset = num("offset")?.unwrap_or(0);
        if let Some(l) = num("length")?
            && l != need
        {
            return Err(format!(
                "is given as {l} bytes, but the tensor's dims {} need {need}",
                dims_str(&self.dims)
            ));
        }
        match offset.checked_add(need) {
            Some(end) if end <= len => Ok(()),
            Some(end) => Err(format!(
                "is too short ({len} bytes; the tensor needs bytes {offset}..{end})"
            )),
            None => Err(format!(
                "is given at offset {offset}, where {need} more bytes would pass the largest file size"
            )),
        }
    }

    /// Values as i64 when the tensor is integer-typed, inline and small (for shape math).
    pub fn int_values(&self, max_elems: u64) -> Option<Vec<i64>> {
        let n = self.numel()?;
        if n > max_elems || self.is_external() {
            return None;
        }
        let t = self.dtype();
        let v: Vec<i64> = if !self.raw_data.is_empty() {
            let r = &self.raw_data[..];
            match t.0 {
                7 => r
                    .chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect(),
                6 => r
                    .chunks_exact(4)
                    .map(|c| i32::from_le_bytes(c.try_into().unwrap_or([0; 4])) as i64)
                    .collect(),
                3 => r.iter().map(|&b| b as i8 as i64).collect(),
                2 | 9 => r.iter().map(|&b| b as i64).collect(),
                _ => return None,
            }
        } else {
            match t.0 {
                7 => self.int64_data.clone(),
                2..=6 | 9 => self.int32_data.iter().map(|&x| x as i64).collect(),
                13 => self.uint64_data.iter().map(|&x| x as i64).collect(),
                _ => return None,
            }
        };
        (v.len() as u64 == n).then_some(v)
    }

    /// Values as f64 when the tensor is float-typed (FP32/FP64), inline and small.
    pub fn float_values(&self, max_elems: u64) -> Option<Vec<f64>> {
        let n = self.numel()?;
        if n > max_elems || self.is_external() {
            return None;
        }
        let v: Vec<f64> = match (self.dtype().0, self.raw_data.is_empty()) {
            (1, false) => self
                .raw_data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4])) as f64)
                .collect(),
            (11, false) => self
                .raw_data
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect(),
            (1, true) => self.float_data.iter().map(|&x| x as f64).collect(),
            (11, true) => self.double_data.clone(),
            _ => return None,
        };
        (v.len() as u64 == n).then_some(v)
    }
}

/// Why an external file cannot be used.
enum Resolve {
    /// It, or a link on the way to it, leads out of the model's folder (or cannot be
    /// resolved: a refusal must not tell a missing target from an existing one).
    Outside,
    /// It does not exist inside the folder.
    Missing(std::io::Error),
}

/// `file` (lexically inside `dir`) with every link resolved, when it stays inside `dir`.
fn resolve_inside(dir: &Path, file: &Path) -> Result<PathBuf, Resolve> {
    let root = std::fs::canonicalize(dir).map_err(Resolve::Missing)?;
    // The folder holding the file first: a linked sub-folder may lead out.
    let parent = file.parent().unwrap_or(dir);
    let real_parent = std::fs::canonicalize(parent).map_err(|_| Resolve::Outside)?;
    if !real_parent.starts_with(&root) {
        return Err(Resolve::Outside);
    }
    match std::fs::symlink_metadata(file) {
        Err(e) => Err(Resolve::Missing(e)),
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(file) {
            Ok(real) if real.starts_with(&root) => Ok(real),
            _ => Err(Resolve::Outside),
        },
        Ok(_) => Ok(file.to_path_buf()),
    }
}

impl NodeProto {
    /// The tensor a `Constant` node holds (named after its output), from whichever
    /// attribute carries it.
    pub fn constant_tensor(&self) -> Option<TensorProto> {
        let name = self.output.first()?.clone();
        for a in &self.attribute {
            let t = match a.name.as_str() {
                "value" => a.t.clone(),
                "sparse_value" => a.sparse_tensor.as_ref().and_then(|s| {
                    let mut v = s.values.clone()?;
                    v.dims = vec![i64::try_from(v.numel()?).ok()?];
                    Some(v)
                }),
                "value_float" => Some(TensorProto {
                    data_type: 1,
                    float_data: vec![a.f],
                    ..Default::default()
                }),
                "value_floats" => Some(TensorProto {
                    data_type: 1,
                    dims: vec![a.floats.len() as i64],
                    float_data: a.floats.clone(),
                    ..Default::default()
                }),
                "value_int" => Some(TensorProto {
                    data_type: 7,
                    int64_data: vec![a.i],
                    ..Default::default()
                }),
                "value_ints" => Some(TensorProto {
                    data_type: 7,
                    dims: vec![a.ints.len() as i64],
                    int64_data: a.ints.clone(),
                    ..Default::default()
                }),
                _ => None,
            };
            if let Some(mut t) = t {
                t.name = name;
                return Some(t);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(dt: i32, dims: &[i64]) -> TensorProto {
        TensorProto {
            name: "w".into(),
            data_type: dt,
            dims: dims.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn data_must_match_the_dims() {
        let p = Path::new("m.onnx");
        let mut x = t(1, &[2, 2]);
        x.float_data = vec![0.0; 4];
        assert!(x.check(p).is_ok());
        x.float_data.pop();
        assert!(x.check(p).unwrap_err().to_string().contains("3 entries"));
        // INT4 packs two per int32 entry: 5 elements need 3 entries.
        let mut x = t(22, &[5]);
        x.int32_data = vec![0; 3];
        assert!(x.check(p).is_ok());
        let mut x = t(1, &[3]);
        x.raw_data = bytes::Bytes::from(vec![0u8; 12]);
        assert!(x.check(p).is_ok());
        // A scalar needs one element; an empty tensor none.
        assert!(t(1, &[]).check(p).is_err());
        assert!(t(1, &[0, 5]).check(p).is_ok());
        assert_eq!(stored_bytes(DataType::FLOAT, u64::MAX), None);
    }

    #[test]
    fn external_locations_must_stay_inside_the_folder() {
        for loc in ["/etc/passwd", "../x.bin", "a/../../x.bin", ""] {
            let mut x = t(1, &[1]);
            x.data_location = 1;
            x.external_data = vec![super::super::onnx::StringStringEntryProto {
                key: "location".into(),
                value: loc.into(),
            }];
            let e = x.check(Path::new("/tmp/m.onnx")).unwrap_err().to_string();
            assert!(e.contains("outside the model's folder"), "{loc}: {e}");
        }
    }
}
