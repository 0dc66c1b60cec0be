//! `Net`: a layer-level builder over [`GraphBuilder`] for the zoo's architectures.
//!
//! Convolutions are written as inference graphs are exported: BatchNorm folded into the
//! convolution's weights and bias. Weights are seeded He-normal (std √(2/fan_in)) times a
//! per-layer gain, and biases N(0, 0.05²) unless a model says otherwise, which keeps
//! activations in a trained network's range. Each tensor's values come from a stream seeded by the model name and the tensor
//! name, so a model is the same bit for bit on every machine.
//!
//! The compute type is FP32 or FP16. FP16 graphs keep FP32 inputs and outputs and cast at
//! the edges, as `onnxconverter_common.float16` does with `keep_io_types=True`.

use half::f16;

use crate::model::build::{Attr, GraphBuilder, attr, node, tensor_i64, tensor_raw};
use crate::model::onnx::{DataType, ModelProto};
use crate::util::rng::{SplitMix64, seed_of};

/// Activation after a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    None,
    Relu,
    /// Clip(0, 6), MobileNet's.
    Relu6,
    /// x·sigmoid(x), YOLOv8's.
    Silu,
}

pub struct Net {
    pub g: GraphBuilder,
    /// Compute type: FLOAT or FLOAT16.
    pub dt: DataType,
    /// INT8 QDQ mode: the calibrated range of activations by value name. Weights of
    /// Conv/MatMul/LSTM are stored INT8 (symmetric, per output channel) and dequantised;
    /// activations feeding Conv/MatMul get QuantizeLinear/DequantizeLinear (asymmetric
    /// UINT8 with a zero point, per tensor) when calibrated.
    pub quant: Option<super::Calibration>,
    /// Trained values by initializer name; seeded values where a name has none.
    pub trained: Option<super::Trained>,
    /// Standard deviation of the seeded convolution biases.
    pub bias_std: f64,
    model: String,
    n: usize,
}

impl Net {
    pub fn new(model: &str, dt: DataType) -> Net {
        Net {
            g: GraphBuilder::new(model),
            dt,
            quant: None,
            trained: None,
            bias_std: 0.05,
            model: model.to_string(),
            n: 0,
        }
    }

    /// Sets INT8 calibration and trained weights.
    pub fn set_init(&mut self, init: Option<super::Init>) {
        if let Some(i) = init {
            self.quant = i.quant;
            self.trained = i.trained;
        }
    }

    /// The values of weight `name`: trained when the trained set has it with `n` values,
    /// else seeded normal with standard deviation `std`.
    fn values(&self, name: &str, n: i64, std: f64) -> Vec<f32> {
        if let Some(v) = self.trained.as_ref().and_then(|t| t.get(name))
            && v.len() == n as usize
        {
            return v.clone();
        }
        let mut rng = SplitMix64(seed_of(&format!("{}/{name}", self.model)));
        (0..n).map(|_| (rng.normal() * std) as f32).collect()
    }

    /// A fresh value name with `prefix`.
    pub fn fresh(&mut self, prefix: &str) -> String {
        self.n += 1;
        format!("{prefix}_{}", self.n)
    }

