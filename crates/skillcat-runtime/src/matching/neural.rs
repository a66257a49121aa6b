//! The bundled model (feature `neural`): paraphrase-MiniLM-L3-v2, 4-bit weights compiled into
//! the binary by the `pocket-encoder` crate. Runs on the CPU, never touches the network.

use async_trait::async_trait;

use super::embed::{EmbedError, Embedder, MAX_BATCH};

/// An [`Embedder`] running the bundled MiniLM-L3 model in the process (384 coordinates, inputs
/// cut at 128 tokens). Work runs on the blocking thread pool.
#[derive(Clone)]
pub struct PocketEncoder {
    encoder: pocket_encoder::Encoder,
}

impl std::fmt::Debug for PocketEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PocketEncoder")
            .field("space", &self.space_id())
            .finish()
    }
}

impl PocketEncoder {
    /// Loads the model (once per process; about 80 ms).
    pub fn new() -> Result<Self, EmbedError> {
        let encoder =
            pocket_encoder::Encoder::new().map_err(|e| EmbedError::Model(e.to_string()))?;
        Ok(PocketEncoder { encoder })
    }
}

#[async_trait]
impl Embedder for PocketEncoder {
    fn space_id(&self) -> String {
        let info = pocket_encoder::model_info();
        format!("pocket|{}|{}|{}", info.id, info.revision, info.dimensions)
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // The model refuses blank text: blank inputs get a zero vector (similar to nothing).
        // The model reads 128 tokens; it refuses inputs over 64 KiB. Keep the first 8 KiB.
        let owned: Vec<String> = texts.iter().map(|t| head(t, 8 << 10).to_string()).collect();
        let encoder = self.encoder.clone();
        tokio::task::spawn_blocking(move || {
            let dims = pocket_encoder::model_info().dimensions;
            let filled: Vec<&str> = owned
                .iter()
                .map(String::as_str)
                .filter(|t| !t.trim().is_empty())
                .collect();
            // The encoder takes at most 4,096 texts a call.
            let mut done = Vec::with_capacity(filled.len());
            for chunk in filled.chunks(MAX_BATCH) {
                done.extend(
                    encoder
                        .embed(chunk)
                        .map_err(|e| EmbedError::Model(e.to_string()))?,
                );
            }
            let mut vectors = done.into_iter();
            Ok(owned
                .iter()
                .map(|t| {
                    if t.trim().is_empty() {
                        vec![0.0; dims]
                    } else {
                        vectors.next().unwrap_or_else(|| vec![0.0; dims])
                    }
                })
                .collect())
        })
        .await
        .map_err(|e| EmbedError::Model(e.to_string()))?
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
