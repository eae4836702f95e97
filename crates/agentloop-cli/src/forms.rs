//! The forms MCP servers ask the person to fill in while one of their
//! tools runs (MCP elicitation), asked on the terminal during `agentloop
//! run`: the server's message, then each field on a line of its own (its
//! title, description, choices and default; `*` marks a required one),
//! read and checked against the field's type, then whether to send.
//! Enter keeps a field's default (or leaves an optional one out); Ctrl-D
//! declines the form, Ctrl-C cancels it. What a server writes is shown
//! with its escapes made visible. The spinner holds still while a form is
//! asked ([`FormsOpen`]).
//!
//! Only where a person can answer (stdin and stdout a terminal, no
//! `--json`): elsewhere the client does not offer elicitation at all.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentloop_mcp::{Elicitor, FormAnswer, FormRequest};
use futures::future::BoxFuture;
use rustyline::error::ReadlineError;
use serde_json::{Map, Value};

use crate::out::sanitize;

/// Set while a form is being asked: the spinner does not draw over it.
#[derive(Debug, Clone, Default)]
pub struct FormsOpen(Arc<AtomicBool>);

impl FormsOpen {
    /// Whether a form is being asked now.
    pub fn is_open(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Asks the forms on the terminal, one at a time.
pub struct TerminalForms {
    open: FormsOpen,
    /// One form at a time, however many servers ask at once.
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl TerminalForms {
    /// The forms' asker, and the flag the spinner reads.
    pub fn new() -> (Self, FormsOpen) {
        let open = FormsOpen::default();
        let forms = Self {
            open: open.clone(),
            turn: Arc::default(),
        };
        (forms, open)
    }
}

impl Elicitor for TerminalForms {
    fn answer(&self, request: FormRequest) -> BoxFuture<'static, FormAnswer> {
        let open = self.open.clone();
        let turn = self.turn.clone();
        Box::pin(async move {
            let _turn = turn.lock().await;
            open.0.store(true, Ordering::Release);
            let answered = tokio::task::spawn_blocking(move || ask(&request))
                .await
                .unwrap_or(FormAnswer::Cancel);
            open.0.store(false, Ordering::Release);
            answered
        })
    }
}

/// Asks `request` on the terminal.
fn ask(request: &FormRequest) -> FormAnswer {
    let config = rustyline::Config::builder()
        .behavior(rustyline::config::Behavior::PreferTerm)
        .auto_add_history(false)
        .build();
    let Ok(mut editor) = rustyline::DefaultEditor::with_config(config) else {
        return FormAnswer::Decline;
    };
    let fields = fields(&request.schema);
    eprintln!(
        "\r\x1b[2K? {} asks: {}",
        sanitize(&request.server),
        sanitize(&request.message)
    );
    eprintln!("  (Enter keeps the default; Ctrl-D declines the form, Ctrl-C cancels it)");
    let mut answers = Map::new();
    for field in &fields {
        match ask_field(&mut editor, field) {
            Ok(Some(value)) => {
                answers.insert(field.name.clone(), value);
            }
            Ok(None) => {}
            Err(stop) => return stop,
        }
    }
    loop {
        match editor.readline("  Send these answers? [Y/n]: ") {
            Ok(line) => match line.trim().to_ascii_lowercase().as_str() {
                "" | "y" | "yes" => return FormAnswer::Accept(answers),
                "n" | "no" => return FormAnswer::Decline,
                _ => eprintln!("  Answer y or n."),
            },
            Err(ReadlineError::Interrupted) => return FormAnswer::Cancel,
            Err(_) => return FormAnswer::Decline,
        }
    }
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    label: String,
    required: bool,
    default: Option<Value>,
    kind: Kind,
}

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text,
    Integer {
        min: Option<f64>,
        max: Option<f64>,
    },
    Number {
        min: Option<f64>,
        max: Option<f64>,
    },
    Boolean,
    /// One of the choices: (value, what it is called).
    Choice(Vec<(Value, String)>),
    /// Several of the choices.
    Choices {
        options: Vec<(Value, String)>,
        min: Option<usize>,
        max: Option<usize>,
    },
}

/// The form's fields, in the schema's order.
fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let title = property["title"].as_str().unwrap_or(name);
            let label = match property["description"].as_str() {
                Some(description) => format!("{title} — {description}"),
                None => title.to_owned(),
            };
            Field {
                name: name.clone(),
                label: sanitize(&label).into_owned(),
                required: required.contains(&name.as_str()),
                default: property.get("default").cloned(),
                kind: kind(property),
            }
        })
        .collect()
}

