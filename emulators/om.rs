//! The emulated `.om` container, written by the stand-in `atc` and loaded by the emulated
//! `aclmdlLoadFromFile`. A real `.om` is Huawei's proprietary format, compiled for one SoC;
//! this one is acceval's own: a magic, a JSON header that says what ATC was asked for and
//! what the model's inputs and outputs are, and the ONNX model itself, which the emulated
//! device runs on the host CPU. acceval never reads it: to acceval an `.om` is opaque.
//!
//! Layout: `ACCEVAL-EMULATED-OM\0` (20 bytes), the header's length (u32 LE), the header
//! (JSON), the ONNX model's length (u64 LE), the ONNX model.

#![allow(dead_code)]

use serde::{Deserialize, Serialize};

pub const MAGIC: &[u8; 20] = b"ACCEVAL-EMULATED-OM\0";
pub const FORMAT: &str = "acceval-emulated-om/1";

/// One input or output of the compiled model.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Io {
    pub name: String,
    /// ACL's `aclDataType` code (0 FLOAT, 1 FLOAT16, 2 INT8, 3 INT32, 4 UINT8, 9 INT64, ...).
    pub acl_dtype: i32,
    pub dims: Vec<i64>,
    /// Bytes of one tensor at these dims.
    pub bytes: u64,
}

/// What ATC was asked for, and the model's interface.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Header {
    pub format: String,
    /// `--soc_version`: a model compiled for one SoC does not load on another (507008).
    pub soc_version: String,
    /// `--precision_mode_v2` or `--precision_mode` as given, and what the emulator did.
    pub precision_mode: String,
    pub precision_effect: String,
    /// FP32 inputs and outputs rounded to FP16 on the device (ATC's fp16 modes).
    pub fp16_io: bool,
    /// SHA-256 of the ONNX file converted (before any rewrite).
    pub source_sha256: String,
    pub inputs: Vec<Io>,
    pub outputs: Vec<Io>,
    /// Operators the emulated compiler placed on the AI CPU instead of the AI Core.
    pub aicpu_ops: Vec<String>,
}

/// `aclDataType` of an ONNX element type name as acceval's tensors print it.
pub fn acl_dtype(onnx: &str) -> Option<(i32, u64)> {
    Some(match onnx {
        "FLOAT" | "FP32" => (0, 4),
        "FLOAT16" | "FP16" => (1, 2),
        "INT8" => (2, 1),
        "INT32" => (3, 4),
        "UINT8" => (4, 1),
        "INT16" => (6, 2),
        "UINT16" => (7, 2),
        "UINT32" => (8, 4),
        "INT64" => (9, 8),
        "UINT64" => (10, 8),
        "DOUBLE" | "FP64" => (11, 8),
        "BOOL" => (12, 1),
        _ => return None,
    })
}

pub fn write(header: &Header, onnx: &[u8]) -> Vec<u8> {
    let h = serde_json::to_vec(header).unwrap_or_default();
    let mut out = Vec::with_capacity(MAGIC.len() + 12 + h.len() + onnx.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(h.len() as u32).to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(&(onnx.len() as u64).to_le_bytes());
    out.extend_from_slice(onnx);
    out
}

/// Why a file is not an emulated `.om`.
#[derive(Debug)]
pub enum ReadError {
    /// Not this format at all (a real `.om`, an ONNX file, garbage).
    NotOm,
    /// The right magic, a broken body.
    Corrupt(String),
}

pub fn read(bytes: &[u8]) -> Result<(Header, &[u8]), ReadError> {
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ReadError::NotOm)?;
    let take = |b: &[u8], n: usize| -> Result<(usize, usize), ReadError> {
        (b.len() >= n).then_some((0, n)).ok_or_else(|| {
            ReadError::Corrupt(format!("truncated: {} bytes left, {n} needed", b.len()))
        })
    };
    take(rest, 4)?;
    let hlen = u32::from_le_bytes(rest[..4].try_into().unwrap_or_default()) as usize;
    let rest = &rest[4..];
    take(rest, hlen + 8)?;
    let header: Header = serde_json::from_slice(&rest[..hlen])
        .map_err(|e| ReadError::Corrupt(format!("header: {e}")))?;
    if header.format != FORMAT {
        return Err(ReadError::Corrupt(format!(
            "format '{}' (this emulator reads {FORMAT})",
            header.format
        )));
    }
    let rest = &rest[hlen..];
    let olen = u64::from_le_bytes(rest[..8].try_into().unwrap_or_default()) as usize;
    let rest = &rest[8..];
    if rest.len() != olen {
        return Err(ReadError::Corrupt(format!(
            "the ONNX model is {} bytes, the header says {olen}",
            rest.len()
        )));
    }
    Ok((header, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let h = Header {
            format: FORMAT.into(),
            soc_version: "Ascend910B3".into(),
            precision_mode: "origin".into(),
            precision_effect: "none".into(),
            fp16_io: false,
            source_sha256: "00".into(),
            inputs: vec![Io {
                name: "x".into(),
                acl_dtype: 0,
                dims: vec![1, 3],
                bytes: 12,
            }],
            outputs: vec![],
            aicpu_ops: vec![],
        };
        let b = write(&h, b"onnx");
        let (h2, onnx) = read(&b).unwrap();
        assert_eq!((h2, onnx), (h, b"onnx".as_slice()));
        assert!(matches!(read(b"garbage"), Err(ReadError::NotOm)));
        assert!(matches!(
            read(&b[..b.len() - 1]),
            Err(ReadError::Corrupt(_))
        ));
    }
}
