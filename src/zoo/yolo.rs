//! ultralytics YOLOv8 (`yolov8.yaml`), as its ONNX export computes it: backbone, PAN neck,
//! decoupled Detect head with DFL box decoding, anchors and strides as constants, output
//! `[1, 4 + classes, anchors]` (boxes as centre x, centre y, width, height in input pixels,
//! then per-class sigmoid scores).

use super::net::{Act, Net};
use crate::model::build::{Attr, attr};
use crate::model::onnx::{DataType, ModelProto};

/// Model scale: (depth multiple, width multiple, max channels) of `yolov8.yaml`.
#[derive(Debug, Clone, Copy)]
pub enum Scale {
    N,
    S,
}

impl Scale {
    fn multiples(self) -> (f64, f64, i64) {
        match self {
            Scale::N => (0.33, 0.25, 1024),
            Scale::S => (0.33, 0.50, 1024),
        }
    }
}

const REG_MAX: i64 = 16;

/// How the backbone and neck are seeded (the head always starts He-normal, biases
/// N(0, 0.05²), with ultralytics' class-bias init).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seeding {
    /// Multiplies every backbone and neck convolution's He-normal standard deviation.
    pub gain: f64,
    /// Standard deviation of their biases.
    pub bias_std: f64,
}

impl Seeding {
    /// The start of a network trained whole (yolov8n-line): He-normal, biases N(0, 0.05²).
    pub const TRAINED_WHOLE: Seeding = Seeding {
        gain: 1.0,
        bias_std: 0.05,
    };
    /// A backbone and neck kept as seeded under a trained head (yolov8s-line-hires). With
    /// He-normal weights SiLU halves a small signal at every layer (its slope at 0 is ½)
    /// while the biases stay, so twenty layers down the features hardly depend on the
    /// image: measured on the three 1280 reference scenes, the P5 features' input dependence
    /// (RMS of the deviation from their mean over the images / RMS) was 0.019, P4's 0.039,
    /// and the trained head predicted the same P4 and P5 outputs for every scene. At 1.15
    /// × He with biases N(0, 0.01²) the signal holds: 0.24 at P3, P4 and P5 (RMS 2.3-3.3);
    /// 1.2 grows it to RMS 23 and 1.4 to 4e3, 1.1 lets it shrink to 0.05.
    pub const FROZEN_FEATURES: Seeding = Seeding {
        gain: 1.15,
        bias_std: 0.01,
    };
}

/// A line-inspection detector as the zoo ships it: one definition for its zoo entry and
/// for the workload that trains it, so a head is trained on the backbone the zoo builds.
#[derive(Clone, Copy, Debug)]
pub struct Line {
    pub scale: Scale,
    pub seeding: Seeding,
    pub classes: i64,
    /// The input side the zoo builds it at.
    pub side: i64,
}

/// yolov8n-line: trained whole at 640.
pub const LINE_N: Line = Line {
    scale: Scale::N,
    seeding: Seeding::TRAINED_WHOLE,
    classes: 5,
    side: 640,
};

/// yolov8s-line-hires: the head trained on the seeded backbone and neck, at 1280.
pub const LINE_S_HIRES: Line = Line {
    scale: Scale::S,
    seeding: Seeding::FROZEN_FEATURES,
    classes: 5,
    side: 1280,
};

impl Line {
    /// Its graph for a square `size` input (the same initializer names at every size).
    pub fn graph(
        &self,
        name: &str,
        dt: DataType,
        init: Option<super::Init>,
        size: i64,
    ) -> ModelProto {
        yolov8(name, dt, init, self.scale, self.seeding, self.classes, size)
    }
}

struct Yolo {
    n: Net,
    depth: f64,
    width: f64,
    max_ch: i64,
    /// The gain of the convolutions being added (the seeding's in the body, 1 in the head).
    gain: f64,
}