    fn bytes_of(&self, v: &[f32]) -> Vec<u8> {
        if self.dt == DataType::FLOAT16 {
            v.iter()
                .flat_map(|&x| f16::from_f32(x).to_le_bytes())
                .collect()
        } else {
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
    }

    /// An initializer of the compute type with the given values.
    pub fn constant(&mut self, name: &str, dims: &[i64], values: &[f32]) -> String {
        // A trained value (a detection head's bias) replaces the given one.
        let trained = self
            .trained
            .as_ref()
            .and_then(|t| t.get(name))
            .filter(|v| v.len() == values.len());
        let bytes = self.bytes_of(trained.map(|v| v.as_slice()).unwrap_or(values));
        self.g = std::mem::take(&mut self.g).init(tensor_raw(name, self.dt, dims, bytes));
        name.to_string()
    }

    /// Seeded normal values with standard deviation `std`.
    pub fn random(&mut self, name: &str, dims: &[i64], std: f64) -> String {
        let n: i64 = dims.iter().product();
        let v = self.values(name, n, std);
        self.constant(name, dims, &v)
    }

    /// A weight tensor: seeded like `random`; in INT8 mode stored INT8 per channel along
    /// `axis` with FP32 scales (max |w| / 127) and zero points 0, then dequantised.
    pub fn weight(&mut self, name: &str, dims: &[i64], std: f64, axis: usize) -> String {
        if self.quant.is_none() {
            return self.random(name, dims, std);
        }
        let n: i64 = dims.iter().product();
        let v = self.values(name, n, std);
        let channels = dims[axis] as usize;
        let inner: usize = dims[axis + 1..].iter().product::<i64>() as usize;
        let mut maxes = vec![0f32; channels];
        for (i, x) in v.iter().enumerate() {
            let c = (i / inner) % channels;
            maxes[c] = maxes[c].max(x.abs());
        }
        let scales: Vec<f32> = maxes
            .iter()
            .map(|&m| if m > 0.0 { m / 127.0 } else { 1.0 })
            .collect();
        let q: Vec<u8> = v
            .iter()
            .enumerate()
            .map(|(i, x)| {
                ((x / scales[(i / inner) % channels])
                    .round()
                    .clamp(-127.0, 127.0) as i8) as u8
            })
            .collect();
        let qn = format!("{name}.int8");
        let sn = format!("{name}.scale");
        let zn = format!("{name}.zero_point");
        let sb: Vec<u8> = scales.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.g = std::mem::take(&mut self.g)
            .init(tensor_raw(&qn, DataType::INT8, dims, q))
            .init(tensor_raw(&sn, DataType::FLOAT, &[channels as i64], sb))
            .init(tensor_raw(
                &zn,
                DataType::INT8,
                &[channels as i64],
                vec![0; channels],
            ));
        self.op_named(
            "DequantizeLinear",
            &[&qn, &sn, &zn],
            &format!("{name}.dq"),
            vec![attr("axis", Attr::Int(axis as i64))],
        )
    }

    /// A node whose output is named `out` (not from the counter: INT8 graphs must keep the
    /// FP32 graph's value names, which calibration is keyed by).
    fn op_named(
        &mut self,
        op: &str,
        inputs: &[&str],
        out: &str,
        attrs: Vec<crate::model::onnx::AttributeProto>,
    ) -> String {
        let mut n = node(op, inputs, &[out], attrs);
        n.name = out.to_string();
        self.g = std::mem::take(&mut self.g).node(n);
        out.to_string()
    }

    /// In INT8 mode, fake-quantises a calibrated activation: Q then DQ, asymmetric UINT8
    /// over its calibrated [min, max] (ONNX Runtime's `quantize_static` default for
    /// activations). A symmetric scale would spend half its codes on values a SiLU or ReLU
    /// output never takes.
    pub fn qdq(&mut self, x: &str) -> String {
        let Some(r) = self.quant.as_ref().and_then(|q| q.get(x)).copied() else {
            return x.to_string();
        };
        let (scale, zero) = uint8_params(r);
        let (sn, zn) = (format!("{x}.act_scale"), format!("{x}.act_zero_point"));
        let dq = format!("{x}.dq");
        if self
            .g
            .graph
            .node
            .iter()
            .any(|n| n.output.first() == Some(&dq))
        {
            // Already quantised for another consumer (a tensor feeding two convolutions).
            return dq;
        }
        self.g = std::mem::take(&mut self.g)
            .init(tensor_raw(
                &sn,
                DataType::FLOAT,
                &[],
                scale.to_le_bytes().to_vec(),
            ))
            .init(tensor_raw(&zn, DataType::UINT8, &[], vec![zero]));
        let q = self.op_named("QuantizeLinear", &[x, &sn, &zn], &format!("{x}.q"), vec![]);
        self.op_named("DequantizeLinear", &[&q, &sn, &zn], &dq, vec![])
    }

    pub fn int64(&mut self, name: &str, values: &[i64]) -> String {
        self.g = std::mem::take(&mut self.g).init(tensor_i64(name, &[values.len() as i64], values));
        name.to_string()
    }

    pub fn op(
        &mut self,
        op: &str,
        inputs: &[&str],
        attrs: Vec<crate::model::onnx::AttributeProto>,
    ) -> String {
        let out = self.fresh(&op.to_ascii_lowercase());
        let mut n = node(op, inputs, &[&out], attrs);
        n.name = out.clone();
        self.g = std::mem::take(&mut self.g).node(n);
        out
    }

    /// A node with several outputs.
    pub fn op_n(
        &mut self,
        op: &str,
        inputs: &[&str],
        n_out: usize,
        attrs: Vec<crate::model::onnx::AttributeProto>,
    ) -> Vec<String> {
        let base = self.fresh(&op.to_ascii_lowercase());
        let outs: Vec<String> = (0..n_out).map(|i| format!("{base}_{i}")).collect();
        let refs: Vec<&str> = outs.iter().map(|s| s.as_str()).collect();
        let mut n = node(op, inputs, &refs, attrs);
        n.name = base;
        self.g = std::mem::take(&mut self.g).node(n);
        outs
    }

    pub fn act(&mut self, x: &str, a: Act) -> String {
        match a {
            Act::None => x.to_string(),
            Act::Relu => self.op("Relu", &[x], vec![]),
            Act::Relu6 => {
                let lo = self.fresh("clip_min");
                let hi = self.fresh("clip_max");
                self.constant(&lo, &[], &[0.0]);
                self.constant(&hi, &[], &[6.0]);
                self.op("Clip", &[x, &lo, &hi], vec![])
            }
            Act::Silu => {
                let s = self.op("Sigmoid", &[x], vec![]);
                self.op("Mul", &[x, &s], vec![])
            }
        }
    }

    /// Conv (BatchNorm folded: weights and bias) + activation. `gain` scales the He std.
    #[allow(clippy::too_many_arguments)]
    pub fn conv(
        &mut self,
        x: &str,
        cin: i64,
        cout: i64,
        k: i64,
        s: i64,
        groups: i64,
        act: Act,
        gain: f64,
    ) -> String {
        let name = self.fresh("conv");
        let fan_in = (cin / groups) * k * k;
        let xq = self.qdq(x);
        let x = xq.as_str();
        let w = self.weight(
            &format!("{name}.weight"),
            &[cout, cin / groups, k, k],
            gain * (2.0 / fan_in as f64).sqrt(),
            0,
        );
        let b = self.random(&format!("{name}.bias"), &[cout], self.bias_std);
        let p = k / 2;
        let mut n = node(
            "Conv",
            &[x, &w, &b],
            &[&name],
            vec![
                attr("kernel_shape", Attr::Ints(vec![k, k])),
                attr("strides", Attr::Ints(vec![s, s])),
                attr("pads", Attr::Ints(vec![p, p, p, p])),
                attr("group", Attr::Int(groups)),
            ],
        );
        n.name = name.clone();
        self.g = std::mem::take(&mut self.g).node(n);
        self.act(&name, act)
    }

    /// A plain convolution with bias and explicit weights std (detection heads).
    pub fn conv_plain(
        &mut self,
        x: &str,
        cin: i64,
        cout: i64,
        k: i64,
        std: f64,
        bias: &[f32],
    ) -> String {
        let name = self.fresh("conv");
        let xq = self.qdq(x);
        let x = xq.as_str();
        let w = self.weight(&format!("{name}.weight"), &[cout, cin, k, k], std, 0);
        let b = self.constant(&format!("{name}.bias"), &[cout], bias);
        let mut n = node(
            "Conv",
            &[x, &w, &b],
            &[&name],
            vec![attr("kernel_shape", Attr::Ints(vec![k, k]))],
        );
        n.name = name.clone();
        self.g = std::mem::take(&mut self.g).node(n);
        name
    }

    pub fn add(&mut self, a: &str, b: &str) -> String {
        self.op("Add", &[a, b], vec![])
    }

    pub fn concat(&mut self, xs: &[&str], axis: i64) -> String {
        self.op("Concat", xs, vec![attr("axis", Attr::Int(axis))])
    }

    pub fn maxpool(&mut self, x: &str, k: i64, s: i64, p: i64) -> String {
        self.op(
            "MaxPool",
            &[x],
            vec![
                attr("kernel_shape", Attr::Ints(vec![k, k])),
                attr("strides", Attr::Ints(vec![s, s])),
                attr("pads", Attr::Ints(vec![p, p, p, p])),
            ],
        )
    }

    /// Global average pool + flatten + fully connected (Xavier-uniform-like std).
    pub fn classifier(&mut self, x: &str, cin: i64, classes: i64) -> String {
        let gap = self.op("GlobalAveragePool", &[x], vec![]);
        let flat = self.op("Flatten", &[&gap], vec![attr("axis", Attr::Int(1))]);
        self.linear(&flat, "fc", cin, classes)
    }

    /// A fully connected layer as MatMul + Add (not Gemm: tract 0.23 mistypes an FP16
    /// Gemm's output as FP32, "Output mismatch after rewiring expansion").
    pub fn linear(&mut self, x: &str, name: &str, cin: i64, cout: i64) -> String {
        let xq = self.qdq(x);
        let w = self.weight(
            &format!("{name}.weight"),
            &[cin, cout],
            (1.0 / cin as f64).sqrt(),
            1,
        );
        let b = self.random(&format!("{name}.bias"), &[cout], 0.01);
        let y = self.op("MatMul", &[&xq, &w], vec![]);
        self.add(&y, &b)
    }

    /// Nearest-neighbour 2× upsampling (Resize with FP32 scales, whatever the compute type).
    pub fn upsample2x(&mut self, x: &str) -> String {
        let scales = self.fresh("scales");
        let bytes = [1f32, 1.0, 2.0, 2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        self.g =
            std::mem::take(&mut self.g).init(tensor_raw(&scales, DataType::FLOAT, &[4], bytes));
        self.op(
            "Resize",
            &[x, "", &scales],
            vec![attr("mode", Attr::Str("nearest"))],
        )
    }

    /// Declares the FP32 input, casting it to the compute type.
    pub fn input(&mut self, name: &str, dims: &[i64]) -> String {
        self.g = std::mem::take(&mut self.g).input(name, DataType::FLOAT, dims);
        if self.dt == DataType::FLOAT {
            name.to_string()
        } else {
            // Named apart from the counter: the layers after it must get the same names,
            // and so the same seeded weights, as in the FP32 variant.
            self.op_named(
                "Cast",
                &[name],
                &format!("{name}.cast"),
                vec![attr("to", Attr::Int(self.dt.0 as i64))],
            )
        }
    }

    /// Declares an FP32 output `name` from value `x` (cast back from the compute type).
    pub fn output(&mut self, x: &str, name: &str, dims: &[i64]) {
        let mut n = if self.dt == DataType::FLOAT {
            node("Identity", &[x], &[name], vec![])
        } else {
            node(
                "Cast",
                &[x],
                &[name],
                vec![attr("to", Attr::Int(DataType::FLOAT.0 as i64))],
            )
        };
        n.name = format!("{name}_out");
        self.g = std::mem::take(&mut self.g)
            .node(n)
            .output(name, DataType::FLOAT, dims);
    }

    pub fn finish(self, opset: i64) -> ModelProto {
        let mut m = self.g.model(opset);
        m.producer_name = "acceval-zoo".into();
        m
    }
}

/// The UINT8 scale and zero point of a calibrated range, widened to hold 0 so that zero
/// (padding, ReLU's floor) is exact. The range's
/// ends keep 8 significant mantissa bits first: calibration extremes that differ in their
/// last bits between CPUs (SIMD summation order) give the same file.
pub fn uint8_params(r: super::Range) -> (f32, u8) {
    let round = |v: f32| f32::from_bits(v.to_bits() & 0xFFFF_8000);
    let (lo, hi) = (round(r.min.min(0.0)), round(r.max.max(0.0)));
    let scale = ((hi - lo) / 255.0).max(1e-8);
    let zero = (-lo / scale).round().clamp(0.0, 255.0) as u8;
    (scale, zero)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint8_ranges_hold_zero_and_their_ends() {
        // A SiLU output: [-0.278, 6.0] takes the 256 codes with zero exact.
        let (s, z) = uint8_params(super::super::Range {
            min: -0.278,
            max: 6.0,
        });
        assert!((s - 6.278 / 255.0).abs() < 1e-4, "{s}");
        assert_eq!(z, 11, "round(0.278 / {s})");
        let dq = |q: f32| (q - z as f32) * s;
        assert!((dq(0.0) + 0.278).abs() < s && (dq(255.0) - 6.0).abs() < s);
        // An image in [0, 1]: zero point 0, 1/255 steps (symmetric INT8 would take 1/127).
        let (s, z) = uint8_params(super::super::Range { min: 0.0, max: 1.0 });
        assert_eq!(z, 0);
        assert!((s - 1.0 / 255.0).abs() < 1e-5);
        // A range that excludes 0 is widened to hold it; a constant gets a usable scale.
        let (_, z) = uint8_params(super::super::Range { min: 2.0, max: 3.0 });
        assert_eq!(z, 0);
        let (s, z) = uint8_params(super::super::Range { min: 0.0, max: 0.0 });
        assert!(s > 0.0 && z == 0);
        // All-negative: zero point 255.
        let (_, z) = uint8_params(super::super::Range {
            min: -4.0,
            max: -1.0,
        });
        assert_eq!(z, 255);
    }
}
