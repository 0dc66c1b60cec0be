//! Per-node profile of a model on tract, loaded exactly as acceval's `cpu` backend loads it
//! (`acceval::backend::tract::cpu_graph`), on a rayon pool of `--threads`.
//! A developer's tool for finding what dominates tract's forward time:
//!
//!     cargo run --release --example tract_profile -- MODEL.onnx [--shape NAME:1x3x640x640]
//!         [--threads N] [--runs N] [--top N]
//!
//! Prints, over the steady runs (after one warm-up), the time per optimised tract node and
//! per operator, largest first, with each node's share of the forward time.

use std::collections::BTreeMap;
use std::time::Instant;

use tract_onnx::prelude::multithread::Executor;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::plan::SimpleState;

struct Args {
    model: String,
    shapes: Vec<(String, Vec<usize>)>,
    threads: usize,
    runs: usize,
    top: usize,
}

fn args() -> TractResult<Args> {
    let mut a = Args {
        model: String::new(),
        shapes: Vec::new(),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        runs: 10,
        top: 25,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || {
            it.next()
                .ok_or_else(|| anyhow::anyhow!("{x} needs a value"))
        };
        match x.as_str() {
            "--shape" => {
                let v = val()?;
                let (n, s) = v
                    .rsplit_once(':')
                    .ok_or_else(|| anyhow::anyhow!("NAME:SHAPE"))?;
                let dims = s.split('x').map(|d| d.parse()).collect::<Result<_, _>>()?;
                a.shapes.push((n.to_string(), dims));
            }
            "--threads" => a.threads = val()?.parse()?,
            "--runs" => a.runs = val()?.parse()?,
            "--top" => a.top = val()?.parse()?,
            _ => a.model = x,
        }
    }
    if a.model.is_empty() {
        anyhow::bail!(
            "usage: tract_profile MODEL.onnx [--shape NAME:DxD] [--threads N] [--runs N]"
        );
    }
    Ok(a)
}

fn main() -> TractResult<()> {
    let a = args()?;
    let t = Instant::now();
    let typed = acceval::backend::tract::cpu_graph(std::path::Path::new(&a.model), &a.shapes)
        .map_err(|e| anyhow::anyhow!(e))?;
    eprintln!(
        "loaded and optimised as the cpu backend does in {:.1} ms, {} nodes",
        t.elapsed().as_secs_f64() * 1e3,
        typed.nodes().len()
    );
    let executor = (a.threads > 1).then(|| Executor::multithread(a.threads));
    let plan = typed.into_runnable_with_options(&RunOptions {
        executor,
        ..Default::default()
    })?;
    let inputs: TVec<TValue> = plan
        .model()
        .input_outlets()?
        .iter()
        .map(|o| {
            let f = plan.model().outlet_fact(*o)?;
            let shape: Vec<usize> = f
                .shape
                .as_concrete()
                .map(|s| s.to_vec())
                .unwrap_or_default();
            let n: usize = shape.iter().product();
            let t = tract_ndarray::ArrayD::from_shape_vec(
                shape,
                (0..n)
                    .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
                    .collect(),
            )?;
            Ok(Tensor::from(t)
                .cast_to_dt(f.datum_type)?
                .into_owned()
                .into())
        })
        .collect::<TractResult<_>>()?;
    let mut state = SimpleState::new(&plan)?;
    state.run(inputs.clone())?;
    let mut per_node: BTreeMap<usize, f64> = BTreeMap::new();
    let t = Instant::now();
    for _ in 0..a.runs {
        state.run_plan_with_eval(inputs.clone(), |ctx, st, node, input| {
            let t = Instant::now();
            let r = tract_onnx::tract_core::plan::eval(ctx, st, node, input);
            *per_node.entry(node.id).or_default() += t.elapsed().as_secs_f64();
            r
        })?;
    }
    let wall = t.elapsed().as_secs_f64() / a.runs as f64;
    let total: f64 = per_node.values().sum::<f64>() / a.runs as f64;
    println!(
        "{}: {:.3} ms per forward ({} threads), {:.3} ms inside nodes",
        a.model,
        wall * 1e3,
        a.threads,
        total * 1e3
    );
    let model = plan.model();
    let mut by_op: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let mut rows: Vec<(f64, usize)> = per_node
        .iter()
        .map(|(&id, &t)| (t / a.runs as f64, id))
        .collect();
    rows.sort_by(|x, y| y.0.total_cmp(&x.0));
    for (t, id) in &rows {
        let e = by_op
            .entry(model.node(*id).op().name().to_string())
            .or_default();
        e.0 += t;
        e.1 += 1;
    }
    println!("\nper operator:");
    let mut ops: Vec<_> = by_op.into_iter().collect();
    ops.sort_by(|x, y| y.1.0.total_cmp(&x.1.0));
    for (op, (t, n)) in ops {
        println!(
            "  {:>9.3} ms {:>5.1} %  {:>4}×  {op}",
            t * 1e3,
            100.0 * t / total,
            n
        );
    }
    println!("\ntop {} nodes:", a.top);
    for (t, id) in rows.iter().take(a.top) {
        let n = model.node(*id);
        let facts = model.node_output_facts(*id)?;
        println!(
            "  {:>9.3} ms {:>5.1} %  {}  {}  -> {:?}",
            t * 1e3,
            100.0 * t / total,
            n.op().name(),
            n.name,
            facts.first().map(|f| format!("{f:?}"))
        );
    }
    Ok(())
}
