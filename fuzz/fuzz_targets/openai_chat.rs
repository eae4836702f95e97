//! The openai_chat decoder: SSE bodies, JSON-lines recordings and non-streaming
//! responses, checked by [`agentloop_fuzz::check_outcome`].
#![no_main]

use agentloop_types::ApiKind;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    agentloop_fuzz::decoder_case(ApiKind::OpenaiChat, data);
});
