//! Where the model's operators ran (§6.2 f) and how the backend hands them to its device
//! (§6 g), with the share of the ONNX graph's nodes and MACs on the device under test.
//!
//! Engines report placement in their own terms: ONNX Runtime's profile lists node events by
//! ONNX node name (unnamed nodes become `OpType_index`), and an execution provider that takes
//! a subgraph whole (OpenVINO, TensorRT) reports one `...-EP-subgraph_N` event for all of it.
//! The original nodes missing from the profile are then the ones the fused subgraphs took.

use std::collections::HashMap;
use std::path::Path;

use crate::backend::{self, BackendSettings, DeviceClass, Placement};
use crate::data::inputs::{gather_inputs, input_specs};
use crate::model::Analysis;
use crate::report::schema::session::{FusedSubgraph, PlacementSummary};

/// ORT's name for an unnamed node: `Relu#3` (acceval's label) is `Relu_3` there.
fn engine_name(label: &str) -> String {
    label.replace('#', "_")
}

/// The ONNX graph's nodes (main graph) and their MACs.
fn originals(a: &Analysis) -> Vec<(String, String, u64)> {
    a.per_op
        .iter()
        .filter(|n| n.graph == "main")
        .map(|n| (engine_name(&n.node), n.op_type.clone(), n.macs))
        .collect()
}

/// The summary of `placement` for the model `a` on `b`.
pub fn summarise(
    b: &BackendSettings,
    a: &Analysis,
    placement: Result<Placement, String>,
) -> PlacementSummary {
    let traits = backend::describe(b);
    let (device_class, route, detail) = (traits.class, traits.route, traits.route_detail);
    let nodes = originals(a);
    let total_macs: u64 = nodes.iter().map(|n| n.2).sum();
    let mut s = PlacementSummary {
        device_class,
        route,
        route_detail: detail.into(),
        source: None,
        nodes: nodes.len(),
        nodes_on_device: None,
        macs: Some(total_macs),
        macs_on_device: None,
        fused_subgraphs: Vec::new(),
        cpu_fallback: Vec::new(),
        unavailable: None,
    };
    if device_class == DeviceClass::Emulated {
        s.unavailable = Some("the mock backend emulates a device: nothing runs anywhere".into());
        return s;
    }
    if traits.plain_cpu {
        s.source = Some("the backend is a CPU engine: every node runs on the CPU".into());
        s.nodes_on_device = Some(nodes.len());
        s.macs_on_device = Some(total_macs);
        return s;
    }
    let p = match placement {
        Ok(p) => p,
        Err(e) => {
            s.unavailable = Some(e);
            return s;
        }
    };
    s.source = Some(p.source.clone());
    let reported: HashMap<&str, &str> = p
        .nodes
        .iter()
        .map(|n| (n.node.as_str(), n.device.as_str()))
        .collect();
    s.fused_subgraphs = p
        .nodes
        .iter()
        .filter(|n| n.device != "CPU" && n.op_type.contains("subgraph"))
        .map(|n| FusedSubgraph {
            name: n.node.clone(),
            provider: n.device.clone(),
        })
        .collect();
    let fused = !s.fused_subgraphs.is_empty();
    let (mut on, mut macs) = (0usize, 0u64);
    for (name, op, m) in &nodes {
        // tract names its nodes after the ONNX node, with suffixes for what it split off.
        let dev = reported.get(name.as_str()).copied().or_else(|| {
            p.nodes
                .iter()
                .find(|n| n.node.starts_with(&format!("{name}.")))
                .map(|n| n.device.as_str())
        });
        match dev {
            Some("CPU") => s.cpu_fallback.push(format!("{name} ({op})")),
            Some(_) => {
                on += 1;
                macs += m;
            }
            // Missing from the profile: taken by a fused subgraph, when there is one.
            None if fused => {
                on += 1;
                macs += m;
            }
            None => {}
        }
    }
    s.nodes_on_device = Some(on);
    s.macs_on_device = Some(macs);
    s
}

/// Loads `model` on `b` with placement recording, runs one seeded inference at `shapes`,
/// and summarises where its nodes ran (an engine that cannot report placement gives a
/// summary that says why). Plain CPU engines and the mock need no run.
pub fn probe(
    model: &Path,
    b: &BackendSettings,
    shapes: &[crate::model::InputShape],
) -> Result<PlacementSummary, super::Error> {
    let a = crate::model::analyse(model, shapes)?;
    let traits = backend::describe(b);
    if traits.plain_cpu || traits.class == DeviceClass::Emulated {
        return Ok(summarise(b, &a, Err(String::new())));
    }
    let run = || -> Result<Placement, super::Error> {
        let specs = input_specs(model)?;
        let (inputs, _) = gather_inputs(&specs, &[], shapes, 0)?;
        let load = b.load_options(
            inputs
                .iter()
                .map(|t| (t.name.clone(), t.data.shape().to_vec()))
                .collect(),
            true,
        );
        let mut session = backend::load(model, &b.spec, &load)?;
        session.run(&inputs)?;
        Ok(session.placement()?)
    };
    Ok(summarise(b, &a, run().map_err(|e| format!("{e:#}"))))
}
