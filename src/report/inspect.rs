//! Views of an [`Analysis`]: terminal tables and JSON.
//!
//! Tables use box-drawing characters on a terminal and Markdown when stdout is piped, so
//! `acceval inspect m.onnx > m.md` gives a readable document. No colour is used.

use std::io::Write;

use super::{right, table};
use crate::report::schema::inspect::{Analysis, Dim, StoredTensor, ValueKind, shape_str};
use crate::util::fmt::thousands;

/// What the table view shows beyond the default.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// Show the N nodes with the most MACs.
    pub per_op: Option<usize>,
    /// List every parameter tensor and shape tensor.
    pub tensors: bool,
}

pub fn write_json(out: &mut impl Write, a: &Analysis) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, a)?;
    writeln!(out)
}

fn opt_shape(s: &Option<Vec<Dim>>) -> String {
    s.as_ref()
        .map(|s| shape_str(s))
        .unwrap_or_else(|| "?".into())
}

/// `4089184256` -> `4,089,184,256 (4.089 G)`.
fn big(v: u64) -> String {
    if v >= 1_000_000_000 {
        format!("{} ({:.3} G)", thousands(v), v as f64 / 1e9)
    } else if v >= 1_000_000 {
        format!("{} ({:.3} M)", thousands(v), v as f64 / 1e6)
    } else {
        thousands(v)
    }
}

pub fn write_tables(
    out: &mut impl Write,
    a: &Analysis,
    opts: &TableOptions,
) -> std::io::Result<()> {
    write_header(out, a)?;
    write_values(out, a)?;
    write_params(out, a)?;
    write_compute(out, a)?;
    write_levels(out, a)?;
    write_operators(out, a)?;
    if let Some(n) = opts.per_op {
        write_per_op(out, a, n)?;
    }
    if opts.tensors {
        write_tensors(out, a)?;
    }
    Ok(())
}

fn write_header(out: &mut impl Write, a: &Analysis) -> std::io::Result<()> {
    let m = &a.model;
    let opsets = m
        .opsets
        .iter()
        .map(|o| format!("{} {}", o.domain, o.version))
        .collect::<Vec<_>>()
        .join(", ");
    writeln!(out, "Model: {}", m.path)?;
    writeln!(
        out,
        "  file {} bytes · IR version {} · opset {} · producer {} {} · {} nodes ({} in the main graph)",
        thousands(m.file_bytes),
        m.ir_version,
        opsets,
        if m.producer_name.is_empty() {
            "(none)"
        } else {
            &m.producer_name
        },
        m.producer_version,
        m.node_count,
        m.main_graph_node_count
    )?;
    writeln!(out)?;
    Ok(())
}

/// The inputs and outputs, declared and resolved.
fn write_values(out: &mut impl Write, a: &Analysis) -> std::io::Result<()> {
    let mut t = table(&["", "name", "type", "declared shape", "resolved shape"]);
    for (kind, list) in [("input", &a.inputs), ("output", &a.outputs)] {
        for v in list {
            let ty = if v.kind == ValueKind::Tensor {
                v.elem_type.to_string()
            } else {
                v.kind.to_string()
            };
            t.add_row(vec![
                kind.to_string(),
                v.name.clone(),
                ty,
                opt_shape(&v.shape),
                opt_shape(&v.resolved_shape),
            ]);
        }
    }
    writeln!(out, "{t}\n")?;

    Ok(())
}

