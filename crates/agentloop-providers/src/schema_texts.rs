//! The JSON text of tool parameter schemas already written. A run offers
//! the same tools on every turn, and writing a schema from its `Value`
//! costs about 19 instructions a byte (a tool set of a few kilobytes costs
//! more a turn than the rest of the loop's work), so a schema is written
//! once while its `Arc` lives and copied after that.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use serde_json::Value;
use serde_json::value::RawValue;

/// Bytes of text remembered at most, over all schemas.
const MAX_BYTES: usize = 8 << 20;
/// Schemas remembered at most.
const MAX_ENTRIES: usize = 16_384;
/// Entries past which the first purge of dropped schemas comes.
const FIRST_PURGE: usize = 64;

/// Texts by the address of the schema's `Arc`.
///
/// An entry keeps a `Weak` to its schema: the allocation it holds cannot be
/// reused while the entry exists, so an address names one schema, and a
/// schema behind a shared `Arc` cannot change (`Arc::make_mut` moves it to
/// another address). The entries of dropped schemas go each time the map
/// has doubled since the last purge (a run's tools are often its own
/// `Arc`s, dropped with it), and all go when the living ones alone are near
/// a bound.
#[derive(Debug)]
pub(crate) struct SchemaTexts {
    inner: Mutex<Entries>,
    max_bytes: usize,
}

#[derive(Debug)]
struct Entries {
    by_address: HashMap<usize, (Weak<Value>, Arc<RawValue>)>,
    /// Sum of the texts' lengths.
    bytes: usize,
    /// The entry count at which dropped schemas are purged next.
    purge_at: usize,
}

impl Default for Entries {
    fn default() -> Self {
        Self {
            by_address: HashMap::new(),
            bytes: 0,
            purge_at: FIRST_PURGE,
        }
    }
}

impl Default for SchemaTexts {
    fn default() -> Self {
        Self::with_max_bytes(MAX_BYTES)
    }
}

impl SchemaTexts {
    fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            inner: Mutex::default(),
            max_bytes,
        }
    }

    /// The text of `schema` as tool parameters: providers require an
    /// object schema, so an empty or missing one is
    /// `{"type":"object","properties":{}}`.
    pub(crate) fn text(&self, schema: &Arc<Value>) -> Result<Arc<RawValue>, serde_json::Error> {
        let address = Arc::as_ptr(schema) as usize;
        if let Some((_, text)) = self.lock().by_address.get(&address) {
            return Ok(text.clone());
        }
        let text: Arc<RawValue> = match &**schema {
            Value::Object(map) if !map.is_empty() => serde_json::value::to_raw_value(&**schema)?,
            _ => serde_json::value::to_raw_value(
                &serde_json::json!({"type": "object", "properties": {}}),
            )?,
        }
        .into();
        self.lock().insert(
            address,
            Arc::downgrade(schema),
            text.clone(),
            self.max_bytes,
        );
        Ok(text)
    }

    /// Nothing done under the lock can panic halfway through a change, so
    /// a poisoned one still guards a whole map.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entries {
    fn insert(&mut self, address: usize, schema: Weak<Value>, text: Arc<RawValue>, max: usize) {
        self.bytes += text.get().len();
        if let Some((_, old)) = self.by_address.insert(address, (schema, text)) {
            self.bytes -= old.get().len();
        }
        let entries = self.by_address.len();
        if entries >= self.purge_at || entries > MAX_ENTRIES || self.bytes > max {
            self.by_address
                .retain(|_, (schema, _)| schema.strong_count() > 0);
            self.bytes = self.by_address.values().map(|(_, t)| t.get().len()).sum();
            // An eighth to spare, so that the next eviction is far off.
            if self.bytes > max - max / 8 || self.by_address.len() > MAX_ENTRIES - MAX_ENTRIES / 8 {
                self.by_address.clear();
                self.bytes = 0;
            }
            self.purge_at = (2 * self.by_address.len()).max(FIRST_PURGE);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_schema_is_written_once_while_it_lives() {
        let texts = SchemaTexts::default();
        let schema = Arc::new(json!({"type": "object", "properties": {"q": {"type": "string"}}}));
        let first = texts.text(&schema).ok();
        let again = texts.text(&Arc::clone(&schema)).ok();
        assert_eq!(
            first.as_deref().map(RawValue::get),
            Some(r#"{"properties":{"q":{"type":"string"}},"type":"object"}"#)
        );
        assert!(matches!((first, again), (Some(a), Some(b)) if Arc::ptr_eq(&a, &b)));
    }

    #[test]
    fn schemas_made_after_others_were_dropped_get_their_own_text() {
        let texts = SchemaTexts::default();
        for n in 0..100 {
            let schema = Arc::new(json!({"type": "object", "title": format!("s{n}")}));
            let text = texts.text(&schema).ok();
            assert_eq!(
                text.as_deref().map(RawValue::get),
                Some(format!(r#"{{"title":"s{n}","type":"object"}}"#).as_str())
            );
        }
    }

    #[test]
    fn a_schema_changed_in_place_gets_a_new_text() {
        let texts = SchemaTexts::default();
        let mut schema = Arc::new(json!({"type": "object", "title": "before"}));
        let _ = texts.text(&schema);
        // The entry's `Weak` makes `make_mut` move the value elsewhere.
        if let Some(map) = Arc::make_mut(&mut schema).as_object_mut() {
            map.insert("title".into(), json!("after"));
        }
        let text = texts.text(&schema).ok();
        assert_eq!(
            text.as_deref().map(RawValue::get),
            Some(r#"{"title":"after","type":"object"}"#)
        );
    }

    #[test]
    fn an_empty_or_missing_schema_is_an_object_schema() {
        let texts = SchemaTexts::default();
        for schema in [json!({}), Value::Null, json!("not a schema")] {
            let text = texts.text(&Arc::new(schema)).ok();
            assert_eq!(
                text.as_deref().map(RawValue::get),
                Some(r#"{"properties":{},"type":"object"}"#)
            );
        }
    }

    #[test]
    fn the_texts_of_dropped_schemas_do_not_pile_up() {
        let texts = SchemaTexts::default();
        let kept = Arc::new(json!({"type": "object", "title": "kept"}));
        let _ = texts.text(&kept);
        for n in 0..10_000 {
            let dropped = Arc::new(json!({"type": "object", "title": format!("dropped {n}")}));
            let _ = texts.text(&dropped);
        }
        let entries = texts.lock();
        assert!(
            entries.by_address.len() <= FIRST_PURGE,
            "{} entries",
            entries.by_address.len()
        );
        assert!(
            entries
                .by_address
                .contains_key(&(Arc::as_ptr(&kept) as usize))
        );
    }

    #[test]
    fn past_the_bound_the_texts_of_dropped_schemas_go_first() {
        let texts = SchemaTexts::with_max_bytes(200);
        let kept = Arc::new(json!({"type": "object", "title": "kept"}));
        let kept_text = texts.text(&kept).ok();
        for n in 0..20 {
            let dropped = Arc::new(json!({"type": "object", "title": format!("dropped {n}")}));
            let _ = texts.text(&dropped);
        }
        let entries = texts.lock();
        assert!(entries.bytes <= 200, "{} bytes kept", entries.bytes);
        assert_eq!(
            entries.bytes,
            entries
                .by_address
                .values()
                .map(|(_, t)| t.get().len())
                .sum::<usize>()
        );
        let still = entries.by_address.get(&(Arc::as_ptr(&kept) as usize));
        assert!(matches!((still, kept_text), (Some((_, a)), Some(b)) if Arc::ptr_eq(a, &b)));
    }
}
