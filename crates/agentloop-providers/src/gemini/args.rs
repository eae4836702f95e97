//! Function-call arguments streamed as `partialArgs` (Vertex AI, Gemini 3):
//! each names a JSON path (`$.recipe.steps[2]`) and a value; string values
//! arrive in pieces and are appended.

use serde_json::{Map, Value};

/// One step of a JSON path.
enum Step {
    Key(String),
    Index(usize),
}

/// Parses `$.a.b[2]['c d']`; `None` when the path is not of that form.
fn parse(path: &str) -> Option<Vec<Step>> {
    let mut rest = path.strip_prefix('$')?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            steps.push(Step::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            steps.push(Step::Key(after[..end].to_owned()));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            steps.push(Step::Index(after[..end].parse().ok()?));
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

/// The slot at `steps` under `root`, created (objects, arrays padded
/// with nulls) where missing; `None` when the path crosses a value of
/// another shape.
fn slot<'a>(root: &'a mut Value, steps: &[Step]) -> Option<&'a mut Value> {
    let mut at = root;
    for step in steps {
        at = match step {
            Step::Key(key) => {
                if at.is_null() {
                    *at = Value::Object(Map::new());
                }
                at.as_object_mut()?
                    .entry(key.clone())
                    .or_insert(Value::Null)
            }
            Step::Index(i) => {
                if at.is_null() {
                    *at = Value::Array(Vec::new());
                }
                let items = at.as_array_mut()?;
                if items.len() <= *i {
                    items.resize(*i + 1, Value::Null);
                }
                &mut items[*i]
            }
        };
    }
    Some(at)
}

/// Applies one `partialArgs` entry to `args`; returns `false` when it
/// could not be applied (an unreadable path or no value).
pub(crate) fn apply(args: &mut Value, partial: &Value) -> bool {
    let Some(steps) = partial
        .get("jsonPath")
        .and_then(Value::as_str)
        .and_then(parse)
    else {
        return false;
    };
    let Some(target) = slot(args, &steps) else {
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
    }
}
