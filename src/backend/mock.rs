//! The `mock` backend: a deterministic stand-in for testing the measurement harness, never
//! for certification. It reads the model's inputs and outputs, and each run waits a fixed
//! time (`--ep-option forward_ms=2.5`, spinning on the monotonic clock rather than sleeping,
//! so the delay is exact to microseconds) and returns zero-filled outputs of the declared
//! shapes. With `forward_ms=0` it measures the harness's own cost. `hold_mb=N` makes each
//! session hold N MB (10^6 bytes) of written host memory, as a model's weights would (for
//! testing the pipelined run's instance-memory check).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use ndarray::ArrayD;

use super::describe::{AdaptationRoute, DeviceClass, PeakSource, Traits};
use super::{
    Availability, Backend, BackendError, BackendSettings, BackendSpec, LoadOptions, LoadTimings,
    Placement, Session, SessionInfo,
};
use crate::model::tensor::{HostTensor, TensorData};

pub struct MockBackend;

pub static MOCK: MockBackend = MockBackend;

struct MockSession {
    info: SessionInfo,
    timings: LoadTimings,
    delay: Duration,
    outputs: Vec<HostTensor>,
    /// `hold_mb`'s memory, written so that it is resident; only held.
    _held: Vec<u8>,
}

fn zeros(elem_type: &str, shape: &[usize]) -> Option<TensorData> {
    let dim = ndarray::IxDyn(shape);
    Some(match elem_type {
        "FP32" => TensorData::F32(ArrayD::zeros(dim)),
        "FP64" => TensorData::F64(ArrayD::zeros(dim)),
        "INT64" => TensorData::I64(ArrayD::zeros(dim)),
        "INT32" => TensorData::I32(ArrayD::zeros(dim)),
        "INT8" => TensorData::I8(ArrayD::zeros(dim)),
        "UINT8" => TensorData::U8(ArrayD::zeros(dim)),
        "BOOL" => TensorData::Bool(ArrayD::from_elem(dim, false)),
        _ => return None,
    })
}

impl Backend for MockBackend {
    fn name(&self) -> &'static str {
        "mock"
    }
    fn summary(&self) -> &'static str {
        "test backend: zero outputs after a fixed delay (--ep-option forward_ms=X); for harness tests, not certification"
    }
    fn probe(&self) -> Availability {
        Availability::Available {
            detail: "always (a test stand-in; its outputs are zeros)".into(),
        }
    }
    fn describe(&self, _b: &BackendSettings) -> Option<Traits> {
        Some(Traits {
            class: DeviceClass::Emulated,
            route: AdaptationRoute::None,
            route_detail: "a test stand-in that returns zeros: no device",
            plain_cpu: false,
            reports_cpu_fallback: false,
            sensor: None,
            peak: PeakSource::Unknown(
                "the mock backend computes nothing (it spins for --ep-option forward_ms)",
            ),
            cross_check: None,
        })
    }
    fn load(
        &self,
        model: &Path,
        spec: &BackendSpec,
        opts: &LoadOptions,
    ) -> Result<Box<dyn Session>, BackendError> {
        let t = Instant::now();
        let err = |reason: String| BackendError::NotAvailable {
            backend: spec.to_string(),
            reason,
        };
        let mut delay_ms = 0.0f64;
        let mut hold_mb = 0u64;
        for (k, v) in &opts.ep_options {
            match k.as_str() {
                "forward_ms" => {
                    delay_ms = v
                        .parse()
                        .ok()
                        .filter(|d: &f64| d.is_finite() && *d >= 0.0)
                        .ok_or_else(|| {
                            err(format!("forward_ms={v}: give milliseconds >= 0, e.g. 2.5"))
                        })?
                }
                "hold_mb" => {
                    hold_mb = v
                        .parse()
                        .ok()
                        .filter(|m: &u64| *m <= 1 << 20)
                        .ok_or_else(|| {
                            err(format!(
                                "hold_mb={v}: give whole megabytes, at most 1048576"
                            ))
                        })?
                }
                other => {
                    return Err(err(format!(
                        "unknown option '{other}'; the mock backend takes forward_ms=MS and hold_mb=MB"
                    )));
                }
            }
        }
        let shapes: Vec<crate::model::InputShape> = opts
            .input_shapes
            .iter()
            .map(|(n, s)| crate::model::InputShape {
                name: n.clone(),
                dims: s.iter().map(|&d| d as i64).collect(),
            })
            .collect();
        let a = crate::model::analyse(model, &shapes).map_err(|e| err(format!("{e:#}")))?;
        let mut outputs = Vec::new();
        for o in &a.outputs {
            let shape: Option<Vec<usize>> = o.resolved_shape.as_ref().and_then(|s| {
                s.iter()
                    .map(|d| d.known().map(|v| v.max(0) as usize))
                    .collect()
            });
            let shape = shape.ok_or_else(|| {
                err(format!(
                    "output '{}' has no static shape after inference",
                    o.name
                ))
            })?;
            let data = zeros(&o.elem_type, &shape).ok_or_else(|| {
                err(format!(
                    "output '{}' is {}, which the mock cannot fill",
                    o.name, o.elem_type
                ))
            })?;
            outputs.push(HostTensor {
                name: o.name.clone(),
                data,
            });
        }
        let held_bytes = hold_mb as usize * 1_000_000;
        crate::util::limits::tensor_bytes("the mock's hold_mb", &[held_bytes], 1)
            .map_err(|e| err(e.to_string()))?;
        let mut options = BTreeMap::new();
        options.insert("forward_ms".into(), format!("{delay_ms}"));
        if hold_mb > 0 {
            options.insert("hold_mb".into(), format!("{hold_mb}"));
        }
        Ok(Box::new(MockSession {
            info: SessionInfo {
                backend: spec.to_string(),
                engine: "mock (zero outputs after a fixed delay)".into(),
                device: "none".into(),
                library: None,
                options,
                emulated: None,
                copies: None,
            },
            timings: LoadTimings {
                convert_ms: None,
                convert_note: Some("the mock converts nothing".into()),
                init_ms: t.elapsed().as_secs_f64() * 1e3,
            },
            delay: Duration::from_secs_f64(delay_ms / 1e3),
            outputs,
            _held: vec![1u8; held_bytes],
        }))
    }
}

impl Session for MockSession {
    fn info(&self) -> &SessionInfo {
        &self.info
    }
    fn timings(&self) -> &LoadTimings {
        &self.timings
    }
    fn run(&mut self, _inputs: &[HostTensor]) -> Result<Vec<HostTensor>, BackendError> {
        let t = Instant::now();
        while t.elapsed() < self.delay {
            std::hint::spin_loop();
        }
        Ok(self.outputs.clone())
    }
    fn synchronize(&mut self) -> Result<(), BackendError> {
        Ok(())
    }
    fn placement(&mut self) -> Result<Placement, BackendError> {
        Ok(Placement {
            source: "mock: every node is nowhere".into(),
            nodes: Vec::new(),
        })
    }
}
