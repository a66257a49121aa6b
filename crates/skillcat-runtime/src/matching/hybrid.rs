//! Lexical and dense ranking blended: the [`EmbeddingMatcher`].

use async_trait::async_trait;

use super::embed::{EmbedError, Embedder};
use super::{Bm25Index, Bm25Params, DenseIndex, FUSION_DEPTH, Hit, Matcher, SkillDoc, fuse};

pub use skillcat_config::matcher::DEFAULT_WEIGHT;

/// Ranks skills by BM25 and by an embedder's cosine similarity, fused per query (see
/// [`fuse`]): `weight · bm25 + (1 − weight) · dense` over each ranking's best
/// [`FUSION_DEPTH`].
#[derive(Debug)]
pub struct EmbeddingMatcher<E> {
    embedder: E,
    lexical: Bm25Index,
    dense: DenseIndex,
    weight: f32,
}

impl<E: Embedder> EmbeddingMatcher<E> {
    /// Indexes `docs` for BM25 and embeds each one's [`dense_text`](SkillDoc::dense_text).
    pub async fn build(
        embedder: E,
        docs: &[SkillDoc<'_>],
        weight: f32,
    ) -> Result<Self, EmbedError> {
        Self::build_with(embedder, docs, weight, Bm25Params::default()).await
    }

    /// [`build`](Self::build) with BM25 parameters.
    pub async fn build_with(
        embedder: E,
        docs: &[SkillDoc<'_>],
        weight: f32,
        params: Bm25Params,
    ) -> Result<Self, EmbedError> {
        let texts: Vec<String> = docs.iter().map(SkillDoc::dense_text).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&refs).await?;
        if vectors.len() != docs.len() {
            return Err(EmbedError::Invalid(format!(
                "{}: {} vectors for {} skills",
                embedder.space_id(),
                vectors.len(),
                docs.len()
            )));
        }
        Self::from_parts(
            embedder,
            Bm25Index::build_with(docs, params),
            DenseIndex::new(vectors)?,
            weight,
        )
    }

    /// A matcher from an index and skill vectors made elsewhere (both in the same skill order).
    pub fn from_parts(
        embedder: E,
        lexical: Bm25Index,
        dense: DenseIndex,
        weight: f32,
    ) -> Result<Self, EmbedError> {
        if lexical.len() != dense.len() {
            return Err(EmbedError::Invalid(format!(
                "{} skills indexed, {} skill vectors",
                lexical.len(),
                dense.len()
            )));
        }
        Ok(EmbeddingMatcher {
            embedder,
            lexical,
            dense,
            weight,
        })
    }

    /// The embedder.
    pub fn embedder(&self) -> &E {
        &self.embedder
    }

    /// The BM25 index.
    pub fn lexical(&self) -> &Bm25Index {
        &self.lexical
    }

    /// The BM25 share of the blend.
    pub fn weight(&self) -> f32 {
        self.weight
    }

    /// Ranks with a query vector already computed.
    pub fn rank_with_vector(
        &self,
        message: &str,
        vector: &[f32],
        k: usize,
    ) -> Result<Vec<Hit>, EmbedError> {
        let lexical = self.lexical.search(message, FUSION_DEPTH);
        let dense = self.dense.search(vector, FUSION_DEPTH)?;
        Ok(fuse(&lexical, &dense, self.weight, k))
    }
}

#[async_trait]
impl<E: Embedder> Matcher for EmbeddingMatcher<E> {
    async fn rank(&self, message: &str, k: usize) -> Result<Vec<Hit>, EmbedError> {
        let mut all = self.rank_all(&[message], k).await?;
        Ok(all.pop().unwrap_or_default())
    }

    async fn rank_all(&self, messages: &[&str], k: usize) -> Result<Vec<Vec<Hit>>, EmbedError> {
        let vectors = self.embedder.embed(messages).await?;
        if vectors.len() != messages.len() {
            return Err(EmbedError::Invalid(format!(
                "{}: {} vectors for {} messages",
                self.embedder.space_id(),
                vectors.len(),
                messages.len()
            )));
        }
        messages
            .iter()
            .zip(&vectors)
            .map(|(m, v)| self.rank_with_vector(m, v, k))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-word "model": coordinate 0 counts "kids", coordinate 1 counts "money".
    #[derive(Debug)]
    struct Toy;

    #[async_trait]
    impl Embedder for Toy {
        fn space_id(&self) -> String {
            "test|toy".into()
        }

        async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts
                .iter()
                .map(|t| {
                    let t = t.to_lowercase();
                    let kids = ["child", "kid", "year-old", "learn"]
                        .iter()
                        .filter(|w| t.contains(*w))
                        .count();
                    let money = ["invest", "stock", "portfolio", "bond"]
                        .iter()
                        .filter(|w| t.contains(*w))
                        .count();
                    vec![kids as f32 + 0.01, money as f32 + 0.01]
                })
                .collect())
        }
    }

    #[tokio::test]
    async fn dense_finds_the_paraphrase_lexical_misses() {
        let docs = [
            SkillDoc::new(
                "abcmouse",
                "Educational learning activities for children.",
                "",
            ),
            SkillDoc::new(
                "portfolio-pilot",
                "Portfolio assessment and investing guidance.",
                "",
            ),
        ];
        let message = "My 4-year-old refuses to sit still";
        let matcher = EmbeddingMatcher::build(Toy, &docs, 0.5).await.unwrap();
        assert!(matcher.lexical().search(message, 2).is_empty());
        let hits = matcher.rank(message, 2).await.unwrap();
        assert_eq!(hits[0].index, 0);
        let all = matcher
            .rank_all(&[message, "rebalance my bond holdings"], 1)
            .await
            .unwrap();
        assert_eq!(all[1][0].index, 1);
        // Pure lexical: nothing shared, nothing found.
        let lexical_only = EmbeddingMatcher::build(Toy, &docs, 1.0).await.unwrap();
        assert_eq!(lexical_only.rank(message, 2).await.unwrap()[0].score, 0.0);
    }
}
