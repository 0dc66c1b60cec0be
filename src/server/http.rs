//! The HTTP side of `acceval serve`: the v2 routes, the API-key check, and one inference
//! request from its head to its response (admission, body, decode, match, queue, encode).
//! Every error is `{"error": "..."}` with the status Triton would give.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::{App, Job, Served, auth, body};
use crate::data::inputs::InputSpec;
use crate::model::tensor::HostTensor;
use crate::protocol::kserve;

/// An error answer: its status, message, and whether the connection must close (the body
/// was not read to its end).
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    close: bool,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            close: false,
        }
    }

    /// Closes the connection after the answer.
    pub fn closing(mut self) -> ApiError {
        self.close = true;
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            kserve::error_body(&self.message),
        )
            .into_response();
        if self.close {
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        r
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, msg)
}

fn unavailable(msg: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, msg)
}

/// After the stop signal: the connection closes with the answer, so the client's next
/// request goes elsewhere.
fn draining() -> ApiError {
    unavailable(
        "the server is shutting down (draining the requests in flight); send to another instance",
    )
    .closing()
}

/// The routes, with the API-key check in front when the server has a key.
pub fn router(app: Arc<App>) -> Router {
    let r = Router::new()
        .route("/v2", get(server_metadata))
        .route("/v2/health/live", get(|| async { StatusCode::OK }))
        .route("/v2/health/ready", get(server_ready))
        .route("/v2/models/{model}", get(model_metadata))
        .route(
            "/v2/models/{model}/versions/{version}",
            get(model_metadata_v),
        )
        .route("/v2/models/{model}/ready", get(model_ready))
        .route(
            "/v2/models/{model}/versions/{version}/ready",
            get(model_ready_v),
        )
        .route("/v2/models/{model}/infer", post(infer))
        .route("/v2/models/{model}/versions/{version}/infer", post(infer_v))
        .route("/metrics", get(metrics_text))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such endpoint; see /v2") });
    let r = if app.api_key.is_some() {
        r.layer(middleware::from_fn_with_state(Arc::clone(&app), authorize))
    } else {
        r
    };
    r.with_state(app)
}

async fn authorize(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    if let Some(key) = &app.api_key
        && !auth::is_open(req.uri().path())
    {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if !key.allows(given) {
            let mut r = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this server needs its API key: send 'Authorization: Bearer <key>'",
            )
            .closing()
            .into_response();
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    next.run(req).await
}

async fn server_metadata(State(app): State<Arc<App>>) -> Response {
    let engine = app.engine.lock().unwrap_or_else(|p| p.into_inner()).clone();
    axum::Json(kserve::ServerMetadata {
        engine: &engine,
        extensions: &["binary_tensor_data"],
        name: "acceval",
        version: env!("CARGO_PKG_VERSION"),
    })
    .into_response()
}

async fn server_ready(State(app): State<Arc<App>>) -> StatusCode {
    if app.ready.load(Ordering::SeqCst) && !app.draining.load(Ordering::SeqCst) {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

fn check_model(app: &App, model: &str, version: Option<&str>) -> Result<(), ApiError> {
    if model != app.served.name {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "model '{model}' is not served here; this server serves '{}'",
                app.served.name
            ),
        ));
    }
    if let Some(v) = version
        && v != "1"
    {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("model '{model}' has no version '{v}'; it has version 1"),
        ));
    }
    Ok(())
}

fn tensor_meta(s: &InputSpec, batched: bool) -> kserve::TensorMetadata<'_> {
    let shape: Vec<i64> = s
        .dims
        .iter()
        .enumerate()
        .map(|(k, d)| {
            if batched && k == 0 {
                -1
            } else {
                d.known().unwrap_or(-1)
            }
        })
        .collect();
    kserve::TensorMetadata {
        datatype: kserve::datatype_name(s.dtype),
        name: &s.name,
        shape,
    }
}

fn metadata(app: &App, model: &str, version: Option<&str>) -> Result<Response, ApiError> {
    check_model(app, model, version)?;
    let batched = app.served.max_batch > 1;
    let s = &app.served;
    Ok(axum::Json(kserve::ModelMetadata {
        inputs: s.inputs.iter().map(|t| tensor_meta(t, batched)).collect(),
        name: &s.name,
        outputs: s.outputs.iter().map(|t| tensor_meta(t, batched)).collect(),
        platform: "onnx_onnxv1",
        versions: &["1"],
    })
    .into_response())
}

