//! Shared checks of the fuzz targets. Each target states what must hold for
//! every input, beyond "does not panic".

use agentloop_providers::sse::{SseEvent, SseParser};
use agentloop_providers::{ReplayOutcome, replay_response, replay_sse, sse_from_json_lines};
use agentloop_types::{ApiKind, ModelChunk, StreamAssembler};

/// Parses `body` fed in the pieces `cuts` splits it into.
pub fn parse_in_pieces(body: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        let cut = cut.clamp(start, body.len());
        parser.push(&body[start..cut], &mut out);
        start = cut;
    }
    parser.push(&body[start..], &mut out);
    parser.finish(&mut out);
    out
}

/// One decoder case. The first byte picks how the rest is read:
/// `0`: a raw SSE body; `1`: JSON events one per line, framed as `api`
/// frames them; `2`: a whole non-streaming JSON response.
pub fn decoder_case(api: ApiKind, data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let outcome = match mode % 3 {
        0 => replay_sse(api, rest),
        1 => {
            let body = sse_from_json_lines(api, &String::from_utf8_lossy(rest));
            replay_sse(api, body.as_bytes())
        }
        _ => replay_response(api, rest),
    };
    check_outcome(&outcome);
}

/// What holds for every decoded turn, well formed or not.
pub fn check_outcome(outcome: &ReplayOutcome) {
    // A turn ends with a finish or an error; never neither.
    assert!(
        outcome.error.is_some() || outcome.stop_reason.is_some(),
        "turn ended with neither a finish nor an error: {outcome:?}"
    );
    // At most one finish, and nothing after it.
    let finishes: Vec<usize> = outcome
        .chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, ModelChunk::Finish { .. }))
        .map(|(i, _)| i)
        .collect();
    assert!(finishes.len() <= 1, "more than one finish: {outcome:?}");
    if let Some(&i) = finishes.first() {
        assert_eq!(i + 1, outcome.chunks.len(), "chunks after the finish");
    }
    // Without an error, the deltas assemble cleanly into the content.
    if outcome.error.is_none() {
        let mut assembler = StreamAssembler::new();
        for chunk in &outcome.chunks {
            if let ModelChunk::Delta(delta) = chunk {
                assert!(assembler.apply(delta).is_ok(), "delta rejected: {delta:?}");
            }
        }
        assert_eq!(assembler.finish(), outcome.content);
    }
}
