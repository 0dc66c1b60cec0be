//! Wire formats shared by the servers and the clients acceval runs: the KServe v2 / Triton
//! inference protocol (JSON and binary tensors), the LLM generation APIs (OpenAI
//! completions and chat, TGI, Triton generate, vLLM), and the server-sent-events parser
//! their streams use. Encoding and decoding only: no sockets, no timing.

pub mod generate;
pub mod kserve;
pub mod sse;
