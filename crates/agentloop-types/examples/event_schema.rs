//! Prints the JSON Schema of one event of a run's stream (`LoopEvent`), as
//! `cargo xtask schema` writes it to `docs/events.schema.json`.

fn main() {
    let schema = schemars::schema_for!(agentloop_types::LoopEvent);
    match serde_json::to_string_pretty(&schema) {
        Ok(text) => println!("{text}"),
        Err(e) => {
            eprintln!("event_schema: {e}");
            std::process::exit(1);
        }
    }
}
