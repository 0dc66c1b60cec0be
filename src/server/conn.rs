//! Connections of `acceval serve`: the accept loop with its cap on open connections, TLS,
//! and the three timeouts a server facing a network needs (the nginx/Triton kind): the
//! request head must arrive within `header`, the body within `body` (enforced where the body
//! is read, in `body.rs`), and a keep-alive connection with no request is closed after
//! `idle`; a response the client does not read for `idle` is dropped too. Over the cap a new
//! connection is closed at once. Graceful shutdown lets every request in progress finish,
//! ends each connection with its answer, and only then stops accepting and closes the idle
//! connections left (see [`serve`]).
//!
//! The head and idle deadlines live in [`Watched`], a wrapper of the socket that fails a read
//! once its deadline has passed; the connection's service moves the phase along (a request
//! is being answered: no read deadline; its response body dropped: idle; first byte of the
//! next request: head). hyper's own header timeout also runs while a connection is idle, so
//! it could not give the two their own lengths.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// How connections are kept in check.
#[derive(Debug, Clone)]
pub struct ConnLimits {
    /// Time for the head of a request (request line and headers), from its first byte (or
    /// from the connection's start, for the first request).
    pub header_timeout: Duration,
    /// Time for the whole body of a request, from the end of its head.
    pub body_timeout: Duration,
    /// Time a keep-alive connection may wait for its next request (or a client may leave
    /// its response unread).
    pub idle_timeout: Duration,
    /// Connections open at once; more are closed as they arrive.
    pub max_connections: usize,
    /// After the stop signal, the longest wait for the requests in flight (Triton's
    /// `--exit-timeout-secs`); connections still open then are cut.
    pub drain_timeout: Duration,
}

/// Where one connection stands, shared by its socket wrapper and its service.
struct Phase {
    state: Mutex<PhaseState>,
    limits: ConnLimits,
}

struct PhaseState {
    /// The read deadline (none while a request is being answered).
    deadline: Option<Instant>,
    /// Waiting for the next request with no byte of it yet.
    idle: bool,
    /// The task of a read that is waiting, to wake when the deadline changes.
    waker: Option<Waker>,
}

