//! Host tensors: what goes into and comes out of every backend, independent of engine.
//!
//! One enum over the element types acceval exchanges with engines (the ONNX types models
//! use for inputs and outputs), each an `ndarray::ArrayD`. Conversions to and from tract
//! and ONNX Runtime values live in their backends.

use ndarray::ArrayD;

use crate::model::onnx::DataType;

/// The data of one tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
    I64(ArrayD<i64>),
    I32(ArrayD<i32>),
    I8(ArrayD<i8>),
    U8(ArrayD<u8>),
    Bool(ArrayD<bool>),
}

/// Runs `$body` with `$a` bound to the inner array, whatever its element type.
#[macro_export]
macro_rules! with_array {
    ($data:expr, $a:ident => $body:expr) => {
        match $data {
            $crate::model::tensor::TensorData::F32($a) => $body,
            $crate::model::tensor::TensorData::F64($a) => $body,
            $crate::model::tensor::TensorData::I64($a) => $body,
            $crate::model::tensor::TensorData::I32($a) => $body,
            $crate::model::tensor::TensorData::I8($a) => $body,
            $crate::model::tensor::TensorData::U8($a) => $body,
            $crate::model::tensor::TensorData::Bool($a) => $body,
        }
    };
}

/// Invokes `$m!(rust_type, Variant)` for every element type acceval exchanges, in the order
/// files are tried when their type is not known beforehand.
#[macro_export]
macro_rules! for_each_io_type {
    ($m:ident) => {
        $m!(f32, F32);
        $m!(f64, F64);
        $m!(i64, I64);
        $m!(i32, I32);
        $m!(i8, I8);
        $m!(u8, U8);
        $m!(bool, Bool);
    };
}

impl TensorData {
    pub fn dtype(&self) -> DataType {
        match self {
            TensorData::F32(_) => DataType::FLOAT,
            TensorData::F64(_) => DataType::DOUBLE,
            TensorData::I64(_) => DataType::INT64,
            TensorData::I32(_) => DataType::INT32,
            TensorData::I8(_) => DataType::INT8,
            TensorData::U8(_) => DataType::UINT8,
            TensorData::Bool(_) => DataType::BOOL,
        }
    }
    pub fn shape(&self) -> &[usize] {
        with_array!(self, a => a.shape())
    }
    pub fn len(&self) -> usize {
        with_array!(self, a => a.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The values as f64 (for comparisons and summaries), in logical order.
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            TensorData::F32(a) => a.iter().map(|&v| v as f64).collect(),
            TensorData::F64(a) => a.iter().copied().collect(),
            TensorData::I64(a) => a.iter().map(|&v| v as f64).collect(),
            TensorData::I32(a) => a.iter().map(|&v| v as f64).collect(),
            TensorData::I8(a) => a.iter().map(|&v| v as f64).collect(),
            TensorData::U8(a) => a.iter().map(|&v| v as f64).collect(),
            TensorData::Bool(a) => a.iter().map(|&v| v as u8 as f64).collect(),
        }
    }
    /// A deterministic tensor of `shape` and `dtype` from `seed`: floats uniform in
    /// [0, 1) (the range of normalised image pixels), integers in [0, 10), booleans fair.
    pub fn seeded(dtype: DataType, shape: &[usize], seed: u64) -> Option<TensorData> {
        let n: usize = shape.iter().product();
        let mut rng = crate::util::rng::SplitMix64(seed);
        let dim = ndarray::IxDyn(shape);
        let mut unit = || rng.unit();
        Some(match dtype {
            DataType::FLOAT => TensorData::F32(ArrayD::from_shape_fn(dim, |_| unit() as f32)),
            DataType::DOUBLE => TensorData::F64(ArrayD::from_shape_fn(dim, |_| unit())),
            DataType::INT64 => {
                TensorData::I64(ArrayD::from_shape_fn(dim, |_| (unit() * 10.0) as i64))
            }
            DataType::INT32 => {
                TensorData::I32(ArrayD::from_shape_fn(dim, |_| (unit() * 10.0) as i32))
            }
            DataType::INT8 => TensorData::I8(ArrayD::from_shape_fn(dim, |_| (unit() * 10.0) as i8)),
            DataType::UINT8 => {
                TensorData::U8(ArrayD::from_shape_fn(dim, |_| (unit() * 10.0) as u8))
            }
            DataType::BOOL => TensorData::Bool(ArrayD::from_shape_fn(dim, |_| unit() < 0.5)),
            _ => return None,
        })
        .filter(|t| t.len() == n)
    }
}

impl TensorData {
    /// The tensors joined along their first axis (dynamic batching); `None` when the types or
    /// the other dimensions differ.
    pub fn concat0(parts: &[&TensorData]) -> Option<TensorData> {
        macro_rules! cat {
            ($v:ident) => {{
                let views: Option<Vec<_>> = parts
                    .iter()
                    .map(|p| match p {
                        TensorData::$v(a) => Some(a.view()),
                        _ => None,
                    })
                    .collect();
                TensorData::$v(ndarray::concatenate(ndarray::Axis(0), &views?).ok()?)
            }};
        }
        Some(match parts.first()? {
            TensorData::F32(_) => cat!(F32),
            TensorData::F64(_) => cat!(F64),
            TensorData::I64(_) => cat!(I64),
            TensorData::I32(_) => cat!(I32),
            TensorData::I8(_) => cat!(I8),
            TensorData::U8(_) => cat!(U8),
            TensorData::Bool(_) => cat!(Bool),
        })
    }

    /// Rows `start..start + len` of the first axis.
    pub fn rows(&self, start: usize, len: usize) -> TensorData {
        let s = ndarray::Slice::from(start..start + len);
        match self {
            TensorData::F32(a) => TensorData::F32(a.slice_axis(ndarray::Axis(0), s).to_owned()),
            TensorData::F64(a) => TensorData::F64(a.slice_axis(ndarray::Axis(0), s).to_owned()),
            TensorData::I64(a) => TensorData::I64(a.slice_axis(ndarray::Axis(0), s).to_owned()),
            TensorData::I32(a) => TensorData::I32(a.slice_axis(ndarray::Axis(0), s).to_owned()),
            TensorData::I8(a) => TensorData::I8(a.slice_axis(ndarray::Axis(0), s).to_owned()),
            TensorData::U8(a) => TensorData::U8(a.slice_axis(ndarray::Axis(0), s).to_owned()),
            TensorData::Bool(a) => TensorData::Bool(a.slice_axis(ndarray::Axis(0), s).to_owned()),
        }
    }
}

/// A named tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTensor {
    pub name: String,
    pub data: TensorData,
}

/// Element types acceval can exchange with engines (for error messages).
pub const SUPPORTED_IO_TYPES: &str = "FP32, FP64, INT64, INT32, INT8, UINT8, BOOL";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_deterministic_and_in_range() {
        let a = TensorData::seeded(DataType::FLOAT, &[2, 3], 7).unwrap();
        let b = TensorData::seeded(DataType::FLOAT, &[2, 3], 7).unwrap();
        let c = TensorData::seeded(DataType::FLOAT, &[2, 3], 8).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.to_f64().iter().all(|&v| (0.0..1.0).contains(&v)));
        let i = TensorData::seeded(DataType::INT64, &[100], 1).unwrap();
        assert!(i.to_f64().iter().all(|&v| (0.0..10.0).contains(&v)));
        assert!(TensorData::seeded(DataType::FLOAT16, &[1], 1).is_none());
    }
}
