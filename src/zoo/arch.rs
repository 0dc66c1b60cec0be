//! The zoo's architectures, layer for layer as their reference implementations define
//! them (torchvision's ResNet-50 v1.5 and MobileNetV2, ultralytics' YOLOv8, a PyTorch
//! `nn.LSTM` forecaster), with BatchNorm folded.

use super::net::{Act, Net};
use crate::model::build::{Attr, attr};
use crate::model::onnx::{DataType, ModelProto};

/// torchvision `resnet50` (v1.5: stride on the 3×3 convolution), `classes` outputs.
pub fn resnet50(name: &str, dt: DataType, init: Option<super::Init>, classes: i64) -> ModelProto {
    let mut n = Net::new(name, dt);
    n.set_init(init);
    let x = n.input("input", &[1, 3, 224, 224]);
    let x = n.conv(&x, 3, 64, 7, 2, 1, Act::Relu, 1.0);
    let mut x = n.maxpool(&x, 3, 2, 1);
    let mut inplanes = 64;
    for (planes, blocks, stride) in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)] {
        for b in 0..blocks {
            let s = if b == 0 { stride } else { 1 };
            let out = planes * 4;
            let identity = if s != 1 || inplanes != out {
                n.conv(&x, inplanes, out, 1, s, 1, Act::None, 1.0)
            } else {
                x.clone()
            };
            let y = n.conv(&x, inplanes, planes, 1, 1, 1, Act::Relu, 1.0);
            let y = n.conv(&y, planes, planes, 3, s, 1, Act::Relu, 1.0);
            // The last convolution of a residual branch starts small (as torchvision's
            // zero-init-residual option does, but not zero), so depth does not blow up
            // the activations.
            let y = n.conv(&y, planes, out, 1, 1, 1, Act::None, 0.2);
            let sum = n.add(&y, &identity);
            x = n.act(&sum, Act::Relu);
            inplanes = out;
        }
    }
    let logits = n.classifier(&x, 2048, classes);
    n.output(&logits, "logits", &[1, classes]);
    n.finish(17)
}

/// torchvision `mobilenet_v2` (width 1.0), `classes` outputs.
pub fn mobilenet_v2(
    name: &str,
    dt: DataType,
    init: Option<super::Init>,
    classes: i64,
) -> ModelProto {
    mobilenet_v2_at(name, dt, init, classes, 224)
}

/// [`mobilenet_v2`] for a `size`×`size` input (the trainer's smaller crops; the same
/// weights).
pub fn mobilenet_v2_at(
    name: &str,
    dt: DataType,
    init: Option<super::Init>,
    classes: i64,
    size: i64,
) -> ModelProto {
    let mut n = Net::new(name, dt);
    n.set_init(init);
    let x = n.input("input", &[1, 3, size, size]);
    let mut x = n.conv(&x, 3, 32, 3, 2, 1, Act::Relu6, 1.0);
    let mut inp = 32;
    for (t, c, reps, s) in [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ] {
        for i in 0..reps {
            let stride = if i == 0 { s } else { 1 };
            let hidden = inp * t;
            let mut y = x.clone();
            if t != 1 {
                y = n.conv(&y, inp, hidden, 1, 1, 1, Act::Relu6, 1.0);
            }
            y = n.conv(&y, hidden, hidden, 3, stride, hidden, Act::Relu6, 1.0);
            let residual = stride == 1 && inp == c;
            y = n.conv(
                &y,
                hidden,
                c,
                1,
                1,
                1,
                Act::None,
                if residual { 0.3 } else { 1.0 },
            );
            x = if residual { n.add(&x, &y) } else { y };
            inp = c;
        }
    }
    let x = n.conv(&x, 320, 1280, 1, 1, 1, Act::Relu6, 1.0);
    let logits = n.classifier(&x, 1280, classes);
    n.output(&logits, "logits", &[1, classes]);
    n.finish(17)
}

/// Two stacked LSTM layers (hidden `hidden`) over `steps` × `features`, the last hidden
/// state mapped to `horizon` values (batch-first input, as `nn.LSTM(batch_first=True)`).
pub fn lstm_forecast(
    name: &str,
    dt: DataType,
    init: Option<super::Init>,
    steps: i64,
    features: i64,
    hidden: i64,
    horizon: i64,
) -> ModelProto {
    let mut n = Net::new(name, dt);
    n.set_init(init);
    let x = n.input("series", &[1, steps, features]);
    // [1, steps, features] → [steps, 1, features] (ONNX LSTM's default layout).
    let x = n.op(
        "Transpose",
        &[&x],
        vec![attr("perm", Attr::Ints(vec![1, 0, 2]))],
    );
    let mut inp = features;
    let mut seq = x;
    let mut last = String::new();
    for layer in 0..2 {
        let std = (1.0 / hidden as f64).sqrt();
        let w = n.weight(&format!("lstm{layer}.W"), &[1, 4 * hidden, inp], std, 1);
        let r = n.weight(&format!("lstm{layer}.R"), &[1, 4 * hidden, hidden], std, 1);
        let b = n.random(&format!("lstm{layer}.B"), &[1, 8 * hidden], std);
        // Explicit zero initial states of the compute type (ConstantOfShape: no stored
        // tensor): tract 0.23 otherwise seeds an FP16 LSTM with FP32 zeros and fails.
        let state_shape = n.int64(&format!("lstm{layer}.state_shape"), &[1, 1, hidden]);
        let zero = crate::model::build::tensor_raw(
            "",
            n.dt,
            &[1],
            vec![0; if n.dt == DataType::FLOAT16 { 2 } else { 4 }],
        );
        let h0 = n.op(
            "ConstantOfShape",
            &[&state_shape],
            vec![attr("value", Attr::Tensor(zero.clone()))],
        );
        let c0 = n.op(
            "ConstantOfShape",
            &[&state_shape],
            vec![attr("value", Attr::Tensor(zero))],
        );
        let outs = n.op_n(
            "LSTM",
            &[&seq, &w, &r, &b, "", &h0, &c0],
            2,
            vec![attr("hidden_size", Attr::Int(hidden))],
        );
        // Y [steps, 1, 1, hidden] → [steps, 1, hidden] for the next layer.
        let axes = n.int64(&format!("lstm{layer}.squeeze_axes"), &[1]);
        seq = n.op("Squeeze", &[&outs[0], &axes], vec![]);
        last = outs[1].clone();
        inp = hidden;
    }
    // Y_h of the last layer [1, 1, hidden] → [1, hidden] → linear → [1, horizon].
    let shape = n.int64("head.shape", &[1, hidden]);
    let h = n.op("Reshape", &[&last, &shape], vec![]);
    let y = n.linear(&h, "head", hidden, horizon);
    n.output(&y, "forecast", &[1, horizon]);
    n.finish(17)
}