fn kind(property: &Value) -> Kind {
    let bound = |key: &str| property[key].as_f64();
    match property["type"].as_str() {
        Some("integer") => Kind::Integer {
            min: bound("minimum"),
            max: bound("maximum"),
        },
        Some("number") => Kind::Number {
            min: bound("minimum"),
            max: bound("maximum"),
        },
        Some("boolean") => Kind::Boolean,
        Some("array") => Kind::Choices {
            options: choices(&property["items"]),
            min: property["minItems"].as_u64().map(|n| n as usize),
            max: property["maxItems"].as_u64().map(|n| n as usize),
        },
        _ => match choices(property) {
            options if options.is_empty() => Kind::Text,
            options => Kind::Choice(options),
        },
    }
}

/// The choices a property offers: `enum` (named by `enumNames` when it
/// has them) or `oneOf`/`anyOf` of `{const, title}`.
fn choices(property: &Value) -> Vec<(Value, String)> {
    if let Some(values) = property["enum"].as_array() {
        let names = property["enumNames"].as_array();
        return values
            .iter()
            .enumerate()
            .map(|(n, value)| {
                let name = names
                    .and_then(|names| names.get(n))
                    .and_then(Value::as_str)
                    .map_or_else(|| plain(value), str::to_owned);
                (value.clone(), sanitize(&name).into_owned())
            })
            .collect();
    }
    let listed = property["oneOf"]
        .as_array()
        .or_else(|| property["anyOf"].as_array());
    listed
        .map(|options| {
            options
                .iter()
                .filter_map(|option| {
                    let value = option.get("const")?.clone();
                    let name = option["title"]
                        .as_str()
                        .map_or_else(|| plain(&value), str::to_owned);
                    Some((value, sanitize(&name).into_owned()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A value as a person reads it: a string without its quotes.
fn plain(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// The field's prompt: its label, choices, default and `*` when required.
fn prompt(field: &Field) -> String {
    let mut line = format!("  {}", field.label);
    let listed = |options: &[(Value, String)]| {
        options
            .iter()
            .enumerate()
            .map(|(n, (_, name))| format!("{} {name}", n + 1))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &field.kind {
        Kind::Boolean => line.push_str(" [y/n]"),
        Kind::Choice(options) => line.push_str(&format!(" ({})", listed(options))),
        Kind::Choices { options, .. } => {
            line.push_str(&format!(" ({}; several, comma-separated)", listed(options)));
        }
        _ => {}
    }
    if let Some(default) = &field.default {
        let shown = match default {
            Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(", "),
            other => plain(other),
        };
        line.push_str(&format!(" [{}]", sanitize(&shown)));
    }
    if field.required {
        line.push('*');
    }
    line.push_str(": ");
    line
}

/// Asks one field until its answer fits: `Ok(None)` leaves an optional
/// field out; `Err` is the form declined or cancelled.
fn ask_field(
    editor: &mut rustyline::DefaultEditor,
    field: &Field,
) -> Result<Option<Value>, FormAnswer> {
    loop {
        let line = match editor.readline(&prompt(field)) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => return Err(FormAnswer::Cancel),
            Err(_) => return Err(FormAnswer::Decline),
        };
        match read(field, line.trim()) {
            Ok(value) => return Ok(value),
            Err(problem) => eprintln!("  {problem}"),
        }
    }
}

/// The value `text` gives `field`, or what is wrong with it.
fn read(field: &Field, text: &str) -> Result<Option<Value>, String> {
    if text.is_empty() {
        return match (&field.default, field.required) {
            (Some(default), _) => Ok(Some(default.clone())),
            (None, true) => Err("This one is required.".to_owned()),
            (None, false) => Ok(None),
        };
    }
    let value = match &field.kind {
        Kind::Text => Value::String(text.to_owned()),
        Kind::Integer { min, max } => {
            let n: i64 = text
                .parse()
                .map_err(|_| format!("{text:?} is not a whole number."))?;
            within(n as f64, *min, *max)?;
            Value::from(n)
        }
        Kind::Number { min, max } => {
            let n: f64 = text
                .parse()
                .ok()
                .filter(|n: &f64| n.is_finite())
                .ok_or_else(|| format!("{text:?} is not a number."))?;
            within(n, *min, *max)?;
            Value::from(n)
        }
        Kind::Boolean => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("Answer y or n.".to_owned()),
        },
        Kind::Choice(options) => choose(options, text)?,
        Kind::Choices { options, min, max } => {
            let chosen = text
                .split(',')
                .map(|part| choose(options, part.trim()))
                .collect::<Result<Vec<_>, _>>()?;
            if min.is_some_and(|min| chosen.len() < min)
                || max.is_some_and(|max| chosen.len() > max)
            {
                return Err(format!(
                    "Choose between {} and {}.",
                    min.unwrap_or(0),
                    max.map_or_else(|| "any number".to_owned(), |max| max.to_string())
                ));
            }
            Value::Array(chosen)
        }
    };
    Ok(Some(value))
}

fn within(n: f64, min: Option<f64>, max: Option<f64>) -> Result<(), String> {
    if min.is_some_and(|min| n < min) || max.is_some_and(|max| n > max) {
        let end = |bound: Option<f64>| bound.map_or_else(|| "any".to_owned(), |b| b.to_string());
        return Err(format!("Give a value from {} to {}.", end(min), end(max)));
    }
    Ok(())
}

/// The choice `text` names: by its number, its value or its name.
fn choose(options: &[(Value, String)], text: &str) -> Result<Value, String> {
    let by_number = text
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| options.get(n));
    by_number
        .or_else(|| {
            options.iter().find(|(value, name)| {
                plain(value).eq_ignore_ascii_case(text) || name.eq_ignore_ascii_case(text)
            })
        })
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("{text:?} is not one of the choices."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Vec<Field> {
        fields(&json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "title": "Name", "description": "Your \u{1b}[31mname" },
                "age": { "type": "integer", "minimum": 1, "maximum": 100, "default": 42 },
                "ok": { "type": "boolean" },
                "hero": { "type": "string", "oneOf": [
                    { "const": "h1", "title": "Superman" }, { "const": "h2", "title": "Wonder Woman" } ] },
                "pets": { "type": "array", "minItems": 1, "maxItems": 2,
                          "items": { "type": "string", "enum": ["cat", "dog", "fish"] } }
            },
            "required": ["name"]
        }))
    }

    fn field<'a>(fields: &'a [Field], name: &str) -> &'a Field {
        fields.iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn fields_are_read_from_the_schema_and_prompted() {
        let fields = form();
        let name = field(&fields, "name");
        assert!(name.required);
        assert!(!prompt(name).contains('\u{1b}'), "{}", prompt(name));
        assert_eq!(prompt(field(&fields, "age")), "  age [42]: ");
        assert_eq!(
            prompt(field(&fields, "hero")),
            "  hero (1 Superman, 2 Wonder Woman): "
        );
        assert_eq!(
            prompt(field(&fields, "pets")),
            "  pets (1 cat, 2 dog, 3 fish; several, comma-separated): "
        );
    }

    #[test]
    fn answers_are_checked_against_their_field() {
        let fields = form();
        let read_as = |name: &str, text: &str| read(field(&fields, name), text);
        assert_eq!(read_as("name", ""), Err("This one is required.".to_owned()));
        assert_eq!(read_as("name", "Ada"), Ok(Some(json!("Ada"))));
        assert_eq!(read_as("age", ""), Ok(Some(json!(42))));
        assert!(read_as("age", "101").is_err());
        assert!(read_as("age", "4.5").is_err());
        assert_eq!(read_as("age", "7"), Ok(Some(json!(7))));
        assert_eq!(read_as("ok", "yes"), Ok(Some(json!(true))));
        assert!(read_as("ok", "maybe").is_err());
        assert_eq!(read_as("ok", ""), Ok(None));
        assert_eq!(read_as("hero", "2"), Ok(Some(json!("h2"))));
        assert_eq!(read_as("hero", "superman"), Ok(Some(json!("h1"))));
        assert!(read_as("hero", "Batman").is_err());
        assert_eq!(read_as("pets", "cat, 3"), Ok(Some(json!(["cat", "fish"]))));
        assert!(read_as("pets", "cat, dog, fish").is_err(), "at most two");
    }
}