impl Phase {
    fn new(limits: ConnLimits) -> Phase {
        Phase {
            state: Mutex::new(PhaseState {
                deadline: Some(Instant::now() + limits.header_timeout),
                idle: false,
                waker: None,
            }),
            limits,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PhaseState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request's head has arrived: its answer is the service's business.
    fn busy(&self) {
        let mut s = self.lock();
        s.deadline = None;
        s.idle = false;
    }

    /// The response is written: wait `idle_timeout` for the next request.
    fn idle(&self) {
        let mut s = self.lock();
        s.deadline = Some(Instant::now() + self.limits.idle_timeout);
        s.idle = true;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// Bytes arrived: when idle, they start the next request's head.
    fn bytes_read(&self) {
        let mut s = self.lock();
        if s.idle {
            s.idle = false;
            s.deadline = Some(Instant::now() + self.limits.header_timeout);
        }
    }
}

/// A socket whose reads fail once the connection's phase deadline has passed, and whose
/// writes fail when the client reads nothing for `idle_timeout`.
struct Watched<S> {
    inner: S,
    phase: Arc<Phase>,
    read_sleep: Pin<Box<Sleep>>,
    write_sleep: Option<Pin<Box<Sleep>>>,
}

impl<S> Watched<S> {
    fn new(inner: S, phase: Arc<Phase>) -> Watched<S> {
        Watched {
            inner,
            phase,
            read_sleep: Box::pin(tokio::time::sleep(Duration::ZERO)),
            write_sleep: None,
        }
    }

    /// A write is pending: the error once the client has read nothing for `idle_timeout`.
    fn write_stalled(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        let idle = self.phase.limits.idle_timeout;
        let sleep = self
            .write_sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        sleep.as_mut().poll(cx).is_ready().then(|| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                "the client read nothing of its response",
            )
        })
    }

    fn written<T>(&mut self, r: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match r {
            Poll::Pending => match self.write_stalled(cx) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
            done => {
                self.write_sleep = None;
                done
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    this.phase.bytes_read();
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                let deadline = {
                    let mut s = this.phase.lock();
                    s.waker = Some(cx.waker().clone());
                    s.deadline
                };
                let Some(deadline) = deadline else {
                    return Poll::Pending;
                };
                if this.read_sleep.deadline() != deadline {
                    this.read_sleep.as_mut().reset(deadline);
                }
                match this.read_sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no request within the header or idle timeout",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.written(r, cx)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.written(r, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A response body that marks the connection idle once it is written (dropped).
struct Tracked {
    inner: Body,
    phase: Arc<Phase>,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.phase.idle();
    }
}

/// Serves HTTP/1.1 on one accepted socket until the client leaves, a timeout closes it, or
/// the graceful shutdown does.
async fn serve_one<S>(
    io: S,
    router: Router,
    limits: ConnLimits,
    watcher: Watcher,
    closing: Arc<AtomicBool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let phase = Arc::new(Phase::new(limits));
    let io = TokioIo::new(Watched::new(io, Arc::clone(&phase)));
    let svc = TowerToHyperService::new(router);
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        phase.busy();
        let fut = hyper::service::Service::call(&svc, req);
        let phase = Arc::clone(&phase);
        let closing = Arc::clone(&closing);
        async move {
            let mut resp = fut.await?;
            // Past the stop signal every answer ends its connection, so no client is left
            // with an idle keep-alive connection that the shutdown would close under it.
            if closing.load(Ordering::SeqCst) {
                resp.headers_mut().insert(
                    hyper::header::CONNECTION,
                    hyper::header::HeaderValue::from_static("close"),
                );
            }
            Ok::<_, Infallible>(resp.map(|inner| Tracked { inner, phase }))
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // The head deadline is Watched's; hyper's would also cut idle connections.
        .header_read_timeout(None::<Duration>)
        .keep_alive(true)
        .serve_connection(io, service);
    // A connection that fails (a timeout, a reset, a malformed request) just ends.
    let _ = watcher.watch(conn).await;
}

/// How a drain ended: requests that finished after the stop signal and the ones still in
/// flight when the drain time ran out (cut).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    pub waited: Duration,
    pub cut: usize,
}

/// Attaches a drop-all socket filter to the listener (Linux; elsewhere, and when the kernel
/// refuses, nothing changes). The kernel runs a listener's filter on each SYN and on each
/// handshake's last ACK, so once it is on, no connection joins the accept queue: the drain
/// then takes the queue whole, and closing the listener resets no connection whose client
/// was told it had connected. Without it, a handshake that completes between the last
/// accept and the close (the server's thread preempted in that gap on a busy machine) is
/// reset with its request unread.
fn refuse_new_handshakes(listener: &tokio::net::TcpListener) {
    #[cfg(target_os = "linux")]
    {
        // `ret #0`: accept no byte of any packet (classic BPF, linux/filter.h).
        const BPF_RET_K: u16 = 0x06;
        let drop_all = [socket2::SockFilter::new(BPF_RET_K, 0, 0, 0)];
        let _ = socket2::SockRef::from(listener).attach_filter(&drop_all);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = listener;
}

/// Closes `listener` after taking every connection in its accept queue. First no new
/// handshake may complete ([`refuse_new_handshakes`]); then the queue is read with the
/// socket's own non-blocking `accept` until it is empty, not through tokio's readiness,
/// which only knows of connections its reactor has already been told about (one that
/// arrived since would be reset by the close).
fn take_queue(listener: tokio::net::TcpListener) -> Vec<tokio::net::TcpStream> {
    refuse_new_handshakes(&listener);
    let mut taken = Vec::new();
    let Ok(listener) = listener.into_std() else {
        return taken;
    };
    while let Ok((s, _)) = listener.accept() {
        if s.set_nonblocking(true).is_ok()
            && let Ok(s) = tokio::net::TcpStream::from_std(s)
        {
            taken.push(s);
        }
    }
    taken
}

/// After the drain, the longest wait for the open connections to close by themselves.
const LINGER: Duration = Duration::from_secs(1);

/// Accepts connections on `listener` until `stop` resolves, then drains: it goes on
/// accepting (the service answers new requests 503 by then, and every answer from then on
/// says `Connection: close`) until `inflight()` is 0 or `drain_timeout` has passed. Then it
/// accepts what is already queued and closes the listener, waits up to [`LINGER`] (within
/// the drain time) for the open connections to close after their answers, and only then
/// closes the idle ones left and waits, within what is left of the drain time, for the
/// responses still being written.
///
/// Why the order: a connection closed by the server while its client is sending on it is a
/// request lost without an answer (HTTP/1.1 cannot tell the client it was never read). A
/// listener closed with connections in its queue resets them after their clients' connect
/// succeeded; an idle keep-alive connection closed at the drain's end may be the one its
/// client just picked. Answering with `Connection: close` and letting connections end after
/// their answers leaves only the connections a client holds idle and does not use for
/// [`LINGER`] to be closed under it.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ConnLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stop: impl Future<Output = ()>,
    inflight: impl Fn() -> usize,
) -> Drained {
    let graceful = GracefulShutdown::new();
    let closing = Arc::new(AtomicBool::new(false));
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let accept = |stream: tokio::net::TcpStream| {
        // Over the cap the connection is closed at once (dropped).
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            return;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let limits = limits.clone();
        let tls = tls.clone();
        // Taken before the task starts, so a shutdown signalled during a TLS handshake still
        // reaches the connection (and waits for it).
        let watcher = graceful.watcher();
        let closing = Arc::clone(&closing);
        tokio::spawn(async move {
            let _permit = permit;
            match tls {
                None => serve_one(stream, router, limits, watcher, closing).await,
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(limits.header_timeout, acceptor.accept(stream));
                    if let Ok(Ok(s)) = handshake.await {
                        serve_one(s, router, limits, watcher, closing).await;
                    }
                }
            }
        });
    };
    tokio::pin!(stop);
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => accept(s),
                // Out of file descriptors or the like: wait instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            _ = &mut stop => break,
        }
    }
    closing.store(true, Ordering::SeqCst);
    let started = tokio::time::Instant::now();
    let deadline = started + limits.drain_timeout;
    // New requests still reach the service (and get 503) while the admitted ones finish.
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    while inflight() > 0 && tokio::time::Instant::now() < deadline {
        tokio::select! {
            r = listener.accept() => if let Ok((s, _)) = r { accept(s) },
            _ = tick.tick() => {},
        }
    }
    // The connections already queued are taken (and answered 503) rather than reset, and
    // the listener closes.
    for s in take_queue(listener) {
        accept(s);
    }
    let open = || limits.max_connections - slots.available_permits();
    let linger_end = deadline.min(tokio::time::Instant::now() + LINGER);
    while open() > 0 && tokio::time::Instant::now() < linger_end {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The idle connections left close at once; responses being written finish first,
    // within the drain time.
    let _ = tokio::time::timeout_at(deadline, graceful.shutdown()).await;
    Drained {
        waited: started.elapsed(),
        cut: inflight(),
    }
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    /// Once the filter is on, a connect no longer completes (its SYN is dropped), while a
    /// connection queued before it is still taken, though tokio's reactor never ran to
    /// hear of it; after the close the client is refused.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_drain_filter_stops_new_handshakes_but_keeps_the_queue() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let _guard = rt.enter();
        let std_listener = TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
        let queued = TcpStream::connect(addr).unwrap();
        super::refuse_new_handshakes(&listener);
        let late = TcpStream::connect_timeout(&addr, Duration::from_millis(400));
        let e = late.expect_err("a handshake completed past the filter");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        assert_eq!(
            super::take_queue(listener).len(),
            1,
            "the connection queued before the filter"
        );
        let refused = TcpStream::connect_timeout(&addr, Duration::from_secs(3));
        assert_eq!(
            refused.expect_err("connected to a closed port").kind(),
            std::io::ErrorKind::ConnectionRefused
        );
        drop(queued);
    }
}
