//! JSON read strictly: an object naming a key twice is refused.
//!
//! `serde_json::Value` keeps the last of two equal keys, so
//! `{"model": "gcra", "model": "tower"}` would run tower without a word.
//! Every JSON file ratelab reads (scenarios, workloads, baselines, shard
//! files, `replay` limiter specs, reports) goes through [`from_str`] or
//! [`from_slice`], which build the same `Value` but fail on the second key,
//! naming it with the line and column.
//!
//! # Examples
//!
//! ```
//! let v = ratelab::strict_json::from_str(r#"{"a": [1, {"b": 2}]}"#).unwrap();
//! assert_eq!(v["a"][1]["b"], 2);
//! let e = ratelab::strict_json::from_str(r#"{"model": "gcra", "model": "tower"}"#).unwrap_err();
//! assert!(e.to_string().contains("duplicate key \"model\""), "{e}");
//! ```

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// A `Value` whose objects had no duplicate keys.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v}: not a finite number")))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key {key:?} (an object names each key once)"
                )));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Parses `text`, refusing duplicate keys (see the module docs).
pub fn from_str(text: &str) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let Strict(v) = Strict::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// [`from_str`] on bytes (must be UTF-8 JSON).
pub fn from_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let Strict(v) = Strict::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_serde_json_without_duplicates_and_refuses_them_nested() {
        for text in [
            r#"{"a": 1, "b": [1.5, -2, null, true, "x"], "c": {"d": {}}}"#,
            "[]",
            "3",
            r#"{"big": 18446744073709551615, "neg": -9223372036854775808}"#,
        ] {
            let want: Value = serde_json::from_str(text).unwrap();
            assert_eq!(from_str(text).unwrap(), want, "{text}");
        }
        let e = from_str("{\"a\": [{\"k\": 1,\n \"k\": 2}]}").unwrap_err();
        assert!(e.to_string().contains("\"k\"") && e.line() == 2, "{e}");
        assert!(from_str("{} x").is_err());
    }
}
