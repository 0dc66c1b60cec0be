//! KServe v2 inference as a load [`Endpoint`]: POST prepared bodies to
//! `/v2/models/{model}/infer` in turn, and read each response to its end without keeping it
//! (a body over `max_response_bytes` fails as `response_too_large`; an error body is kept
//! up to `max_error_bytes` for its message). The bodies come from a file, from a zoo
//! model's input set, or are seeded tensors of the shapes the server's metadata declares.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};

use super::Error;
use super::client::{self, Client};
use super::driver::{Endpoint, Failure};
use super::settings::{Setting, SettingsError};
use crate::model::InputShape;
use crate::model::tensor::{HostTensor, TensorData};
use crate::protocol::kserve;
use crate::report::schema::qps::FailureKind;

/// What the inference requests carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inputs {
    /// A request body file (v2 JSON) sent as is.
    pub input_file: Option<PathBuf>,
    /// Shapes for generated inputs with dynamic dims.
    pub shapes: Vec<InputShape>,
    /// Tensors in Triton's binary extension instead of JSON.
    pub binary: bool,
    /// Seed of generated tensors.
    pub seed: u64,
}

/// Caps on what the client reads of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseCaps {
    /// A successful response body, bytes.
    pub max_response_bytes: usize,
    /// An error body kept for its message, bytes (the rest is not read).
    pub max_error_bytes: usize,
}

/// One prepared request body.
#[derive(Debug, Clone)]
pub struct Body {
    pub bytes: Bytes,
    /// `Inference-Header-Content-Length` (binary tensors).
    pub header_len: Option<usize>,
}

/// The inference endpoint of one model.
pub struct Infer {
    uri: hyper::Uri,
    bodies: Vec<Body>,
    caps: ResponseCaps,
}

impl Infer {
    pub fn new(uri: hyper::Uri, bodies: Vec<Body>, caps: ResponseCaps) -> Infer {
        Infer { uri, bodies, caps }
    }

    /// Sends the first body once and checks the answer decodes as a v2 inference response
    /// (a server answering 200 with something else would otherwise count as fast
    /// successes). Returns its outputs, e.g. `y [1, 3]`.
    pub async fn check_first(&self, client: &Client, timeout: Duration) -> Result<String, String> {
        let req = self.request(0).map_err(|f| f.message)?;
        let work = async {
            let r = client
                .send(req)
                .await
                .map_err(|(k, m)| format!("{k}: {m}"))?;
            let status = r.status();
            let hl = header_length(&r);
            let cap = if status.is_success() {
                self.caps.max_response_bytes
            } else {
                self.caps.max_error_bytes
            };
            let body = client::collect(r.into_body(), cap)
                .await
                .map_err(|e| format!("{}: {e}", FailureKind::ConnectionClosed))?;
            if !status.is_success() {
                return Err(format!(
                    "{}: {}",
                    FailureKind::Http(status.as_u16()),
                    client::error_text(&body)
                ));
            }
            if body.cut {
                return Err(format!(
                    "{}: over the max_response_bytes cap of {cap}",
                    FailureKind::ResponseTooLarge
                ));
            }
            let outs = kserve::decode_response(&body.bytes, hl.as_deref()).map_err(|e| {
                format!("the server answered 200 but not with a v2 inference response: {e}")
            })?;
            Ok(outs
                .iter()
                .map(|t| format!("{} {:?}", t.name, t.data.shape()))
                .collect::<Vec<_>>()
                .join(", "))
        };
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or_else(|_| Err(format!("timeout: no response within {timeout:?}")))
    }
}

