//! An in-memory [`Retriever`] and the cited form retrieved passages take
//! in front of the model.
//!
//! Passages are injected as one system message (id
//! [`RETRIEVED_MESSAGE_ID`]) placed before the user's latest message:
//!
//! ```text
//! Retrieved passages. Cite them by number, like [1], when you use them.
//!
//! [1] handbook.md
//! The text of the passage.
//!
//! [2] ...
//! ```

use agentloop_types::{Passage, RetrievalError, Retriever};
use futures::future::BoxFuture;

pub use crate::machine::passages::{
    RETRIEVED_MESSAGE_ID, cite_passages, inject_passages, last_user_text,
};

/// Passages held in memory, ranked by how many distinct query words they
/// contain (case-insensitive). For tests, demos and small corpora.
#[derive(Debug, Clone, Default)]
pub struct InMemoryRetriever {
    passages: Vec<Passage>,
}

impl InMemoryRetriever {
    /// A retriever over `passages` (their `score` is ignored).
    pub fn new(passages: impl IntoIterator<Item = Passage>) -> Self {
        Self {
            passages: passages.into_iter().collect(),
        }
    }

    /// Adds a passage.
    pub fn add(
        &mut self,
        id: impl Into<String>,
        source: impl Into<String>,
        text: impl Into<String>,
    ) {
        self.passages.push(Passage {
            id: id.into(),
            source: source.into(),
            text: text.into(),
            score: 0.0,
        });
    }

    fn rank(&self, query: &str, limit: usize) -> Vec<Passage> {
        let mut query_words: Vec<String> = words(query).collect();
        query_words.sort();
        query_words.dedup();
        let mut scored: Vec<(usize, Passage)> = self
            .passages
            .iter()
            .filter_map(|p| {
                let text: Vec<String> = words(&p.text).collect();
                let hits = query_words.iter().filter(|w| text.contains(w)).count();
                (hits > 0).then(|| {
                    let mut passage = p.clone();
                    passage.score = hits as f64 / query_words.len().max(1) as f64;
                    (hits, passage)
                })
            })
            .collect();
        // Stable: ties keep insertion order.
        scored.sort_by_key(|s| std::cmp::Reverse(s.0));
        scored.into_iter().take(limit).map(|(_, p)| p).collect()
    }
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 2)
        .map(str::to_lowercase)
}

impl Retriever for InMemoryRetriever {
    fn retrieve<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Passage>, RetrievalError>> {
        let result = if query.trim().is_empty() {
            Err(RetrievalError::InvalidQuery {
                message: "the query is empty".to_owned(),
            })
        } else {
            Ok(self.rank(query, limit))
        };
        Box::pin(futures::future::ready(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_by_distinct_query_words() {
        let mut r = InMemoryRetriever::default();
        r.add("a", "a.md", "Rust has ownership.");
        r.add("b", "b.md", "Rust ownership and borrowing rules.");
        r.add("c", "c.md", "Cooking pasta.");
        let found = r.rank("How does Rust ownership and borrowing work?", 5);
        let ids: Vec<_> = found.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["b", "a"]);
        let cited = cite_passages(&found).unwrap_or_default();
        assert!(cited.contains("[1] b.md\nRust ownership and borrowing rules."));
        assert!(cited.contains("[2] a.md"));
    }
}