impl Yolo {
    /// ultralytics `make_divisible(min(c, max_channels) * width, 8)`.
    fn ch(&self, c: i64) -> i64 {
        let v = (c.min(self.max_ch) as f64 * self.width / 8.0).ceil() as i64;
        v * 8
    }
    /// ultralytics `max(round(n * depth), 1)` for n > 1.
    fn reps(&self, n: i64) -> i64 {
        if n > 1 {
            ((n as f64 * self.depth).round() as i64).max(1)
        } else {
            n
        }
    }
    fn conv(&mut self, x: &str, c1: i64, c2: i64, k: i64, s: i64) -> String {
        self.n.conv(x, c1, c2, k, s, 1, Act::Silu, self.gain)
    }
    fn bottleneck(&mut self, x: &str, c: i64, shortcut: bool) -> String {
        let y = self.conv(x, c, c, 3, 1);
        // Residual branches start smaller so stacked blocks keep activations bounded.
        let y = self.n.conv(
            &y,
            c,
            c,
            3,
            1,
            1,
            Act::Silu,
            self.gain * if shortcut { 0.5 } else { 1.0 },
        );
        if shortcut { self.n.add(x, &y) } else { y }
    }
    /// C2f(c1, c2, n, shortcut): cv1 → split in two → n bottlenecks on the last → concat → cv2.
    fn c2f(&mut self, x: &str, c1: i64, c2: i64, n: i64, shortcut: bool) -> String {
        let c = c2 / 2;
        let y = self.conv(x, c1, 2 * c, 1, 1);
        let split = self.n.fresh("split_sizes");
        self.n.int64(&split, &[c, c]);
        let parts = self
            .n
            .op_n("Split", &[&y, &split], 2, vec![attr("axis", Attr::Int(1))]);
        let mut ys = parts.clone();
        let mut last = parts[1].clone();
        for _ in 0..n {
            last = self.bottleneck(&last, c, shortcut);
            ys.push(last.clone());
        }
        let refs: Vec<&str> = ys.iter().map(|s| s.as_str()).collect();
        let cat = self.n.concat(&refs, 1);
        self.conv(&cat, (2 + n) * c, c2, 1, 1)
    }
    /// SPPF(c1, c2, 5): cv1 → three chained 5×5 max pools → concat → cv2.
    fn sppf(&mut self, x: &str, c1: i64, c2: i64) -> String {
        let c = c1 / 2;
        let y0 = self.conv(x, c1, c, 1, 1);
        let y1 = self.n.maxpool(&y0, 5, 1, 2);
        let y2 = self.n.maxpool(&y1, 5, 1, 2);
        let y3 = self.n.maxpool(&y2, 5, 1, 2);
        let cat = self.n.concat(&[&y0, &y1, &y2, &y3], 1);
        self.conv(&cat, 4 * c, c2, 1, 1)
    }
}

/// The backbone and the PAN neck: the three feature levels (P3, P4, P5) and their widths.
fn backbone_neck(y: &mut Yolo, x: &str) -> [(String, i64, i64); 3] {
    let (c64, c128, c256, c512, c1024) = (y.ch(64), y.ch(128), y.ch(256), y.ch(512), y.ch(1024));
    // Backbone.
    let x0 = y.conv(x, 3, c64, 3, 2);
    let x1 = y.conv(&x0, c64, c128, 3, 2);
    let r3 = y.reps(3);
    let r6 = y.reps(6);
    let x2 = y.c2f(&x1, c128, c128, r3, true);
    let x3 = y.conv(&x2, c128, c256, 3, 2);
    let x4 = y.c2f(&x3, c256, c256, r6, true);
    let x5 = y.conv(&x4, c256, c512, 3, 2);
    let x6 = y.c2f(&x5, c512, c512, r6, true);
    let x7 = y.conv(&x6, c512, c1024, 3, 2);
    let x8 = y.c2f(&x7, c1024, c1024, r3, true);
    let x9 = y.sppf(&x8, c1024, c1024);
    // Neck (PAN).
    let x10 = y.n.upsample2x(&x9);
    let x11 = y.n.concat(&[&x10, &x6], 1);
    let x12 = y.c2f(&x11, c1024 + c512, c512, r3, false);
    let x13 = y.n.upsample2x(&x12);
    let x14 = y.n.concat(&[&x13, &x4], 1);
    let p3 = y.c2f(&x14, c512 + c256, c256, r3, false);
    let x16 = y.conv(&p3, c256, c256, 3, 2);
    let x17 = y.n.concat(&[&x16, &x12], 1);
    let p4 = y.c2f(&x17, c256 + c512, c512, r3, false);
    let x19 = y.conv(&p4, c512, c512, 3, 2);
    let x20 = y.n.concat(&[&x19, &x9], 1);
    let p5 = y.c2f(&x20, c512 + c1024, c1024, r3, false);

    [(p3, c256, 8), (p4, c512, 16), (p5, c1024, 32)]
}

