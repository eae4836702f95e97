//! OpenAI Chat Completions (and compatible servers): request bodies and
//! stream decoding.

pub(crate) mod decode;
pub(crate) mod request;