async fn model_metadata(
    State(app): State<Arc<App>>,
    UrlPath(m): UrlPath<String>,
) -> Result<Response, ApiError> {
    metadata(&app, &m, None)
}

async fn model_metadata_v(
    State(app): State<Arc<App>>,
    UrlPath((m, v)): UrlPath<(String, String)>,
) -> Result<Response, ApiError> {
    metadata(&app, &m, Some(&v))
}

fn ready_of(app: &App, m: &str, v: Option<&str>) -> Result<StatusCode, ApiError> {
    check_model(app, m, v)?;
    if app.draining.load(Ordering::SeqCst) {
        Err(draining())
    } else if app.ready.load(Ordering::SeqCst) {
        Ok(StatusCode::OK)
    } else {
        Err(unavailable("the model is still loading"))
    }
}

async fn model_ready(
    State(app): State<Arc<App>>,
    UrlPath(m): UrlPath<String>,
) -> Result<StatusCode, ApiError> {
    ready_of(&app, &m, None)
}

async fn model_ready_v(
    State(app): State<Arc<App>>,
    UrlPath((m, v)): UrlPath<(String, String)>,
) -> Result<StatusCode, ApiError> {
    ready_of(&app, &m, Some(&v))
}

async fn metrics_text(State(app): State<Arc<App>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.metrics.render(app.inflight.load(Ordering::Relaxed)),
    )
        .into_response()
}

async fn infer(
    State(app): State<Arc<App>>,
    UrlPath(m): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    infer_any(app, m, None, headers, body).await
}

async fn infer_v(
    State(app): State<Arc<App>>,
    UrlPath((m, v)): UrlPath<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    infer_any(app, m, Some(v), headers, body).await
}

/// Counts the in-flight request for as long as it lives.
struct Admitted<'a>(&'a AtomicUsize);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn infer_any(
    app: Arc<App>,
    model: String,
    version: Option<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let t0 = Instant::now();
    let r = infer_inner(&app, &model, version.as_deref(), &headers, body).await;
    let resp = match r {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    app.metrics.request(resp.status().as_u16(), t0.elapsed());
    resp
}

/// Takes a place among the requests in flight, or says the server is busy. Before the body
/// is read, so a busy server does not buffer what it will refuse.
fn admit(app: &App) -> Result<Admitted<'_>, ApiError> {
    if app.draining.load(Ordering::SeqCst) {
        return Err(draining());
    }
    if !app.ready.load(Ordering::SeqCst) {
        return Err(unavailable("the model is still loading"));
    }
    let n = app.inflight.fetch_add(1, Ordering::SeqCst);
    let admitted = Admitted(&app.inflight);
    if n >= app.max_inflight {
        return Err(unavailable(format!(
            "server busy: {n} requests in flight ({} {})",
            (app.body_limits.names)(super::Setting::MaxInflight),
            app.max_inflight
        ))
        .closing());
    }
    Ok(admitted)
}

async fn infer_inner(
    app: &App,
    model: &str,
    version: Option<&str>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    check_model(app, model, version).map_err(ApiError::closing)?;
    let _admitted = admit(app)?;
    let (bytes, mut lease) = body::read(body, headers, &app.body_limits, &app.budget).await?;
    let header_len = headers
        .get(kserve::HEADER_LENGTH)
        .map(|v| {
            v.to_str()
                .map_err(|_| bad("Inference-Header-Content-Length is not text"))
        })
        .transpose()?;
    let req = kserve::decode_request(&bytes, header_len).map_err(|e| bad(e.to_string()))?;
    // The body and its tensors are both alive here; then only the tensors.
    let decoded = req.tensor_bytes();
    if !lease.resize(bytes.len().saturating_add(decoded)) {
        return Err(body::over_budget(
            &app.budget,
            bytes.len() + decoded,
            app.body_limits.names,
        ));
    }
    drop(bytes);
    lease.resize(decoded);
    let kserve::Request {
        id,
        inputs,
        outputs,
        binary_output,
    } = req;
    let wanted = wanted_outputs(&app.served, outputs.as_deref(), binary_output)?;
    let (inputs, rows) = match_inputs(&app.served, inputs)?;
    let outputs = run_job(app, inputs, rows).await?;
    let chosen: Vec<(&HostTensor, bool)> = wanted
        .iter()
        .filter_map(|&(k, bin)| {
            let name = &app.served.outputs[k].name;
            outputs.iter().find(|o| &o.name == name).map(|o| (o, bin))
        })
        .collect();
    Ok(respond(kserve::encode_response(
        &app.served.name,
        id.as_deref(),
        &chosen,
    )))
}

