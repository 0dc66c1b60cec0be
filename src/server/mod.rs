//! `acceval serve`: one model on one backend behind the KServe v2 / Triton HTTP protocol.
//!
//! HTTP runs on tokio/hyper with axum's router; the model runs on `instances` plain
//! threads, each owning its session (sessions are not `Send`), fed by one queue. With
//! `max_batch` N a thread joins up to N queued requests into one run (waiting
//! `batch_timeout_us` for the batch to fill, padding a partial batch to N rows) and splits
//! the outputs again. SIGINT/SIGTERM stop accepting, let in-flight requests finish, then exit.
//!
//! Fit to face a network: connections are capped and timed (`conn.rs`: head, body and idle
//! timeouts), bodies are limited before they are read and charged to one memory budget
//! (`body.rs`), decoding is typed and bounded by the body (`protocol::kserve`), and a server
//! beyond loopback can require an API key (`auth.rs`) and speak TLS (`tls.rs`); `net.rs`
//! names the interfaces such a server reaches. Requests beyond `max_inflight` get 503 at
//! once rather than queueing without bound. The routes and one request's path are in
//! `http.rs`. [`Error`] says why a server could not start; a bad setting is named by
//! [`Setting`], which the caller shows its way (the CLI as a flag), in errors and in the
//! messages the running server sends its clients ([`SettingNames`]).

mod auth;
mod body;
mod conn;
mod http;
mod metrics;
mod net;
mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::backend::{self, BackendSpec, LoadOptions};
use crate::data::inputs::{InputSpec, input_specs, output_specs};
use crate::model::shape::Dim;
use crate::model::tensor::{HostTensor, TensorData};
pub use conn::ConnLimits;
pub use metrics::Metrics;
pub use net::{Exposure, exposure};

use crate::util::setting::SettingError;

/// A setting of `serve` ([`ServeSettings`]), by the field that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    Shapes,
    Instances,
    MaxBatch,
    BatchTimeoutUs,
    MaxInflight,
    MaxBodyMb,
    HeaderTimeout,
    BodyTimeout,
    IdleTimeout,
    MaxConnections,
    DrainTimeout,
    MaxMemoryMb,
    ApiKey,
    TlsCert,
    TlsKey,
}

impl Setting {
    /// The [`ServeSettings`] field that holds it.
    pub fn field(self) -> &'static str {
        match self {
            Setting::Shapes => "shapes",
            Setting::Instances => "instances",
            Setting::MaxBatch => "max_batch",
            Setting::BatchTimeoutUs => "batch_timeout_us",
            Setting::MaxInflight => "max_inflight",
            Setting::MaxBodyMb => "max_body_mb",
            Setting::HeaderTimeout => "header_timeout_s",
            Setting::BodyTimeout => "body_timeout_s",
            Setting::IdleTimeout => "idle_timeout_s",
            Setting::MaxConnections => "max_connections",
            Setting::DrainTimeout => "drain_timeout_s",
            Setting::MaxMemoryMb => "max_memory_mb",
            Setting::ApiKey => "api_key",
            Setting::TlsCert => "tls_cert",
            Setting::TlsKey => "tls_key",
        }
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.field())
    }
}

/// How the running server names a setting in what it tells its clients (`server busy: ...
/// (max_inflight 256)`): the caller's words for it (the CLI passes its flags).
pub type SettingNames = fn(Setting) -> &'static str;

