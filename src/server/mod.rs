//! `acceval serve`: one model on one backend behind the KServe v2 / Triton HTTP protocol.
//!
//! HTTP runs on tokio/axum; the model runs on `--instances` plain threads, each owning its
//! session (sessions are not `Send`), fed by one queue. With `--max-batch N` a thread joins
//! up to N queued requests into one run (waiting `--batch-timeout-us` for the batch to fill,
//! padding a partial batch to N rows) and splits the outputs again. Requests beyond
//! `--max-inflight` get 503 at once rather than queueing without bound; bodies beyond
//! `--max-body-mb` get 413. SIGINT/SIGTERM stop accepting, let in-flight requests finish,
//! then exit.

mod metrics;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::backend::{self, BackendSpec, LoadOptions};
use crate::data::inputs::{InputSpec, input_specs, output_specs};
use crate::model::shape::Dim;
use crate::model::tensor::{HostTensor, TensorData};
use crate::protocol::kserve;
pub use metrics::Metrics;

/// What `serve` needs, resolved from the command line (or set by `grade`).
#[derive(Debug, Clone)]
pub struct Config {
    pub model: PathBuf,
    pub name: String,
    pub backend: BackendSpec,
    pub load: LoadOptions,
    /// Concrete per-request shapes (batch included), in the model's input order.
    pub shapes: Vec<Vec<usize>>,
    pub instances: usize,
    pub max_batch: usize,
    pub batch_timeout: Duration,
    pub max_inflight: usize,
    pub max_body_bytes: usize,
}

/// The model as clients see it.
struct Served {
    name: String,
    inputs: Vec<InputSpec>,
    outputs: Vec<InputSpec>,
    /// Per-request input shapes; with batching the first dim may be 1..=max_batch.
    shapes: Vec<Vec<usize>>,
    max_batch: usize,
}

type Reply = Result<Vec<HostTensor>, String>;

struct Job {
    inputs: Vec<HostTensor>,
    rows: usize,
    enqueued: Instant,
    reply: tokio::sync::oneshot::Sender<Reply>,
}

struct App {
    served: Served,
    ready: AtomicBool,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    inflight: AtomicUsize,
    max_inflight: usize,
    metrics: Metrics,
    /// The engine, for the server metadata (set when the sessions are loaded).
    engine: Mutex<String>,
}

#[derive(Debug)]
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.0,
            [(header::CONTENT_TYPE, "application/json")],
            json!({"error": self.1}).to_string(),
        )
            .into_response()
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

/// Default port of `acceval serve` (Triton's HTTP port).
pub const DEFAULT_PORT: u16 = 8000;
/// Default µs the first request of a batch waits for others.
pub const DEFAULT_BATCH_TIMEOUT_US: u64 = 500;
/// Default requests admitted at once.
pub const DEFAULT_MAX_INFLIGHT: usize = 256;
/// Default largest request body, MB.
pub const DEFAULT_MAX_BODY_MB: f64 = 64.0;

/// What `serve` is asked for (from the command line, or built by `grade`).
#[derive(Debug, Clone)]
pub struct ServeSettings {
    pub backend: crate::backend::BackendSettings,
    /// A zoo name or an ONNX file.
    pub model: PathBuf,
    /// The name clients use [default: the zoo name or the file stem].
    pub name: Option<String>,
    pub shapes: Vec<crate::model::InputShape>,
    pub instances: usize,
    pub max_batch: usize,
    pub batch_timeout_us: u64,
    pub max_inflight: usize,
    pub max_body_mb: f64,
}

impl ServeSettings {
    /// `model` on `backend` with the defaults.
    pub fn new(model: PathBuf, backend: crate::backend::BackendSettings) -> ServeSettings {
        ServeSettings {
            backend,
            model,
            name: None,
            shapes: Vec::new(),
            instances: 1,
            max_batch: 1,
            batch_timeout_us: DEFAULT_BATCH_TIMEOUT_US,
            max_inflight: DEFAULT_MAX_INFLIGHT,
            max_body_mb: DEFAULT_MAX_BODY_MB,
        }
    }
}

