//! `acceval serve`: settings → the KServe v2 server, until SIGINT/SIGTERM.

use anyhow::Context;

use crate::Outcome;
use crate::cli::ServeArgs;
use crate::cli::flags;
use crate::server::{self, ServeSettings};

/// `acceval serve`: runs until SIGINT/SIGTERM.
pub fn run(args: ServeArgs) -> anyhow::Result<Outcome> {
    let s = ServeSettings {
        backend: args.backend.settings()?,
        model: args.model.clone(),
        name: args.name.clone(),
        shapes: args.shapes.clone(),
        instances: args.instances,
        max_batch: args.max_batch,
        batch_timeout_us: args.batch_timeout_us,
        max_inflight: args.max_inflight,
        max_body_mb: args.max_body_mb,
        header_timeout_s: args.header_timeout,
        body_timeout_s: args.body_timeout,
        idle_timeout_s: args.idle_timeout,
        drain_timeout_s: args.drain_timeout,
        max_connections: args.max_connections,
        max_memory_mb: args.max_memory_mb,
        api_key: args.api_key.clone(),
        tls: args.tls_cert.clone().zip(args.tls_key.clone()),
        names: flags::serve_flag,
    };
    let cfg = server::config(&s).map_err(flags::server)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
            .await
            .with_context(|| {
                format!(
                    "cannot listen on {}:{}; is another server using the port? (--port 0 picks a free one)",
                    args.host, args.port
                )
            })?;
        let addr = listener.local_addr()?;
        let scheme = if cfg.tls.is_some() { "https" } else { "http" };
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "acceval serve: listening on {scheme}://{addr} (model '{}' on {}; /v2/health/ready turns 200 when loaded)",
                cfg.name, cfg.backend
            )?;
            out.flush()?;
        }
        if let Some(e) = server::exposure(addr, cfg.api_key.is_some(), cfg.tls.is_some()) {
            eprintln!("acceval serve: warning: {}", e.describe(flags::serve_flag));
        }
        server::run_server(cfg, listener, shutdown_signal(), None, true)
            .await
            .map_err(flags::server)
    })?;
    Ok(Outcome::Ok)
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term.recv() => {},
    }
    eprintln!(
        "acceval serve: stopping; the requests in flight finish (within --drain-timeout), new ones get 503"
    );
}