/// Why a server could not be configured, started or run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Setting(#[from] SettingError<Setting>),
    /// The memory budget cannot hold one request of the largest body.
    #[error(
        "max_memory_mb {memory_mb}: one request of max_body_mb {body_mb} needs {need_mb} MB (its body and its decoded tensors); raise the memory budget or lower the body limit"
    )]
    BudgetBelowBody {
        memory_mb: f64,
        body_mb: f64,
        need_mb: f64,
    },
    #[error("TLS protocol versions: {0}")]
    TlsVersions(rustls::Error),
    #[error(
        "the TLS certificate and key do not form a usable certificate and key (does the key belong to the certificate?): {0}"
    )]
    TlsPair(rustls::Error),
    #[error("cannot bind {addr}: {err}")]
    Bind { addr: String, err: std::io::Error },
    #[error("cannot start the server: {0}")]
    Io(#[from] std::io::Error),
    #[error("the server thread panicked")]
    Panicked,
    #[error("the server ended before it was ready")]
    EndedEarly,
    /// A model instance failed to load, or the server failed while serving (the text is the
    /// worker's message, passed across threads).
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Data(#[from] crate::data::Error),
    #[error(transparent)]
    Zoo(#[from] crate::zoo::Error),
}

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
    pub conn: ConnLimits,
    /// Bytes the requests in flight may hold together (bodies and decoded tensors).
    pub max_memory_bytes: usize,
    pub api_key: Option<auth::ApiKey>,
    pub tls: Option<tls::Tls>,
    /// How messages to clients name a setting.
    pub names: SettingNames,
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
    /// Set by the stop signal: new requests get 503 while the admitted ones finish.
    draining: AtomicBool,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    inflight: AtomicUsize,
    max_inflight: usize,
    metrics: Metrics,
    /// The engine, for the server metadata (set when the sessions are loaded).
    engine: Mutex<String>,
    body_limits: body::BodyLimits,
    budget: Arc<body::Budget>,
    api_key: Option<auth::ApiKey>,
}

/// Default port of `acceval serve` (Triton's HTTP port).
pub const DEFAULT_PORT: u16 = 8000;
/// Default µs the first request of a batch waits for others.
pub const DEFAULT_BATCH_TIMEOUT_US: u64 = 500;
/// Default requests admitted at once.
pub const DEFAULT_MAX_INFLIGHT: usize = 256;
/// Default largest request body, MB.
pub const DEFAULT_MAX_BODY_MB: f64 = 64.0;
/// Default time for a request's head, s (nginx: 60; a slowloris client holds a connection
/// this long).
pub const DEFAULT_HEADER_TIMEOUT_S: f64 = 10.0;
/// Default time for a request's whole body, s (nginx: 60 between reads).
pub const DEFAULT_BODY_TIMEOUT_S: f64 = 60.0;
/// Default time an idle keep-alive connection stays open, s (nginx: 75).
pub const DEFAULT_IDLE_TIMEOUT_S: f64 = 30.0;
/// Default longest wait for the requests in flight after SIGTERM, s (Triton's
/// `--exit-timeout-secs`: 30).
pub const DEFAULT_DRAIN_TIMEOUT_S: f64 = 30.0;
/// Default connections open at once (nginx: 512 per worker).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Most model instances (threads, each with a session).
pub const MAX_INSTANCES: usize = 1024;
/// Largest `max_batch` (Triton's `max_batch_size` is usually 8 to 256).
pub const MAX_BATCH: usize = 65_536;
/// Most requests in flight.
pub const MAX_INFLIGHT: usize = 1_000_000;
/// Most open connections (each needs a file descriptor).
pub const MAX_CONNECTIONS: usize = 1_000_000;
/// Longest `batch_timeout_us`, µs.
pub const MAX_BATCH_TIMEOUT_US: u64 = 10_000_000;
/// The memory budget's default ceiling, MB; it is also at most half the machine's memory.
pub const DEFAULT_MAX_MEMORY_MB: f64 = 2000.0;

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
    pub header_timeout_s: f64,
    pub body_timeout_s: f64,
    pub idle_timeout_s: f64,
    /// After SIGTERM, the longest wait for the requests in flight, s.
    pub drain_timeout_s: f64,
    pub max_connections: usize,
    /// [default: [`DEFAULT_MAX_MEMORY_MB`] or half the machine's memory, the smaller].
    pub max_memory_mb: Option<f64>,
    /// The bearer token every request but the health probes must carry.
    pub api_key: Option<String>,
    /// PEM certificate chain and private key: serve HTTPS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// How messages to clients name a setting [default: its field].
    pub names: SettingNames,
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
            header_timeout_s: DEFAULT_HEADER_TIMEOUT_S,
            body_timeout_s: DEFAULT_BODY_TIMEOUT_S,
            idle_timeout_s: DEFAULT_IDLE_TIMEOUT_S,
            drain_timeout_s: DEFAULT_DRAIN_TIMEOUT_S,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_memory_mb: None,
            api_key: None,
            tls: None,
            names: Setting::field,
        }
    }
}

