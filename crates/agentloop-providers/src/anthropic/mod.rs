//! Anthropic Messages API: request bodies and stream decoding.

pub(crate) mod decode;
pub(crate) mod request;
