//! An OpenAI-compatible embeddings endpoint (OpenAI, vLLM, llama.cpp server, LM Studio, TEI,
//! Ollama's `/v1`).
//!
//! ```text
//! POST {base}/v1/embeddings        Authorization: Bearer KEY (when a key is set)
//! {"model": M, "input": ["t1", "t2"], "encoding_format": "float", "dimensions": D?}
//! → {"object": "list", "data": [{"index": 1, "embedding": [...]}, {"index": 0, ...}], ...}
//! ```
//!
//! Items are put back in input order by `index`; every index must appear exactly once.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use skillcat_remote::client::reqwest::Url;
use skillcat_remote::client::{Client, redact};

use super::http::{client, endpoint, parse_base, post_json, space_url};
use super::{EmbedError, Embedder, MAX_BATCH, check_batch};

/// A client of an OpenAI-compatible `POST /v1/embeddings` endpoint.
#[derive(Clone)]
pub struct OpenAiCompatible {
    client: Client,
    base: Url,
    url: Url,
    model: String,
    api_key: Option<String>,
    dimensions: Option<usize>,
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("url", &redact(&self.url))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("dimensions", &self.dimensions)
            .finish()
    }
}

impl OpenAiCompatible {
    /// A client of `{base_url}/v1/embeddings` for `model` (a base that already ends in `/v1`
    /// is not given a second one). Fails on a URL that is not http(s).
    pub fn new(base_url: &str, model: impl Into<String>) -> Result<Self, EmbedError> {
        let base = parse_base(base_url)?;
        Ok(OpenAiCompatible {
            client: client()?,
            url: endpoint(&base, "v1/embeddings"),
            base,
            model: model.into(),
            api_key: None,
            dimensions: None,
        })
    }

    /// Sends `Authorization: Bearer KEY` with every request.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Asks for vectors of `dimensions` coordinates (models that support shortening).
    pub fn with_dimensions(mut self, dimensions: usize) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// Uses `client` for requests (proxies, timeouts, certificates of your choosing).
    pub fn with_client(mut self, client: impl Into<Client>) -> Self {
        self.client = client.into();
        self
    }

    async fn batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        #[derive(Deserialize)]
        struct Answer {
            data: Vec<Item>,
        }
        #[derive(Deserialize)]
        struct Item {
            index: usize,
            embedding: Vec<f32>,
        }
        let mut body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        if let Some(d) = self.dimensions {
            body["dimensions"] = d.into();
        }
        let answer: Answer =
            post_json(&self.client, &self.url, self.api_key.as_deref(), &body).await?;
        let shown = redact(&self.url);
        let received = answer.data.len();
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in answer.data {
            match slots.get_mut(item.index) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => {
                    return Err(EmbedError::Protocol {
                        url: shown,
                        message: format!(
                            "sent {} texts, received {received} vectors (index {} out of range \
                             or repeated)",
                            texts.len(),
                            item.index
                        ),
                    });
                }
            }
        }
        let vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
        check_batch(&shown, texts.len(), &vectors)?;
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for OpenAiCompatible {
    fn space_id(&self) -> String {
        let dims = self
            .dimensions
            .map_or_else(|| "-".to_string(), |d| d.to_string());
        format!("openai|{}|{}|{dims}", space_url(&self.base), self.model)
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(MAX_BATCH) {
            out.extend(self.batch(chunk).await?);
        }
        Ok(out)
    }
}