/// Resolves the settings into a [`Config`].
pub fn config(args: &ServeSettings) -> Result<Config, Error> {
    check_counts(args)?;
    // The limits, the key and the certificate first: their errors need no model.
    let conn = conn_limits(args)?;
    let max_memory_bytes = memory_budget(args)?;
    let api_key = api_key(args.api_key.as_deref())?;
    let tls = match &args.tls {
        Some((cert, key)) => Some(tls::acceptor(cert, key)?),
        None => None,
    };
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
            return Err(SettingError::bad(
                Setting::Shapes,
                &g.name,
                "the model has no input of that name",
            )
            .into());
        }
    }
    if args.max_batch > 1 {
        for s in &specs {
            if !matches!(s.dims.first(), Some(Dim::Sym(_))) {
                return Err(SettingError::says(
                    Setting::MaxBatch,
                    format!(
                        "{}: input '{}' has a fixed first dimension ({}); dynamic batching needs a model whose first dimension is dynamic",
                        args.max_batch,
                        s.name,
                        crate::model::shape::shape_str(&s.dims)
                    ),
                )
                .into());
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
        conn,
        max_memory_bytes,
        api_key,
        tls,
        names: args.names,
    })
}

fn duration(v: f64, setting: Setting) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero() && v <= 7.0 * 86400.0)
        .ok_or_else(|| SettingError::range(setting, v, "seconds", "(0, 604800]".into()).into())
}

/// The counts, each within its range: a count sizes threads, queues and buffers, so an
/// absurd one must be an error here rather than an allocation failure later.
fn check_counts(args: &ServeSettings) -> Result<(), Error> {
    let counts = [
        (Setting::Instances, args.instances, MAX_INSTANCES),
        (Setting::MaxBatch, args.max_batch, MAX_BATCH),
        (Setting::MaxInflight, args.max_inflight, MAX_INFLIGHT),
        (
            Setting::MaxConnections,
            args.max_connections,
            MAX_CONNECTIONS,
        ),
    ];
    for (setting, v, max) in counts {
        if !(1..=max).contains(&v) {
            return Err(
                SettingError::says(setting, format!("{v}: give a count from 1 to {max}")).into(),
            );
        }
    }
    if args.batch_timeout_us > MAX_BATCH_TIMEOUT_US {
        return Err(SettingError::says(
            Setting::BatchTimeoutUs,
            format!(
                "{}: at most {MAX_BATCH_TIMEOUT_US} µs (10 s)",
                args.batch_timeout_us
            ),
        )
        .into());
    }
    Ok(())
}

fn conn_limits(args: &ServeSettings) -> Result<ConnLimits, Error> {
    Ok(ConnLimits {
        header_timeout: duration(args.header_timeout_s, Setting::HeaderTimeout)?,
        body_timeout: duration(args.body_timeout_s, Setting::BodyTimeout)?,
        idle_timeout: duration(args.idle_timeout_s, Setting::IdleTimeout)?,
        max_connections: args.max_connections,
        drain_timeout: duration(args.drain_timeout_s, Setting::DrainTimeout)?,
    })
}

/// The memory budget, bytes; it must hold at least one request of the largest body.
fn memory_budget(args: &ServeSettings) -> Result<usize, Error> {
    if !(args.max_body_mb.is_finite() && args.max_body_mb > 0.0) {
        return Err(SettingError::says(
            Setting::MaxBodyMb,
            format!("{}: MB above 0", args.max_body_mb),
        )
        .into());
    }
    let mb = match args.max_memory_mb {
        Some(mb) if mb.is_finite() && mb > 0.0 => mb,
        Some(mb) => {
            return Err(
                SettingError::says(Setting::MaxMemoryMb, format!("{mb}: MB above 0")).into(),
            );
        }
        None => {
            use sysinfo::{MemoryRefreshKind, RefreshKind, System};
            let sys = System::new_with_specifics(
                RefreshKind::nothing().with_memory(MemoryRefreshKind::nothing().with_ram()),
            );
            let half_mb = sys.map_or(0.0, |s| s.total_memory() as f64 / 2e6);
            if half_mb > 0.0 {
                DEFAULT_MAX_MEMORY_MB.min(half_mb)
            } else {
                DEFAULT_MAX_MEMORY_MB
            }
        }
    };
    let need = body::charge((args.max_body_mb * 1e6) as usize) as f64 / 1e6;
    if mb < need {
        return Err(Error::BudgetBelowBody {
            memory_mb: mb,
            body_mb: args.max_body_mb,
            need_mb: need,
        });
    }
    Ok((mb * 1e6) as usize)
}

