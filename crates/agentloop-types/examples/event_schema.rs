//! Prints the JSON Schema of one side of a run's protocol, as `cargo xtask
//! schema` writes it into `docs/`: `events` (one event of a run's stream,
//! `LoopEvent`, the default) or `inputs` (one thing submitted to a run,
//! `RunInput`).

fn main() {
    let which = std::env::args().nth(1);
    let schema = match which.as_deref() {
        None | Some("events") => schemars::schema_for!(agentloop_types::LoopEvent),
        Some("inputs") => schemars::schema_for!(agentloop_types::RunInput),
        Some(other) => {
            eprintln!("event_schema: expected `events` or `inputs`, got `{other}`");
            std::process::exit(2);
        }
    };
    match serde_json::to_string_pretty(&schema) {
        Ok(text) => println!("{text}"),
        Err(e) => {
            eprintln!("event_schema: {e}");
            std::process::exit(1);
        }
    }
}
