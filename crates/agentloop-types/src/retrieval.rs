//! The retrieval port: something that finds passages relevant to a query
//! (a vector store, a search index, an in-memory list). Strategies put what
//! it returns in front of the model as cited context.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// One retrieved passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Passage {
    /// Stable id of the passage in its store.
    pub id: String,
    /// Where it comes from (a file name, a URL, a title), shown in citations.
    pub source: String,
    /// The text.
    pub text: String,
    /// Relevance; higher is better. Only the order matters.
    pub score: f64,
}

/// Why retrieval failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RetrievalError {
    /// The store could not be reached or failed.
    #[error("retrieval store failed: {message}")]
    Store {
        /// What it said.
        message: String,
    },
    /// The query cannot be answered (empty, too long, bad syntax).
    #[error("invalid retrieval query: {message}")]
    InvalidQuery {
        /// What is wrong.
        message: String,
    },
}

/// Finds passages for a query. Implementations return a boxed future
/// (`Box::pin(async move { ... })`), so no macro is needed to implement it.
pub trait Retriever: Send + Sync {
    /// At most `limit` passages for `query`, best first.
    fn retrieve<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Passage>, RetrievalError>>;
}
