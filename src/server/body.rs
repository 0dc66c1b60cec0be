//! Request bodies of `acceval serve`, read under three bounds: a declared `Content-Length`
//! over `--max-body-mb` is 413 before a byte of the body is read, a chunked body is cut off
//! at the limit with 413; the whole body must arrive within `--body-timeout` (else 408); and
//! every request holds a [`Lease`] on one memory budget (`--max-memory-mb`) for its body and
//! its decoded tensors, so requests in flight × their bodies cannot exhaust memory: a request
//! the budget cannot take gets 503 at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;

use super::http::ApiError;
use super::{Setting, SettingNames};

/// Bytes of memory the requests in flight may hold together.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    used: AtomicUsize,
}

/// A request's share of the [`Budget`], given back when dropped.
#[derive(Debug)]
pub struct Lease {
    budget: Arc<Budget>,
    held: usize,
}

impl Budget {
    pub fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// Bytes held now by all leases.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    fn take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                u.checked_add(n).filter(|&t| t <= self.limit)
            })
            .is_ok()
    }

    /// A lease of `n` bytes, or `None` when the budget cannot take them now.
    pub fn lease(self: &Arc<Budget>, n: usize) -> Option<Lease> {
        self.take(n).then(|| Lease {
            budget: Arc::clone(self),
            held: n,
        })
    }
}

impl Lease {
    /// Makes the lease `n` bytes; fails (holding what it held) when growing it would pass
    /// the budget.
    pub fn resize(&mut self, n: usize) -> bool {
        if n <= self.held {
            self.budget.used.fetch_sub(self.held - n, Ordering::SeqCst);
            self.held = n;
            return true;
        }
        if self.budget.take(n - self.held) {
            self.held = n;
            true
        } else {
            false
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.held, Ordering::SeqCst);
    }
}

/// The bounds a request body is read under.
#[derive(Debug, Clone)]
pub struct BodyLimits {
    pub max_bytes: usize,
    pub timeout: Duration,
    /// How a message to the client names a setting.
    pub names: SettingNames,
}

/// Memory a request is charged for its body of `n` bytes before decoding: the body and as
/// much again for the tensors decoded from it (JSON numbers take more text than binary).
pub fn charge(n: usize) -> usize {
    n.saturating_mul(2)
}

pub fn over_budget(budget: &Budget, want: usize, names: SettingNames) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "server busy: this request needs {:.1} MB of the memory budget ({:.0} MB, {}) and {:.1} MB are held by requests in flight; retry later",
            want as f64 / 1e6,
            budget.limit as f64 / 1e6,
            names(Setting::MaxMemoryMb),
            budget.used() as f64 / 1e6
        ),
    )
    .closing()
}

fn too_large(n: &str, limit: usize, names: SettingNames) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the request body is {n} bytes, over the length limit of {limit} bytes ({} {})",
            names(Setting::MaxBodyMb),
            limit as f64 / 1e6
        ),
    )
    .closing()
}

/// The declared `Content-Length`, if any.
fn declared(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    match headers.get(header::CONTENT_LENGTH) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Some)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "Content-Length is not a byte count",
                )
                .closing()
            }),
    }
}

/// Reads a whole body within the limits, with its lease on the budget.
pub async fn read(
    body: Body,
    headers: &HeaderMap,
    limits: &BodyLimits,
    budget: &Arc<Budget>,
) -> Result<(Vec<u8>, Lease), ApiError> {
    let declared = declared(headers)?;
    if let Some(n) = declared
        && n > limits.max_bytes as u64
    {
        return Err(too_large(&n.to_string(), limits.max_bytes, limits.names));
    }
    let first = declared.unwrap_or(0) as usize;
    let mut lease = budget
        .lease(charge(first))
        .ok_or_else(|| over_budget(budget, charge(first), limits.names))?;
    let mut buf = Vec::with_capacity(first);
    let deadline = tokio::time::Instant::now() + limits.timeout;
    let mut body = body;
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => {
                return Err(ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the request body did not arrive within {} s ({}); {} bytes came",
                        limits.timeout.as_secs_f64(),
                        (limits.names)(Setting::BodyTimeout),
                        buf.len()
                    ),
                )
                .closing());
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the request body: {e}"),
                )
                .closing());
            }
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let total = buf.len().saturating_add(data.len());
        if total > limits.max_bytes {
            return Err(too_large(
                &format!("over {}", limits.max_bytes),
                limits.max_bytes,
                limits.names,
            ));
        }
        if total > first && !lease.resize(charge(total)) {
            return Err(over_budget(budget, charge(total), limits.names));
        }
        buf.extend_from_slice(&data);
    }
    Ok((buf, lease))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_share_the_budget_and_give_it_back() {
        let b = Budget::new(100);
        let mut a = b.lease(60).unwrap();
        assert!(b.lease(50).is_none(), "60 + 50 > 100");
        let c = b.lease(40).unwrap();
        assert_eq!(b.used(), 100);
        assert!(!a.resize(61), "no room to grow");
        assert_eq!(b.used(), 100, "a failed resize keeps what it held");
        assert!(a.resize(10));
        assert_eq!(b.used(), 50);
        drop(c);
        drop(a);
        assert_eq!(b.used(), 0);
        assert!(b.lease(101).is_none());
        assert!(b.lease(usize::MAX).is_none(), "no overflow");
    }
}
