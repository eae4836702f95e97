//! Function-call arguments streamed as `partialArgs` (Vertex AI, Gemini 3):
//! each names a JSON path (`$.recipe.steps[2]`) and a value; string values
//! arrive in pieces and are appended.

use serde_json::{Map, Value};

/// One step of a JSON path, borrowed from it.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Most nulls an index may pad an array with. Streams fill arrays in
/// order; a hostile index (`[4000000000]`) must not allocate gigabytes.
const MAX_PADDING: usize = 1024;

/// Splits the first step off `rest` (`.a`, `['c d']` or `[2]`); `None`
/// when `rest` does not start with one.
fn split_step<'a>(rest: &mut &'a str) -> Option<Step<'a>> {
    let (step, after) = if let Some(after) = rest.strip_prefix('.') {
        let end = after.find(['.', '[']).unwrap_or(after.len());
        (Step::Key(&after[..end]), &after[end..])
    } else if let Some(after) = rest.strip_prefix("['") {
        let end = after.find("']")?;
        (Step::Key(&after[..end]), &after[end + 2..])
    } else if let Some(after) = rest.strip_prefix('[') {
        let end = after.find(']')?;
        (Step::Index(after[..end].parse().ok()?), &after[end + 1..])
    } else {
        return None;
    };
    *rest = after;
    Some(step)
}

/// Whether `path` is of the form `$.a.b[2]['c d']`.
fn is_path(path: &str) -> bool {
    let Some(mut rest) = path.strip_prefix('$') else {
        return false;
    };
    while !rest.is_empty() {
        if split_step(&mut rest).is_none() {
            return false;
        }
    }
    true
}

/// The slot at `path` (checked by [`is_path`]) under `root`, created
/// (objects, arrays padded with nulls) where missing; `None` when the path
/// crosses a value of another shape or pads too far. Walks the path in
/// place: an existing key costs no allocation.
fn slot<'a>(root: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut rest = path.strip_prefix('$')?;
    let mut at = root;
    while let Some(step) = split_step(&mut rest) {
        at = match step {
            Step::Key(key) => {
                if at.is_null() {
                    *at = Value::Object(Map::new());
                }
                let fields = at.as_object_mut()?;
                if !fields.contains_key(key) {
                    fields.insert(key.to_owned(), Value::Null);
                }
                fields.get_mut(key)?
            }
            Step::Index(i) => {
                if at.is_null() {
                    *at = Value::Array(Vec::new());
                }
                let items = at.as_array_mut()?;
                if items.len() <= i {
                    if i - items.len() > MAX_PADDING {
                        return None;
                    }
                    items.resize(i + 1, Value::Null);
                }
                &mut items[i]
            }
        };
    }
    Some(at)
}

/// Applies one `partialArgs` entry to `args`; returns `false` when it
/// could not be applied (an unreadable path or no value).
pub(crate) fn apply(args: &mut Value, partial: &Value) -> bool {
    let Some(path) = partial
        .get("jsonPath")
        .and_then(Value::as_str)
        .filter(|path| is_path(path))
    else {
        return false;
    };
    let Some(target) = slot(args, path) else {
        return false;
    };
    if let Some(piece) = partial.get("stringValue").and_then(Value::as_str) {
        match target {
            Value::String(text) => text.push_str(piece),
            other => *other = Value::String(piece.to_owned()),
        }
        return true;
    }
    let value = ["numberValue", "boolValue", "structValue", "listValue"]
        .iter()
        .find_map(|key| partial.get(*key))
        .cloned()
        .or_else(|| partial.get("nullValue").map(|_| Value::Null));
    match value {
        Some(value) => {
            *target = value;
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builds_nested_objects_and_arrays_from_pieces() {
        let mut args = Value::Object(Map::new());
        let pieces = [
            json!({"jsonPath": "$.recipe.ingredients[1].name", "stringValue": "Gro"}),
            json!({"jsonPath": "$.recipe.ingredients[1].name", "stringValue": "und beef"}),
            json!({"jsonPath": "$.recipe.ingredients[1].name", "stringValue": ""}),
            json!({"jsonPath": "$.recipe.servings", "numberValue": 6}),
            json!({"jsonPath": "$.recipe['vegetarian?']", "boolValue": false}),
            json!({"jsonPath": "$.recipe.note", "nullValue": "NULL_VALUE"}),
        ];
        for piece in &pieces {
            assert!(apply(&mut args, piece));
        }
        assert_eq!(
            args,
            json!({"recipe": {
                "ingredients": [null, {"name": "Ground beef"}],
                "servings": 6,
                "vegetarian?": false,
                "note": null,
            }})
        );
        assert!(!apply(
            &mut args,
            &json!({"jsonPath": "recipe", "stringValue": "x"})
        ));
        assert!(!apply(
            &mut args,
            &json!({"jsonPath": "$.recipe.ingredients.name", "stringValue": "x"})
        ));
        // A malformed path changes nothing, also where its start is valid.
        let before = args.clone();
        assert!(!apply(
            &mut args,
            &json!({"jsonPath": "$.fresh.key[x]", "stringValue": "x"})
        ));
        assert_eq!(args, before);
    }

    #[test]
    fn a_far_index_is_unreadable_not_allocated() {
        let mut args = Value::Object(Map::new());
        let far = json!({"jsonPath": "$.list[4000000000]", "stringValue": "x"});
        assert!(!apply(&mut args, &far));
        let near = json!({"jsonPath": "$.list[3]", "stringValue": "x"});
        assert!(apply(&mut args, &near));
        assert_eq!(args, json!({"list": [null, null, null, "x"]}));
    }
}
