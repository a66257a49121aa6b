//! Ollama's native embeddings endpoint.
//!
//! ```text
//! POST {base}/api/embed             (default base http://localhost:11434)
//! {"model": M, "input": ["t1", "t2"]}
//! → {"model": M, "embeddings": [[...], [...]], "total_duration": …, …}
//! ```
//!
//! The older `/api/embeddings` (one `prompt`, one `embedding`) is not used.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use skillcat_remote::client::reqwest::Url;
use skillcat_remote::client::{Client, redact};

use super::http::{client, endpoint, parse_base, post_json, space_url};
use super::{EmbedError, Embedder, MAX_BATCH, check_batch};

/// Ollama's default address.
pub const OLLAMA_DEFAULT_URL: &str = "http://localhost:11434";

/// A client of Ollama's `POST /api/embed`.
#[derive(Clone)]
pub struct Ollama {
    client: Client,
    base: Url,
    url: Url,
    model: String,
}

impl std::fmt::Debug for Ollama {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ollama")
            .field("url", &redact(&self.url))
            .field("model", &self.model)
            .finish()
    }
}

impl Ollama {
    /// A client of `{base_url}/api/embed` for `model`. Fails on a URL that is not http(s).
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<Self, EmbedError> {
        let base = parse_base(base_url)?;
        Ok(Ollama {
            client: client()?,
            url: endpoint(&base, "api/embed"),
            base,
            model: model.into(),
        })
    }

    /// Uses `client` for requests.
    pub fn with_client(mut self, client: impl Into<Client>) -> Self {
        self.client = client.into();
        self
    }
}

#[async_trait]
impl Embedder for Ollama {
    fn space_id(&self) -> String {
        format!("ollama|{}|{}|-", space_url(&self.base), self.model)
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        #[derive(Deserialize)]
        struct Answer {
            embeddings: Vec<Vec<f32>>,
        }
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(MAX_BATCH) {
            let body = json!({"model": self.model, "input": chunk});
            let answer: Answer = post_json(&self.client, &self.url, None, &body).await?;
            check_batch(&redact(&self.url), chunk.len(), &answer.embeddings)?;
            out.extend(answer.embeddings);
        }
        Ok(out)
    }
}