/// Table 1's measure: parameters by stored type.
fn write_params(out: &mut impl Write, a: &Analysis) -> std::io::Result<()> {
    let p = &a.params;
    let mut t = table(&[
        "parameters by stored type",
        "tensors",
        "elements",
        "bytes",
        "MB (10^6 B)",
    ]);
    for ty in &p.by_type {
        t.add_row(vec![
            ty.elem_type.to_string(),
            thousands(ty.tensors),
            thousands(ty.count),
            thousands(ty.bytes),
            format!("{:.3}", ty.bytes as f64 / 1e6),
        ]);
    }
    t.add_row(vec![
        "total".to_string(),
        thousands(p.tensors),
        thousands(p.count),
        thousands(p.bytes),
        format!("{:.3}", p.mb),
    ]);
    right(&mut t, &[1, 2, 3, 4]);
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "  Parameters = initializers + Constant-node tensors (subgraphs included), each once. \
         Not counted: {} shape tensor(s) ({} elements, {} bytes) that only feed shape inputs.",
        a.shape_tensors.tensors,
        thousands(a.shape_tensors.count),
        thousands(a.shape_tensors.bytes)
    )?;
    if p.external_tensors > 0 {
        writeln!(
            out,
            "  {} parameter tensor(s) stored in external data files.",
            p.external_tensors
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// Table 2's measure: MACs, FLOPs and other ops.
fn write_compute(out: &mut impl Write, a: &Analysis) -> std::io::Result<()> {
    let bound = if a.lower_bound { " (lower bound)" } else { "" };
    let mut t = table(&["compute, one inference at the resolved shapes", "value"]);
    match (a.macs, a.flops, a.other_ops) {
        (Some(macs), Some(flops), Some(other)) => {
            t.add_row(vec![
                format!("MACs (multiply-accumulates){bound}"),
                big(macs),
            ]);
            t.add_row(vec![format!("FLOPs = 2 × MACs{bound}"), big(flops)]);
            t.add_row(vec![
                format!("other ops (bias, norm, activation, pooling, ...){bound}"),
                big(other),
            ]);
        }
        _ => {
            let why = a.macs_unavailable.clone().unwrap_or_default();
            t.add_row(vec!["MACs".to_string(), format!("n/a: {why}")]);
            t.add_row(vec!["FLOPs".to_string(), format!("n/a: {why}")]);
        }
    }
    right(&mut t, &[1]);
    writeln!(out, "{t}\n")?;

    Ok(())
}

fn write_levels(out: &mut impl Write, a: &Analysis) -> std::io::Result<()> {
    let p = &a.params;
    let bound = if a.lower_bound { " (lower bound)" } else { "" };
    let mut t = table(&["level (T/CES draft)", "measure", "level"]);
    t.add_row(vec![
        "Table 1 — parameter size".to_string(),
        format!("{:.3} MB", p.mb),
        a.levels
            .params
            .map(|l| l.to_string())
            .unwrap_or_else(|| "n/a: no parameters".into()),
    ]);
    t.add_row(vec![
        "Table 2 — compute".to_string(),
        a.gflops
            .map(|g| format!("{g:.3} GFLOPs{bound}"))
            .unwrap_or_else(|| "n/a".into()),
        match (a.levels.flops, &a.macs_unavailable) {
            (Some(l), _) => l.to_string(),
            (None, Some(_)) => "n/a: input shapes needed".into(),
            (None, None) => "n/a: no FLOPs".into(),
        },
    ]);
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "  C1 >= 1000, C2 >= 100, C3 >= 10, C4 > 0 (MB = 10^6 bytes; G = 10^9 FLOPs).\n"
    )?;

    Ok(())
}

/// The operator histogram, what could not be counted, and the notes.
fn write_operators(out: &mut impl Write, a: &Analysis) -> std::io::Result<()> {
    let mut ops: Vec<(&String, &u64)> = a.op_histogram.iter().collect();
    ops.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
    let line = ops
        .iter()
        .map(|(op, n)| format!("{op} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    writeln!(out, "Operators: {line}")?;

    if !a.unsupported_ops.is_empty() {
        let list = a
            .unsupported_ops
            .iter()
            .map(|u| {
                let d = if u.domain.is_empty() {
                    String::new()
                } else {
                    format!("{}::", u.domain)
                };
                format!("{d}{} ({} nodes)", u.op_type, u.nodes)
            })
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(
            out,
            "Unsupported ops (no MACs rule; totals are a lower bound): {list}"
        )?;
    }
    if !a.unresolved_nodes.is_empty() {
        writeln!(out, "Unresolved nodes ({}):", a.unresolved_nodes.len())?;
        for u in a.unresolved_nodes.iter().take(10) {
            writeln!(out, "  {} ({}): {}", u.node, u.op_type, u.reason)?;
        }
        if a.unresolved_nodes.len() > 10 {
            writeln!(
                out,
                "  ... {} more (see --json)",
                a.unresolved_nodes.len() - 10
            )?;
        }
    }
    for n in &a.notes {
        writeln!(out, "Note: {n}")?;
    }

    Ok(())
}

/// The `n` nodes with the most MACs.
fn write_per_op(out: &mut impl Write, a: &Analysis, n: usize) -> std::io::Result<()> {
    writeln!(out)?;
    let mut t = table(&[
        "node",
        "op",
        "MACs",
        "% of total",
        "other ops",
        "inputs",
        "outputs",
    ]);
    let total = a.macs.unwrap_or(0).max(1) as f64;
    for c in a.per_op.iter().take(n) {
        let name = if c.graph == "main" {
            c.node.clone()
        } else {
            format!("{}/{}", c.graph, c.node)
        };
        let name = if c.multiplier > 1 {
            format!("{name} (×{})", c.multiplier)
        } else {
            name
        };
        t.add_row(vec![
            name,
            c.op_type.clone(),
            thousands(c.macs),
            format!("{:.2}", 100.0 * c.macs as f64 / total),
            thousands(c.other_ops),
            c.input_shapes.join(", "),
            c.output_shapes.join(", "),
        ]);
    }
    right(&mut t, &[2, 3, 4]);
    writeln!(
        out,
        "Top {} of {} counted nodes by MACs:\n",
        n.min(a.per_op.len()),
        a.per_op.len()
    )?;
    writeln!(out, "{t}")?;
    Ok(())
}

/// Every parameter tensor and shape tensor.
fn write_tensors(out: &mut impl Write, a: &Analysis) -> std::io::Result<()> {
    writeln!(out)?;
    let mut t = table(&[
        "parameter tensor",
        "type",
        "shape",
        "elements",
        "bytes",
        "source",
        "graph",
    ]);
    for p in &a.params.list {
        t.add_row(tensor_row(p));
    }
    writeln!(out, "{t}\n")?;
    let mut t = table(&[
        "shape tensor (not a parameter)",
        "type",
        "shape",
        "elements",
        "bytes",
        "source",
        "graph",
    ]);
    for s in &a.shape_tensors.list {
        t.add_row(tensor_row(s));
    }
    writeln!(out, "{t}")?;
    Ok(())
}

fn tensor_row(s: &StoredTensor) -> Vec<String> {
    vec![
        s.name.clone(),
        s.elem_type.to_string(),
        format!("{:?}", s.dims),
        thousands(s.count),
        thousands(s.bytes),
        s.source.to_string(),
        s.graph.clone(),
    ]
}

/// `inspect` of a TorchScript model.
pub fn write_torchscript(
    o: &mut dyn Write,
    r: &crate::report::schema::inspect::TorchScriptInspection,
) -> std::io::Result<()> {
    writeln!(o, "Model:      {} (TorchScript)", r.model)?;
    writeln!(o, "SHA-256:    {}", r.model_sha256)?;
    writeln!(
        o,
        "Inputs:     {}",
        if r.inputs.is_empty() {
            "input_0, ... (forward's arguments not found)".to_string()
        } else {
            r.inputs.join(", ")
        }
    )?;
    writeln!(
        o,
        "Parameters: {} ({} bytes, {:.3} MB) → Table 1 {}",
        r.parameters,
        r.parameter_bytes,
        r.parameter_mb,
        r.size_level
            .map(|l| l.to_string())
            .unwrap_or_else(|| "n/a".into())
    )?;
    for d in &r.by_dtype {
        writeln!(
            o,
            "  {:<10} {} tensors, {} parameters, {} bytes",
            d.kind, d.tensors, d.params, d.bytes
        )?;
    }
    writeln!(o, "FLOPs:      {}", r.flops)
}
