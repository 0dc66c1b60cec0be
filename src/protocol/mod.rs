//! Wire formats shared by the servers and the clients acceval runs: the KServe v2 / Triton
//! inference protocol (JSON and binary tensors), the LLM generation APIs (OpenAI
//! completions and chat, TGI, Triton generate, vLLM), and the server-sent-events parser
//! their streams use. Encoding and decoding only: no sockets, no timing. [`Error`] says why a
//! body does not decode.

pub mod generate;
pub mod kserve;
pub mod sse;

/// Why a body is not a valid message of its protocol. The text is what the peer is told (the
/// `400 Bad Request` body `serve` answers, the reason a response counts as bad): the decoders
/// have one message per rule of the wire format, so the variants carry that free-form
/// validation text rather than one variant per rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A request body that breaks the v2 protocol.
    #[error("{0}")]
    InvalidRequest(String),
    /// A response body that breaks the v2 protocol.
    #[error("{0}")]
    InvalidResponse(String),
}
