//! The SSE parser: any bytes, in any chunking, give the same events, and
//! the events are well formed.
#![no_main]

use agentloop_fuzz::parse_in_pieces;
use agentloop_providers::sse::parse_all;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Vec<u16>, Vec<u8>)| {
    let (cuts, body) = input;
    let whole = parse_all(&body);
    let mut cuts: Vec<usize> = cuts.into_iter().map(usize::from).collect();
    cuts.sort_unstable();
    assert_eq!(
        parse_in_pieces(&body, &cuts),
        whole,
        "chunking changed the events"
    );
    // One byte at a time, the worst chunking a socket can produce.
    let bytewise: Vec<usize> = (0..body.len()).collect();
    assert_eq!(parse_in_pieces(&body, &bytewise), whole);
    for event in &whole {
        // Line ends never leak into fields; an id never holds NUL.
        assert!(!event.event.contains(['\r', '\n']));
        assert!(!event.data.contains('\r'));
        assert!(!event.event.is_empty());
        if let Some(id) = &event.id {
            assert!(!id.contains(['\r', '\n', '\0']));
        }
    }
});