/// The outputs to send, by index into the model's outputs, each with whether it goes binary.
fn wanted_outputs(
    served: &Served,
    asked: Option<&[(String, Option<bool>)]>,
    binary_output: bool,
) -> Result<Vec<(usize, bool)>, ApiError> {
    let Some(list) = asked else {
        return Ok((0..served.outputs.len())
            .map(|k| (k, binary_output))
            .collect());
    };
    list.iter()
        .map(|(name, bin)| {
            let k = served
                .outputs
                .iter()
                .position(|o| &o.name == name)
                .ok_or_else(|| {
                    bad(format!(
                        "unknown output '{name}'; the model's outputs are {}",
                        served
                            .outputs
                            .iter()
                            .map(|o| o.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
            Ok((k, bin.unwrap_or(binary_output)))
        })
        .collect()
}

/// Queues the inputs for a model instance and waits for its outputs.
async fn run_job(
    app: &App,
    inputs: Vec<HostTensor>,
    rows: usize,
) -> Result<Vec<HostTensor>, ApiError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job = Job {
        inputs,
        rows,
        enqueued: Instant::now(),
        reply: tx,
    };
    {
        let q = app.jobs.lock().unwrap_or_else(|p| p.into_inner());
        let Some(q) = q.as_ref() else {
            return Err(unavailable("the server is shutting down"));
        };
        q.send(job)
            .map_err(|_| unavailable("the model instances have stopped"))?;
    }
    rx.await
        .map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the model instance dropped the request",
            )
        })?
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e))
}

fn respond(body: kserve::Body) -> Response {
    let mut resp = Response::new(Body::from(body.bytes));
    let h = resp.headers_mut();
    match body.header_len {
        Some(n) => {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            h.insert(kserve::HEADER_LENGTH, HeaderValue::from(n));
        }
        None => {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
    }
    resp
}

/// Puts the request's inputs in the model's order, checking names, types and shapes.
fn match_inputs(
    served: &Served,
    given: Vec<kserve::RequestInput>,
) -> Result<(Vec<HostTensor>, usize), ApiError> {
    let names = || {
        served
            .inputs
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for g in &given {
        if !served.inputs.iter().any(|s| s.name == g.name) {
            return Err(bad(format!(
                "unknown input '{}'; the model's inputs are {}",
                g.name,
                names()
            )));
        }
    }
    let mut given: Vec<Option<kserve::RequestInput>> = given.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(served.inputs.len());
    let mut rows = None;
    for (spec, shape) in served.inputs.iter().zip(&served.shapes) {
        let g = given
            .iter_mut()
            .find(|g| g.as_ref().is_some_and(|g| g.name == spec.name))
            .and_then(|g| g.take())
            .ok_or_else(|| {
                bad(format!(
                    "input '{}' is missing; the model's inputs are {}",
                    spec.name,
                    names()
                ))
            })?;
        let want = kserve::datatype_name(spec.dtype);
        if g.datatype != want {
            return Err(bad(format!(
                "input '{}': the model expects {want}, the request has {}",
                spec.name, g.datatype
            )));
        }
        check_shape(served, spec, shape, &g.shape)?;
        let r = g.shape.first().copied().unwrap_or(1);
        if *rows.get_or_insert(r) != r {
            return Err(bad(
                "the inputs disagree on the batch size (their first dimension)",
            ));
        }
        out.push(HostTensor {
            name: spec.name.clone(),
            data: g.data,
        });
    }
    Ok((out, rows.unwrap_or(1)))
}

fn check_shape(
    served: &Served,
    spec: &InputSpec,
    shape: &[usize],
    got: &[usize],
) -> Result<(), ApiError> {
    let ok = if served.max_batch > 1 {
        got.len() == shape.len()
            && !got.is_empty()
            && got[1..] == shape[1..]
            && (1..=served.max_batch).contains(&got[0])
    } else {
        got == shape
    };
    if ok {
        return Ok(());
    }
    let expect = if served.max_batch > 1 {
        format!(
            "[1..={}{}]",
            served.max_batch,
            shape
                .iter()
                .skip(1)
                .map(|d| format!(", {d}"))
                .collect::<String>()
        )
    } else {
        format!("{shape:?}")
    };
    Err(bad(format!(
        "input '{}': unexpected shape {got:?}, the model expects {expect}",
        spec.name
    )))
}