fn header_length(r: &hyper::Response<Incoming>) -> Option<String> {
    r.headers()
        .get(kserve::HEADER_LENGTH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

impl Endpoint for Infer {
    type Output = ();

    fn request(&self, index: usize) -> Result<hyper::Request<Full<Bytes>>, Failure> {
        let b = &self.bodies[index % self.bodies.len()];
        let mut req = hyper::Request::post(self.uri.clone());
        req = match b.header_len {
            Some(n) => req
                .header("content-type", "application/octet-stream")
                .header(kserve::HEADER_LENGTH, n),
            None => req.header("content-type", "application/json"),
        };
        req.body(Full::new(b.bytes.clone()))
            .map_err(|e| Failure::new(FailureKind::Other, format!("invalid request: {e}")))
    }

    async fn read(&self, r: hyper::Response<Incoming>, _origin: Instant) -> Result<(), Failure> {
        let status = r.status();
        let closed =
            |e: client::BodyError| Failure::new(FailureKind::ConnectionClosed, e.to_string());
        if !status.is_success() {
            let body = client::collect(r.into_body(), self.caps.max_error_bytes)
                .await
                .map_err(closed)?;
            return Err(Failure::new(
                FailureKind::Http(status.as_u16()),
                client::error_text(&body),
            ));
        }
        let cap = self.caps.max_response_bytes as u64;
        match client::drain(r.into_body(), cap).await.map_err(closed)? {
            Some(_) => Ok(()),
            None => Err(Failure::new(
                FailureKind::ResponseTooLarge,
                format!("the response body is over the max_response_bytes cap of {cap}"),
            )),
        }
    }
}

/// The request bodies and a description of them: a file as is; the zoo model's input set;
/// or seeded tensors of the shapes the server's model metadata declares.
pub async fn bodies(
    inputs: &Inputs,
    base: &str,
    model: &str,
    client: &Client,
    timeout: Duration,
) -> Result<(Vec<Body>, String), Error> {
    let (bodies, text) = if let Some(f) = &inputs.input_file {
        from_file(f)?
    } else if let Some((entry, _)) = crate::zoo::parse_name(&crate::zoo::canonical_name(model)) {
        from_zoo(&entry, model, inputs.binary)?
    } else {
        let url = format!("{base}/v2/models/{model}");
        let meta = tokio::time::timeout(timeout, client.get(&url, 16 << 20))
            .await
            .map_err(|_| format!("no answer within {timeout:?}"))
            .and_then(|r| r.map_err(|e| e.to_string()))
            .and_then(|(status, body)| {
                if !(200..300).contains(&status) {
                    return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
                }
                serde_json::from_slice::<serde_json::Value>(&body).map_err(|e| e.to_string())
            })
            .map_err(|why| Error::NoMetadata {
                model: model.to_string(),
                url: url.clone(),
                why,
            })?;
        from_metadata(&meta, &url, inputs)?
    };
    let bodies = bodies
        .into_iter()
        .map(|b| Body {
            bytes: Bytes::from(b.bytes),
            header_len: b.header_len,
        })
        .collect();
    Ok((bodies, text))
}

fn encoding(binary: bool) -> &'static str {
    if binary {
        "binary tensors"
    } else {
        "JSON tensors"
    }
}

fn from_file(f: &Path) -> Result<(Vec<kserve::Body>, String), Error> {
    let bad = |why: String| SettingsError::bad(Setting::InputFile, f.display(), why);
    let bytes = std::fs::read(f).map_err(|e| bad(format!("cannot read it: {e}")))?;
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .map_err(|e| bad(format!("is not a JSON request body: {e}")))?;
    Ok((
        vec![kserve::Body {
            bytes,
            header_len: None,
        }],
        format!("the request body in {}", f.display()),
    ))
}

fn from_zoo(
    entry: &crate::zoo::Entry,
    model: &str,
    binary: bool,
) -> Result<(Vec<kserve::Body>, String), Error> {
    let path = crate::zoo::resolve(Path::new(model))?;
    let file = crate::model::onnx::OnnxFile::open(&path)?;
    let g = file.graph();
    let name = g
        .input
        .iter()
        .find(|i| !g.initializer.iter().any(|t| t.name == i.name))
        .map(|i| i.name.clone())
        .unwrap_or_default();
    let set = crate::zoo::input_set_tensors(entry)?;
    let bodies = set
        .iter()
        .map(|p| {
            let t = HostTensor {
                name: name.clone(),
                data: TensorData::F32(p.tensor.clone()),
            };
            kserve::encode_request(&[t], binary)
        })
        .collect::<Vec<_>>();
    let text = format!(
        "the input set of zoo model {} ({} requests, pre-processed as its task pipeline does, sent in turn; {})",
        entry.name,
        set.len(),
        encoding(binary)
    );
    Ok((bodies, text))
}

fn from_metadata(
    meta: &serde_json::Value,
    url: &str,
    inputs: &Inputs,
) -> Result<(Vec<kserve::Body>, String), Error> {
    let declared = meta["inputs"]
        .as_array()
        .ok_or_else(|| Error::MetadataInputs {
            url: url.to_string(),
        })?;
    let mut tensors = Vec::new();
    for (k, i) in declared.iter().enumerate() {
        let name = i["name"].as_str().unwrap_or_default().to_string();
        let dt = i["datatype"]
            .as_str()
            .and_then(kserve::parse_datatype)
            .ok_or_else(|| Error::MetadataType {
                url: url.to_string(),
                input: name.clone(),
                datatype: i["datatype"].to_string(),
            })?;
        let shape: Vec<usize> = match inputs.shapes.iter().find(|s| s.name == name) {
            Some(g) => g.dims.iter().map(|&d| d.max(0) as usize).collect(),
            None => i["shape"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| d.as_i64().filter(|&d| d >= 0).unwrap_or(1) as usize)
                .collect(),
        };
        let data = TensorData::seeded(dt, &shape, inputs.seed.wrapping_add(k as u64)).ok_or_else(
            || Error::CannotGenerate {
                input: name.clone(),
                datatype: kserve::datatype_name(dt).to_string(),
            },
        )?;
        tensors.push(HostTensor { name, data });
    }
    let text = format!(
        "seeded tensors (seed {}) of the shapes in the server's metadata: {}; {}",
        inputs.seed,
        tensors
            .iter()
            .map(|t| format!("{} {:?}", t.name, t.data.shape()))
            .collect::<Vec<_>>()
            .join(", "),
        encoding(inputs.binary)
    );
    Ok((vec![kserve::encode_request(&tensors, inputs.binary)], text))
}
