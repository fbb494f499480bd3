//! Reading strict mode's `null`s back as properties left out.

use std::collections::BTreeMap;

use serde_json::Value;

/// Where a converted schema made an optional property required and
/// nullable, so that the model's `null` there is read back as the property
/// left out: the tool gets the arguments its own schema describes.
///
/// Empty for every conversion that made no property nullable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nulls {
    /// Properties of this object whose `null` means "left out".
    absent_if_null: Vec<String>,
    /// The same, inside properties of this object.
    properties: BTreeMap<String, Nulls>,
    /// The same, inside each item of this array.
    items: Option<Box<Nulls>>,
}

impl Nulls {
    /// Whether reading back changes nothing.
    pub fn is_empty(&self) -> bool {
        self.absent_if_null.is_empty() && self.properties.is_empty() && self.items.is_none()
    }

    pub(crate) fn absent_if_null(&mut self, property: &str) {
        self.absent_if_null.push(property.to_owned());
    }

    pub(crate) fn property(&mut self, property: &str, inner: Nulls) {
        if !inner.is_empty() {
            self.properties.insert(property.to_owned(), inner);
        }
    }

    pub(crate) fn items(&mut self, inner: Nulls) {
        if !inner.is_empty() {
            self.items = Some(Box::new(inner));
        }
    }

    /// The model's `arguments`, with each `null` strict mode stood in for
    /// a left-out property removed. Values of any other shape are left as
    /// they are (validation then says what is wrong with them).
    pub fn restore(&self, arguments: &mut Value) {
        if self.is_empty() {
            return;
        }
        match arguments {
            Value::Object(map) => {
                for property in &self.absent_if_null {
                    if map.get(property).is_some_and(Value::is_null) {
                        map.remove(property);
                    }
                }
                for (property, inner) in &self.properties {
                    if let Some(value) = map.get_mut(property) {
                        inner.restore(value);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(inner) = &self.items {
                    for item in items {
                        inner.restore(item);
                    }
                }
            }
            _ => {}
        }
    }

    /// The reverse of [`restore`](Self::restore): `arguments` with a `null`
    /// for each left-out property strict mode lists, as the model sends
    /// them. For tests and for hosts that replay a conversation.
    pub fn fill(&self, arguments: &mut Value) {
        match arguments {
            Value::Object(map) => {
                for property in &self.absent_if_null {
                    map.entry(property.clone()).or_insert(Value::Null);
                }
                for (property, inner) in &self.properties {
                    if let Some(value) = map.get_mut(property) {
                        inner.fill(value);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(inner) = &self.items {
                    for item in items {
                        inner.fill(item);
                    }
                }
            }
            _ => {}
        }
    }
}