/// Resolves the settings into a [`Config`].
pub fn config(args: &ServeSettings) -> anyhow::Result<Config> {
    if args.instances == 0 || args.max_batch == 0 || args.max_inflight == 0 {
        bail!("--instances, --max-batch and --max-inflight must be at least 1");
    }
    let model = crate::zoo::resolve(&args.model)?;
    let specs = input_specs(&model)?;
    let mut shapes = Vec::with_capacity(specs.len());
    for s in &specs {
        let given = args.shapes.iter().find(|x| x.name == s.name);
        let dims: Vec<usize> = match given {
            Some(g) => g.dims.iter().map(|&d| d as usize).collect(),
            None => s
                .dims
                .iter()
                .map(|d| d.known().unwrap_or(1) as usize)
                .collect(),
        };
        shapes.push(dims);
    }
    for g in &args.shapes {
        if !specs.iter().any(|s| s.name == g.name) {
            bail!("--shape '{}': the model has no input of that name", g.name);
        }
    }
    if args.max_batch > 1 {
        for s in &specs {
            if !matches!(s.dims.first(), Some(Dim::Sym(_))) {
                bail!(
                    "--max-batch {}: input '{}' has a fixed first dimension ({}); dynamic batching needs a model whose first dimension is dynamic",
                    args.max_batch,
                    s.name,
                    crate::model::shape::shape_str(&s.dims)
                );
            }
        }
        for sh in &mut shapes {
            if let Some(d) = sh.first_mut() {
                *d = 1;
            }
        }
    }
    let name = args.name.clone().unwrap_or_else(|| {
        let s = args.model.to_string_lossy();
        if !args.model.exists() {
            crate::zoo::canonical_name(&s)
        } else {
            model
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "model".into())
        }
    });
    // The sessions see the batch they run: max_batch rows when batching.
    let load_shapes = specs
        .iter()
        .zip(&shapes)
        .map(|(s, sh)| {
            let mut sh = sh.clone();
            if args.max_batch > 1 {
                sh[0] = args.max_batch;
            }
            (s.name.clone(), sh)
        })
        .collect();
    let load = args.backend.load_options(load_shapes, false);
    Ok(Config {
        model,
        name,
        backend: args.backend.spec.clone(),
        load,
        shapes,
        instances: args.instances,
        max_batch: args.max_batch,
        batch_timeout: Duration::from_micros(args.batch_timeout_us),
        max_inflight: args.max_inflight,
        max_body_bytes: (args.max_body_mb * 1e6) as usize,
    })
}

/// A server started by [`start`].
pub struct Running {
    pub addr: SocketAddr,
    pub metrics_url: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Running {
    /// Stops accepting, lets in-flight requests finish, and waits for the server to end.
    pub fn stop(mut self) -> anyhow::Result<()> {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => bail!("the server thread panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
    }
}

/// Starts a server on its own runtime thread (for `grade`), returning once the sessions are
/// loaded and it is ready.
pub fn start(cfg: Config, host: &str, port: u16) -> anyhow::Result<Running> {
    let listener = std::net::TcpListener::bind((host, port))
        .with_context(|| format!("cannot bind {host}:{port}"))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let thread = std::thread::Builder::new()
        .name("acceval-serve".into())
        .spawn(move || -> anyhow::Result<()> {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                let stop = async {
                    let _ = rx.await;
                };
                run_server(cfg, listener, stop, Some(ready_tx), false).await
            })
        })?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(Running {
            addr,
            metrics_url: format!("http://{addr}/metrics"),
            shutdown: Some(tx),
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = tx.send(());
            let _ = thread.join();
            bail!("{e}")
        }
        Err(_) => match thread.join() {
            Ok(Err(e)) => Err(e),
            _ => bail!("the server ended before it was ready"),
        },
    }
}