fn api_key(key: Option<&str>) -> Result<Option<auth::ApiKey>, Error> {
    let says = |s: &str| -> Result<Option<auth::ApiKey>, Error> {
        Err(SettingError::says(Setting::ApiKey, s).into())
    };
    match key {
        None => Ok(None),
        Some(k) if k.trim().is_empty() => says("is empty; give the token clients must send"),
        Some(k) if k.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            says("holds whitespace or control characters; a bearer token cannot")
        }
        Some(k) => Ok(Some(auth::ApiKey::new(k))),
    }
}

/// A server started by [`start`].
pub struct Running {
    pub addr: SocketAddr,
    pub metrics_url: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), Error>>>,
}

impl Running {
    /// Stops accepting, lets in-flight requests finish, and waits for the server to end.
    pub fn stop(mut self) -> Result<(), Error> {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Error::Panicked),
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
pub fn start(cfg: Config, host: &str, port: u16) -> Result<Running, Error> {
    let listener = std::net::TcpListener::bind((host, port)).map_err(|err| Error::Bind {
        addr: format!("{host}:{port}"),
        err,
    })?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let thread = std::thread::Builder::new()
        .name("acceval-serve".into())
        .spawn(move || -> Result<(), Error> {
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
            Err(Error::Failed(e))
        }
        Err(_) => match thread.join() {
            Ok(Err(e)) => Err(e),
            _ => Err(Error::EndedEarly),
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
) -> Result<(), Error> {
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
        draining: AtomicBool::new(false),
        jobs: Mutex::new(Some(tx)),
        inflight: AtomicUsize::new(0),
        max_inflight: cfg.max_inflight,
        metrics: Metrics::new(&cfg.name),
        engine: Mutex::new(String::new()),
        body_limits: body::BodyLimits {
            max_bytes: cfg.max_body_bytes,
            timeout: cfg.conn.body_timeout,
            names: cfg.names,
        },
        budget: body::Budget::new(cfg.max_memory_bytes),
        api_key: cfg.api_key.clone(),
    });
    let workers = spawn_workers(&cfg, rx, Arc::clone(&app));
    let router = http::router(Arc::clone(&app));

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
    let draining = Arc::clone(&app);
    let shutdown = async move {
        tokio::select! {
            _ = stop => {},
            Some(e) = failed_rx.recv() => { *fail_slot.lock().unwrap() = Some(e); }
        }
        draining.draining.store(true, Ordering::SeqCst);
    };
    let inflight = Arc::clone(&app);
    let drained = conn::serve(
        listener,
        router,
        cfg.conn.clone(),
        cfg.tls.clone().map(|t| t.0),
        shutdown,
        move || inflight.inflight.load(Ordering::SeqCst),
    )
    .await;
    if verbose {
        eprintln!(
            "acceval serve: drained in {:.3} s (drain timeout {:.0} s); requests cut at the drain deadline: {}",
            drained.waited.as_secs_f64(),
            cfg.conn.drain_timeout.as_secs_f64(),
            drained.cut
        );
    }
    // Closing the queue ends the instance threads once they finish what they hold.
    app.jobs.lock().unwrap().take();
    for t in workers.threads {
        let _ = t.join();
    }
    if let Some(e) = failure.lock().unwrap().take() {
        return Err(Error::Failed(e));
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
        let mut batch: Vec<Job> = Vec::with_capacity(cfg.max_batch.min(256));
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
                "output '{}' has shape {:?}, not {max_batch} rows: the model cannot be batched on its first dimension (serve it without batching)",
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