/// The detection head's flattened outputs (box DFL logits and class logits per anchor)
/// with each anchor's centre and stride.
struct Head {
    flat: Vec<String>,
    anchors_x: Vec<f32>,
    anchors_y: Vec<f32>,
    strides: Vec<f32>,
}

/// Detect head: per level a box branch (4·reg_max DFL logits) and a class branch.
fn head(y: &mut Yolo, levels: [(String, i64, i64); 3], classes: i64, size: i64) -> Head {
    let c256 = levels[0].1;
    let c2 = 16i64.max(c256 / 4).max(REG_MAX * 4);
    let c3 = c256.max(classes.min(100));
    let no = 4 * REG_MAX + classes;
    let mut flat = Vec::new();
    let mut anchors_x = Vec::new();
    let mut anchors_y = Vec::new();
    let mut strides = Vec::new();
    // ultralytics' bias_init for a 5-class head: log(5 / classes / (640 / stride)²).
    let cls_bias = |s: i64| -> f32 {
        match s {
            8 => -8.764_053,
            16 => -7.377_759,
            _ => -5.991_465,
        }
    };
    for (feat, ch, s) in levels {
        let b = y.conv(&feat, ch, c2, 3, 1);
        let b = y.conv(&b, c2, c2, 3, 1);
        let b = y.n.conv_plain(
            &b,
            c2,
            4 * REG_MAX,
            1,
            0.01,
            &vec![1.0; (4 * REG_MAX) as usize],
        );
        let c = y.conv(&feat, ch, c3, 3, 1);
        let c = y.conv(&c, c3, c3, 3, 1);
        let c = y.n.conv_plain(
            &c,
            c3,
            classes,
            1,
            0.01,
            &vec![cls_bias(s); classes as usize],
        );
        let cat = y.n.concat(&[&b, &c], 1);
        let g = size / s;
        let shape = y.n.fresh("head_shape");
        y.n.int64(&shape, &[1, no, g * g]);
        flat.push(y.n.op("Reshape", &[&cat, &shape], vec![]));
        for row in 0..g {
            for col in 0..g {
                anchors_x.push(col as f32 + 0.5);
                anchors_y.push(row as f32 + 0.5);
                strides.push(s as f32);
            }
        }
    }
    Head {
        flat,
        anchors_x,
        anchors_y,
        strides,
    }
}

/// The weights and biases of the Detect head: back from each level's concatenation of box
/// and class logits, three convolutions per branch (Conv–Conv–Conv2d, SiLU between), as
/// `head` builds them. Everything before them is the backbone and the neck.
pub fn head_params(m: &ModelProto) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    let Some(g) = m.graph.as_ref() else {
        return out;
    };
    let producer: std::collections::HashMap<&str, &crate::model::onnx::NodeProto> = g
        .node
        .iter()
        .flat_map(|n| n.output.iter().map(move |o| (o.as_str(), n)))
        .collect();
    let concats = g.node.iter().filter(|n| {
        n.op_type == "Reshape" && n.input.get(1).is_some_and(|s| s.starts_with("head_shape"))
    });
    for r in concats {
        let Some(cat) = producer.get(r.input[0].as_str()) else {
            continue;
        };
        for branch in &cat.input {
            let mut v = branch.as_str();
            for _ in 0..3 {
                let Some(mut n) = producer.get(v).copied() else {
                    break;
                };
                if n.op_type == "Mul" {
                    match producer.get(n.input[0].as_str()) {
                        Some(c) => n = c,
                        None => break,
                    }
                }
                if n.op_type != "Conv" {
                    break;
                }
                out.extend(n.input.iter().skip(1).cloned());
                v = n.input[0].as_str();
            }
        }
    }
    out
}

