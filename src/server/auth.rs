//! `serve --api-key`: a bearer token every request must carry (`Authorization: Bearer KEY`),
//! except the health probes (`/v2/health/live`, `/v2/health/ready`) that orchestrators call
//! without credentials. The comparison takes the same time wherever the given key differs:
//! both sides are hashed with SHA-256 and the digests compared without an early exit.

use sha2::{Digest, Sha256};

/// The key a server was started with, kept as its digest.
#[derive(Clone)]
pub struct ApiKey {
    digest: [u8; 32],
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(..)")
    }
}

impl ApiKey {
    pub fn new(key: &str) -> ApiKey {
        ApiKey {
            digest: Sha256::digest(key.as_bytes()).into(),
        }
    }

    /// Whether `given` is the key, in time independent of where it differs.
    pub fn matches(&self, given: &str) -> bool {
        let d: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        let diff = d
            .iter()
            .zip(&self.digest)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }

    /// Whether the `Authorization` header value carries the key.
    pub fn allows(&self, authorization: Option<&str>) -> bool {
        let token = authorization.and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(token.trim())
        });
        // Compare even when the header is missing, so both cases take the same time.
        let ok = self.matches(token.unwrap_or(""));
        ok && token.is_some()
    }
}

/// Paths open without the key.
pub fn is_open(path: &str) -> bool {
    matches!(path, "/v2/health/live" | "/v2/health/ready")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bearer_key_passes() {
        let k = ApiKey::new("s3cret");
        assert!(k.allows(Some("Bearer s3cret")));
        assert!(k.allows(Some("bearer  s3cret ")));
        for bad in [
            None,
            Some(""),
            Some("Bearer"),
            Some("Bearer s3cre"),
            Some("Bearer s3cret2"),
            Some("Basic s3cret"),
            Some("s3cret"),
        ] {
            assert!(!k.allows(bad), "{bad:?}");
        }
        let empty = ApiKey::new("");
        assert!(!empty.allows(None), "a missing header never matches");
        assert!(
            is_open("/v2/health/ready") && !is_open("/v2/models/m/infer") && !is_open("/metrics")
        );
    }
}
