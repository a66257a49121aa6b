//! Embedding providers: the [`Embedder`] trait, two HTTP providers and an on-disk cache.
//!
//! ```text
//! Embedder ── space_id()  → "openai|http://127.0.0.1:8080|all-minilm|-": which vector space
//!          └─ embed(texts) → one vector per text, in order
//!
//! OpenAiCompatible  POST {base}/v1/embeddings  {"model","input":[…],"encoding_format":"float"}
//!                   → {"data":[{"index":i,"embedding":[…]}]}   sorted by index, count checked
//! Ollama            POST {base}/api/embed      {"model","input":[…]}
//!                   → {"embeddings":[[…]]}                      count checked
//! Cached<E>         vectors on disk keyed by sha256(space_id \0 text); only misses reach E
//! ```
//!
//! A provider is sent at most [`MAX_BATCH`] texts per request. Vectors need not be unit length;
//! the matcher normalises them. Errors name the URL (without any credentials in it) and never
//! include an API key.

mod cache;
mod http;
mod ollama;
mod openai;

use std::sync::Arc;

use async_trait::async_trait;

pub use cache::{COMPACT_ABOVE, CacheStats, Cached};
pub use http::provider_client;
pub use ollama::{OLLAMA_DEFAULT_URL, Ollama};
pub use openai::OpenAiCompatible;

/// The most texts sent to a provider in one request.
pub const MAX_BATCH: usize = 256;

/// What went wrong while embedding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The provider could not be reached, or the connection failed or timed out.
    #[error("{url}: {message}")]
    Transport {
        /// The endpoint, without credentials.
        url: String,
        /// What failed.
        message: String,
    },
    /// The provider answered with an error status.
    #[error("{url}: HTTP {status}: {body}")]
    Status {
        /// The endpoint, without credentials.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The start of the response body, as text.
        body: String,
    },
    /// The provider's answer is not what its protocol promises (not JSON, too few vectors, …).
    #[error("{url}: {message}")]
    Protocol {
        /// The endpoint, without credentials.
        url: String,
        /// What is wrong with the answer.
        message: String,
    },
    /// The on-disk cache could not be read or written.
    #[error("{path}: {source}")]
    Cache {
        /// The file or directory.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A bad setting or argument (a URL that is not http(s), vectors of mixed sizes, …).
    #[error("{0}")]
    Invalid(String),
    /// The bundled model failed.
    #[error("embedding model: {0}")]
    Model(String),
}

/// A text-to-vector model: a provider over HTTP, or one that runs in the process.
///
/// # Contract
///
/// - [`embed`](Embedder::embed) returns exactly one vector per text, in the order given, all of
///   the same length; an empty input gives an empty output without calling anyone.
/// - [`space_id`](Embedder::space_id) names the vector space: two embedders with the same id
///   give comparable vectors for the same text (a cache may serve one's vectors for the other),
///   two with different ids never share cached vectors. It includes the provider, the endpoint
///   (without credentials), the model and any requested dimension count.
#[async_trait]
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// The identity of the vector space (see the contract).
    fn space_id(&self) -> String;

    /// One vector per text.
    async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

#[async_trait]
impl<E: Embedder + ?Sized> Embedder for Arc<E> {
    fn space_id(&self) -> String {
        (**self).space_id()
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts).await
    }
}

#[async_trait]
impl<E: Embedder + ?Sized> Embedder for Box<E> {
    fn space_id(&self) -> String {
        (**self).space_id()
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts).await
    }
}

/// Checks a batch answer: one vector per text, all of one length, finite coordinates.
fn check_batch(url: &str, sent: usize, vectors: &[Vec<f32>]) -> Result<(), EmbedError> {
    let fail = |message: String| EmbedError::Protocol {
        url: url.to_string(),
        message,
    };
    if vectors.len() != sent {
        return Err(fail(format!(
            "sent {sent} texts, received {} vectors",
            vectors.len()
        )));
    }
    let dims = vectors.first().map_or(0, Vec::len);
    if vectors.iter().any(|v| v.len() != dims) {
        return Err(fail("vectors of different lengths in one answer".into()));
    }
    if sent > 0 && dims == 0 {
        return Err(fail("empty vectors".into()));
    }
    if vectors.iter().flatten().any(|x| !x.is_finite()) {
        return Err(fail("a coordinate is not a finite number".into()));
    }
    Ok(())
}
