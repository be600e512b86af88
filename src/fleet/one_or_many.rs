//! A grid axis of a scenario written as one value or a list.

use serde::de::{self, Deserializer, IntoDeserializer, Visitor};
use serde::Deserialize;

/// A grid axis written as one value or a non-empty list of them.
///
/// A hand-written visitor rather than `#[serde(untagged)]`: an untagged
/// enum reports "did not match any variant" without the field's path;
/// this one hands each element to `T` (the path keeps its index) and
/// refuses an empty list.
///
/// # Examples
///
/// ```
/// use ratelab::fleet::OneOrMany;
/// let one: OneOrMany<u64> = serde_json::from_str("4").unwrap();
/// let many: OneOrMany<u64> = serde_json::from_str("[1, 8]").unwrap();
/// assert_eq!(one.as_slice(), &[4]);
/// assert_eq!(many.as_slice(), &[1, 8]);
/// assert!(!one.is_list() && many.is_list());
/// assert!(serde_json::from_str::<OneOrMany<u64>>("[]").is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct OneOrMany<T> {
    items: Vec<T>,
    list: bool,
}

impl<T> OneOrMany<T> {
    /// The values, in order.
    pub fn as_slice(&self) -> &[T] {
        &self.items
    }

    /// Whether it was written as a list (error fields then carry `[i]`).
    pub fn is_list(&self) -> bool {
        self.list
    }

    /// The field of value `i`: `field[i]` for a list, else `field`.
    pub fn field(&self, field: &str, i: usize) -> String {
        if self.list {
            format!("{field}[{i}]")
        } else {
            field.to_string()
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        fn one<T>(items: T) -> OneOrMany<T> {
            OneOrMany {
                items: vec![items],
                list: false,
            }
        }
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a value or a list of values")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(x) = a.next_element()? {
                    items.push(x);
                }
                if items.is_empty() {
                    return Err(de::Error::custom("empty list: expected at least one value"));
                }
                Ok(OneOrMany { items, list: true })
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                a: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(a)).map(one)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(one)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(one)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(one)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(one)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
                T::deserialize(de::value::StrDeserializer::<E>::new(v)).map(one)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}