/// Splits box and class logits, decodes the boxes (DFL expectation, dist2bbox × stride) and
/// applies the sigmoid to the classes: `[1, 4 + classes, anchors]`.
fn decode(y: &mut Yolo, h: Head, classes: i64) -> (String, i64) {
    let Head {
        flat,
        anchors_x,
        anchors_y,
        strides,
    } = h;
    let a = anchors_x.len() as i64;
    let refs: Vec<&str> = flat.iter().map(|s| s.as_str()).collect();
    let all = y.n.concat(&refs, 2);
    let sizes = y.n.int64("detect.split_box_cls", &[4 * REG_MAX, classes]);
    let parts = y.n.op_n(
        "Split",
        &[&all, &sizes],
        2,
        vec![attr("axis", Attr::Int(1))],
    );
    // DFL: softmax over 16 bins per side, expectation by a fixed 1×1 convolution.
    let s4 = y.n.int64("dfl.shape4", &[1, 4, REG_MAX, a]);
    let box4 = y.n.op("Reshape", &[&parts[0], &s4], vec![]);
    let bt = y.n.op(
        "Transpose",
        &[&box4],
        vec![attr("perm", Attr::Ints(vec![0, 2, 1, 3]))],
    );
    let sm = y.n.op("Softmax", &[&bt], vec![attr("axis", Attr::Int(1))]);
    let bins: Vec<f32> = (0..REG_MAX).map(|v| v as f32).collect();
    let dflw = y.n.constant("dfl.conv.weight", &[1, REG_MAX, 1, 1], &bins);
    let dist = y.n.op(
        "Conv",
        &[&sm, &dflw],
        vec![attr("kernel_shape", Attr::Ints(vec![1, 1]))],
    );
    let s3 = y.n.int64("dfl.shape3", &[1, 4, a]);
    let dist = y.n.op("Reshape", &[&dist, &s3], vec![]);
    // dist2bbox(xywh): centre = anchor + (rb − lt)/2, size = lt + rb; then × stride.
    let half_sizes = y.n.int64("decode.split_lt_rb", &[2, 2]);
    let ltrb = y.n.op_n(
        "Split",
        &[&dist, &half_sizes],
        2,
        vec![attr("axis", Attr::Int(1))],
    );
    let mut anchors = anchors_x;
    anchors.extend(anchors_y);
    let anc = y.n.constant("decode.anchors", &[2, a], &anchors);
    let x1y1 = y.n.op("Sub", &[&anc, &ltrb[0]], vec![]);
    let x2y2 = y.n.op("Add", &[&anc, &ltrb[1]], vec![]);
    let sum = y.n.op("Add", &[&x1y1, &x2y2], vec![]);
    let two = y.n.constant("decode.two", &[], &[2.0]);
    let cxy = y.n.op("Div", &[&sum, &two], vec![]);
    let wh = y.n.op("Sub", &[&x2y2, &x1y1], vec![]);
    let xywh = y.n.concat(&[&cxy, &wh], 1);
    let st = y.n.constant("decode.strides", &[1, a], &strides);
    let dbox = y.n.op("Mul", &[&xywh, &st], vec![]);
    let cls = y.n.op("Sigmoid", &[&parts[1]], vec![]);
    let out = y.n.concat(&[&dbox, &cls], 1);
    (out, a)
}

/// YOLOv8 at `scale` with `classes` classes for a square `size` input.
pub fn yolov8(
    name: &str,
    dt: DataType,
    init: Option<super::Init>,
    scale: Scale,
    seeding: Seeding,
    classes: i64,
    size: i64,
) -> ModelProto {
    let (depth, width, max_ch) = scale.multiples();
    let mut net = Net::new(name, dt);
    net.set_init(init);
    net.bias_std = seeding.bias_std;
    let mut y = Yolo {
        n: net,
        depth,
        width,
        max_ch,
        gain: seeding.gain,
    };
    let x = y.n.input("images", &[1, 3, size, size]);
    let levels = backbone_neck(&mut y, &x);
    y.gain = 1.0;
    y.n.bias_std = Seeding::TRAINED_WHOLE.bias_std;
    let h = head(&mut y, levels, classes, size);
    let (out, a) = decode(&mut y, h, classes);
    y.n.output(&out, "output0", &[1, 4 + classes, a]);
    y.n.finish(17)
}