/// Serves `cfg` on `listener` until `stop` resolves; `ready` hears when the sessions are
/// loaded; `verbose` prints the ready line on stdout (`acceval serve`).
pub async fn run_server(
    cfg: Config,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
    ready: Option<mpsc::Sender<Result<(), String>>>,
    verbose: bool,
) -> anyhow::Result<()> {
    let served = Served {
        name: cfg.name.clone(),
        inputs: input_specs(&cfg.model)?,
        outputs: output_specs(&cfg.model)?,
        shapes: cfg.shapes.clone(),
        max_batch: cfg.max_batch,
    };
    let (tx, rx) = mpsc::channel::<Job>();
    let app = Arc::new(App {
        served,
        ready: AtomicBool::new(false),
        jobs: Mutex::new(Some(tx)),
        inflight: AtomicUsize::new(0),
        max_inflight: cfg.max_inflight,
        metrics: Metrics::new(&cfg.name),
        engine: Mutex::new(String::new()),
    });
    let workers = spawn_workers(&cfg, rx, Arc::clone(&app));
    let router = Router::new()
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
        .fallback(|| async { ApiError(StatusCode::NOT_FOUND, "no such endpoint; see /v2".into()) })
        .layer(DefaultBodyLimit::max(cfg.max_body_bytes))
        .with_state(Arc::clone(&app));

    // Load the sessions while already answering health checks (ready = false until then).
    let loader = {
        let app = Arc::clone(&app);
        tokio::task::spawn_blocking(move || {
            let mut engine = String::new();
            for r in workers.ready {
                match r.recv() {
                    Ok(Ok(e)) => engine = e,
                    Ok(Err(e)) => return Err(e),
                    Err(_) => return Err("a model instance thread ended while loading".to_string()),
                }
            }
            *app.engine.lock().unwrap() = engine;
            app.ready.store(true, Ordering::SeqCst);
            Ok(())
        })
    };
    let (failed_tx, mut failed_rx) = tokio::sync::mpsc::channel::<String>(1);
    let name = cfg.name.clone();
    let instances = cfg.instances;
    tokio::spawn(async move {
        let r = loader.await.unwrap_or_else(|e| Err(e.to_string()));
        match r {
            Ok(()) => {
                if verbose {
                    use std::io::Write;
                    // A closed stdout must not take the server down.
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(
                        out,
                        "acceval serve: ready: '{name}', {instances} instance(s)"
                    );
                    let _ = out.flush();
                }
                if let Some(t) = ready {
                    let _ = t.send(Ok(()));
                }
            }
            Err(e) => {
                if let Some(t) = ready {
                    let _ = t.send(Err(e.clone()));
                }
                let _ = failed_tx.send(e).await;
            }
        }
    });
    let failure = Arc::new(Mutex::new(None::<String>));
    let fail_slot = Arc::clone(&failure);
    let shutdown = async move {
        tokio::select! {
            _ = stop => {},
            Some(e) = failed_rx.recv() => { *fail_slot.lock().unwrap() = Some(e); }
        }
    };
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .context("the HTTP server failed")?;
    // Closing the queue ends the instance threads once they finish what they hold.
    app.jobs.lock().unwrap().take();
    for t in workers.threads {
        let _ = t.join();
    }
    if let Some(e) = failure.lock().unwrap().take() {
        bail!("{e}");
    }
    Ok(())
}

