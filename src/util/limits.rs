//! Resource budgets, checked before anything is allocated from a size a user controls (a
//! tensor file's header, a generated input's shape, a model's declared tensors): a tensor may
//! take at most half the memory available when the check runs (`MemAvailable` in
//! /proc/meminfo), and at most `ACCEVAL_MAX_TENSOR_BYTES` when that is set. An allocation
//! that large would abort the process (Rust aborts on allocation failure) instead of failing
//! cleanly, so it is refused up front with the value, the limit and what to do.

use super::Error;

/// The most bytes one tensor may take.
pub fn max_tensor_bytes() -> u64 {
    if let Some(v) = std::env::var("ACCEVAL_MAX_TENSOR_BYTES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        return v;
    }
    available_bytes().map(|a| a / 2).unwrap_or(8 << 30)
}

/// `MemAvailable` from /proc/meminfo, bytes.
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// This process's resident set (`VmRSS` of /proc/self/status), bytes.
pub fn resident_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Bytes of `dims` elements of `elem_bytes` each, or why it is too large.
pub fn tensor_bytes(what: &str, dims: &[usize], elem_bytes: usize) -> Result<u64, Error> {
    let mut n: u64 = 1;
    for &d in dims {
        n = n.checked_mul(d as u64).ok_or_else(|| Error::Uncountable {
            what: what.to_string(),
            dims: dims.to_vec(),
        })?;
    }
    let bytes = n
        .checked_mul(elem_bytes as u64)
        .ok_or_else(|| Error::ByteOverflow {
            what: what.to_string(),
            elements: n,
            elem_bytes,
        })?;
    let limit = max_tensor_bytes();
    if bytes > limit {
        return Err(Error::OverBudget {
            what: what.to_string(),
            dims: dims.to_vec(),
            bytes,
            limit,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_and_budget() {
        assert!(tensor_bytes("x", &[1 << 32, 1 << 32, 16], 4).is_err());
        assert!(tensor_bytes("x", &[1_000_000, 1_000_000], 4).is_err());
        assert_eq!(tensor_bytes("x", &[2, 3], 4).unwrap(), 24);
        assert!(max_tensor_bytes() > 0);
    }
}