struct Workers {
    ready: Vec<mpsc::Receiver<Result<String, String>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

fn spawn_workers(cfg: &Config, rx: mpsc::Receiver<Job>, app: Arc<App>) -> Workers {
    let rx = Arc::new(Mutex::new(rx));
    let mut ready = Vec::new();
    let mut threads = Vec::new();
    for k in 0..cfg.instances {
        let (rtx, rrx) = mpsc::channel();
        ready.push(rrx);
        let rx = Arc::clone(&rx);
        let cfg = cfg.clone();
        let app = Arc::clone(&app);
        threads.push(
            std::thread::Builder::new()
                .name(format!("acceval-instance-{k}"))
                .spawn(move || worker(cfg, rx, rtx, app))
                .expect("spawn an instance thread"),
        );
    }
    Workers { ready, threads }
}

fn worker(
    cfg: Config,
    rx: Arc<Mutex<mpsc::Receiver<Job>>>,
    ready: mpsc::Sender<Result<String, String>>,
    app: Arc<App>,
) {
    let mut session = match backend::load(&cfg.model, &cfg.backend, &cfg.load) {
        Ok(s) => s,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot load the model: {e}")));
            return;
        }
    };
    let info = session.info();
    let _ = ready.send(Ok(format!("{} ({})", info.engine, info.device)));
    let mut carry: Option<Job> = None;
    loop {
        let mut batch: Vec<Job> = Vec::with_capacity(cfg.max_batch);
        {
            let q = rx.lock().unwrap();
            let first = match carry.take() {
                Some(j) => j,
                None => match q.recv() {
                    Ok(j) => j,
                    Err(_) => return,
                },
            };
            let mut rows = first.rows;
            batch.push(first);
            let deadline = Instant::now() + cfg.batch_timeout;
            while cfg.max_batch > 1 && rows < cfg.max_batch {
                let left = deadline.saturating_duration_since(Instant::now());
                match q.recv_timeout(left) {
                    Ok(j) if rows + j.rows <= cfg.max_batch => {
                        rows += j.rows;
                        batch.push(j);
                    }
                    Ok(j) => {
                        carry = Some(j);
                        break;
                    }
                    Err(_) => break,
                }
            }
        }
        let started = Instant::now();
        for j in &batch {
            app.metrics.queue.observe(started - j.enqueued);
        }
        let result = run_batch(session.as_mut(), &batch, cfg.max_batch);
        app.metrics.compute.observe(started.elapsed());
        app.metrics.batches.fetch_add(1, Ordering::Relaxed);
        match result {
            Ok(per_job) => {
                for (j, out) in batch.into_iter().zip(per_job) {
                    let _ = j.reply.send(Ok(out));
                }
            }
            Err(e) => {
                for j in batch {
                    let _ = j.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Runs one batch of jobs; with batching the inputs are joined (padded to `max_batch` rows
/// by repeating the first job) and the outputs split back.
fn run_batch(
    session: &mut dyn backend::Session,
    batch: &[Job],
    max_batch: usize,
) -> Result<Vec<Vec<HostTensor>>, String> {
    if max_batch == 1 {
        let out = session.run(&batch[0].inputs).map_err(|e| e.to_string())?;
        return Ok(vec![out]);
    }
    let rows: usize = batch.iter().map(|j| j.rows).sum();
    let n_inputs = batch[0].inputs.len();
    let mut joined = Vec::with_capacity(n_inputs);
    for k in 0..n_inputs {
        let mut parts: Vec<&TensorData> = batch.iter().map(|j| &j.inputs[k].data).collect();
        let pad = batch[0].inputs[k].data.rows(0, 1);
        let pads = vec![pad; max_batch - rows];
        parts.extend(pads.iter());
        let data = TensorData::concat0(&parts).ok_or_else(|| {
            format!(
                "cannot join input '{}' into a batch",
                batch[0].inputs[k].name
            )
        })?;
        joined.push(HostTensor {
            name: batch[0].inputs[k].name.clone(),
            data,
        });
    }
    let out = session.run(&joined).map_err(|e| e.to_string())?;
    for o in &out {
        if o.data.shape().first() != Some(&max_batch) {
            return Err(format!(
                "output '{}' has shape {:?}, not {max_batch} rows: the model cannot be batched on its first dimension (serve it without --max-batch)",
                o.name,
                o.data.shape()
            ));
        }
    }
    let mut start = 0;
    Ok(batch
        .iter()
        .map(|j| {
            let v = out
                .iter()
                .map(|o| HostTensor {
                    name: o.name.clone(),
                    data: o.data.rows(start, j.rows),
                })
                .collect();
            start += j.rows;
            v
        })
        .collect())
}

async fn server_metadata(State(app): State<Arc<App>>) -> Response {
    axum::Json(json!({
        "name": "acceval",
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": ["binary_tensor_data"],
        "engine": *app.engine.lock().unwrap(),
    }))
    .into_response()
}

async fn server_ready(State(app): State<Arc<App>>) -> StatusCode {
    if app.ready.load(Ordering::SeqCst) {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

fn check_model(app: &App, model: &str, version: Option<&str>) -> Result<(), ApiError> {
    if model != app.served.name {
        return Err(ApiError(
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
        return Err(ApiError(
            StatusCode::NOT_FOUND,
            format!("model '{model}' has no version '{v}'; it has version 1"),
        ));
    }
    Ok(())
}

fn tensor_meta(s: &InputSpec, batched: bool) -> Value {
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
    json!({"name": s.name, "datatype": kserve::datatype_name(s.dtype), "shape": shape})
}

fn metadata(app: &App, model: &str, version: Option<&str>) -> Result<Response, ApiError> {
    check_model(app, model, version)?;
    let batched = app.served.max_batch > 1;
    Ok(axum::Json(json!({
        "name": app.served.name,
        "versions": ["1"],
        "platform": "onnx_onnxv1",
        "inputs": app.served.inputs.iter().map(|s| tensor_meta(s, batched)).collect::<Vec<_>>(),
        "outputs": app.served.outputs.iter().map(|s| tensor_meta(s, batched)).collect::<Vec<_>>(),
    }))
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
    if app.ready.load(Ordering::SeqCst) {
        Ok(StatusCode::OK)
    } else {
        Err(ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "the model is still loading".into(),
        ))
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
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    infer_any(app, m, None, headers, body).await
}

async fn infer_v(
    State(app): State<Arc<App>>,
    UrlPath((m, v)): UrlPath<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
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
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
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

async fn infer_inner(
    app: &App,
    model: &str,
    version: Option<&str>,
    headers: &HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    check_model(app, model, version)?;
    let body = body.map_err(|e| {
        ApiError(
            e.status(),
            format!("cannot read the request body: {}", e.body_text()),
        )
    })?;
    if !app.ready.load(Ordering::SeqCst) {
        return Err(ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "the model is still loading".into(),
        ));
    }
    let n = app.inflight.fetch_add(1, Ordering::SeqCst);
    let _admitted = Admitted(&app.inflight);
    if n >= app.max_inflight {
        return Err(ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "server busy: {} requests in flight (--max-inflight {})",
                n, app.max_inflight
            ),
        ));
    }
    let header_len = headers
        .get(kserve::HEADER_LENGTH)
        .map(|v| {
            v.to_str()
                .map_err(|_| bad("Inference-Header-Content-Length is not text"))
        })
        .transpose()?;
    let req = kserve::decode_request(&body, header_len).map_err(bad)?;
    let (inputs, rows) = match_inputs(&app.served, req.inputs)?;
    let wanted: Vec<(usize, bool)> = match &req.outputs {
        None => (0..app.served.outputs.len())
            .map(|k| (k, req.binary_output))
            .collect(),
        Some(list) => list
            .iter()
            .map(|(name, bin)| {
                let k = app
                    .served
                    .outputs
                    .iter()
                    .position(|o| &o.name == name)
                    .ok_or_else(|| {
                        bad(format!(
                            "unknown output '{name}'; the model's outputs are {}",
                            app.served
                                .outputs
                                .iter()
                                .map(|o| o.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?;
                Ok((k, bin.unwrap_or(req.binary_output)))
            })
            .collect::<Result<_, ApiError>>()?,
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job = Job {
        inputs,
        rows,
        enqueued: Instant::now(),
        reply: tx,
    };
    {
        let q = app.jobs.lock().unwrap();
        let Some(q) = q.as_ref() else {
            return Err(ApiError(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down".into(),
            ));
        };
        q.send(job).map_err(|_| {
            ApiError(
                StatusCode::SERVICE_UNAVAILABLE,
                "the model instances have stopped".into(),
            )
        })?;
    }
    let outputs = rx
        .await
        .map_err(|_| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the model instance dropped the request".into(),
            )
        })?
        .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e))?;
    let chosen: Vec<(&HostTensor, bool)> = wanted
        .iter()
        .filter_map(|&(k, bin)| {
            let name = &app.served.outputs[k].name;
            outputs.iter().find(|o| &o.name == name).map(|o| (o, bin))
        })
        .collect();
    let body = kserve::encode_response(&app.served.name, req.id.as_ref(), &chosen);
    let mut resp = Response::new(axum::body::Body::from(body.bytes));
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
    Ok(resp)
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
        let ok = if served.max_batch > 1 {
            g.shape.len() == shape.len()
                && g.shape[1..] == shape[1..]
                && (1..=served.max_batch).contains(&g.shape[0])
        } else {
            &g.shape == shape
        };
        if !ok {
            let expect = if served.max_batch > 1 {
                format!(
                    "[1..={}{}]",
                    served.max_batch,
                    shape[1..]
                        .iter()
                        .map(|d| format!(", {d}"))
                        .collect::<String>()
                )
            } else {
                format!("{shape:?}")
            };
            return Err(bad(format!(
                "input '{}': unexpected shape {:?}, the model expects {expect}",
                spec.name, g.shape
            )));
        }
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
