//! Lists and maps being filled: sequences, tuples, maps, structs and the
//! variants that carry them.

use std::collections::BTreeMap;

use serde::ser::{self, Serialize};

use super::SerError;
use super::ctx::Ctx;
use crate::plain::Plain;
use crate::plain::path::Segment;

/// A list or map being filled (a list for seqs and tuples, a map for maps
/// and structs), inside a one-key map when `variant` is set.
pub(super) struct Compound<'c> {
    pub(super) ctx: &'c mut Ctx,
    /// The depth of the elements.
    pub(super) depth: usize,
    pub(super) variant: Option<&'static str>,
    pub(super) body: Body,
}

/// What a [`Compound`] fills: only the container it makes, so opening and
/// closing one (every struct of an answer) builds nothing else.
pub(super) enum Body {
    List(Vec<Plain>),
    Map {
        map: BTreeMap<String, Plain>,
        /// A map key waiting for its value.
        pending_key: Option<String>,
    },
}

impl Body {
    pub(super) fn list() -> Self {
        Body::List(Vec::new())
    }

    pub(super) fn map() -> Self {
        Body::Map {
            map: BTreeMap::new(),
            pending_key: None,
        }
    }
}

impl Compound<'_> {
    pub(super) fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        let Body::List(list) = &mut self.body else {
            return Err(self.ctx.fail_unsupported("an element in a map"));
        };
        let (variant, index) = (self.variant, list.len());
        let segments = || [variant.map(Segment::Field), Some(Segment::Index(index))];
        let plain = self.ctx.child_at(self.depth, segments, value)?;
        list.push(plain);
        Ok(())
    }

    pub(super) fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        // No check for a recorded error here: `child_at` makes it before
        // anything is converted.
        self.ctx.count_key(key.len())?;
        let Body::Map { map, .. } = &mut self.body else {
            return Err(self.ctx.fail_unsupported("a field in a list"));
        };
        let variant = self.variant;
        let segments = || [variant.map(Segment::Field), Some(Segment::Field(key))];
        let plain = self.ctx.child_at(self.depth, segments, value)?;
        insert(map, key.to_owned(), plain);
        Ok(())
    }

    pub(super) fn finish(
        ctx: &mut Ctx,
        variant: Option<&'static str>,
        inner: Plain,
    ) -> Result<Plain, SerError> {
        ctx.alive()?;
        Ok(match variant {
            Some(name) => Plain::from_map(BTreeMap::from([(name.to_owned(), inner)])),
            None => inner,
        })
    }

    pub(super) fn end_list(self) -> Result<Plain, SerError> {
        let inner = match self.body {
            Body::List(list) => Plain::List(list),
            Body::Map { map, .. } => Plain::from_map(map),
        };
        Self::finish(self.ctx, self.variant, inner)
    }

    pub(super) fn end_map(self) -> Result<Plain, SerError> {
        let inner = match self.body {
            Body::Map {
                pending_key: Some(_),
                ..
            } => return Err(self.ctx.fail_unsupported("a map key without a value")),
            Body::Map { map, .. } => Plain::from_map(map),
            Body::List(list) => Plain::List(list),
        };
        Self::finish(self.ctx, self.variant, inner)
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = Plain;
    type Error = SerError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        self.element(value)
    }

    fn end(self) -> Result<Plain, SerError> {
        self.end_list()
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = Plain;
    type Error = SerError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        self.element(value)
    }

    fn end(self) -> Result<Plain, SerError> {
        self.end_list()
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = Plain;
    type Error = SerError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        self.element(value)
    }

    fn end(self) -> Result<Plain, SerError> {
        self.end_list()
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = Plain;
    type Error = SerError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        self.element(value)
    }

    fn end(self) -> Result<Plain, SerError> {
        self.end_list()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = Plain;
    type Error = SerError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), SerError> {
        let Body::Map { pending_key, .. } = &mut self.body else {
            return Err(self.ctx.fail_unsupported("a map key in a list"));
        };
        if pending_key.is_some() {
            return Err(self.ctx.fail_unsupported("a map key without a value"));
        }
        *pending_key = Some(self.ctx.key(self.depth, key)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        let Body::Map { map, pending_key } = &mut self.body else {
            return Err(self.ctx.fail_unsupported("a map value in a list"));
        };
        let Some(key) = pending_key.take() else {
            return Err(self.ctx.fail_unsupported("a map value without a key"));
        };
        let segments = || [Some(Segment::Key(key.clone())), None];
        let plain = self.ctx.child_at(self.depth, segments, value)?;
        insert(map, key, plain);
        Ok(())
    }

    fn end(self) -> Result<Plain, SerError> {
        self.end_map()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = Plain;
    type Error = SerError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        self.field(key, value)
    }

    fn end(self) -> Result<Plain, SerError> {
        self.end_map()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = Plain;
    type Error = SerError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        self.field(key, value)
    }

    fn end(self) -> Result<Plain, SerError> {
        self.end_map()
    }
}

/// Inserts one entry into a map being filled. Deliberately not generic and
/// not inlined: the map's insertion code then exists once, instead of once
/// per field type of every value converted, which kept the processor's
/// instruction cache busy (callgrind counted a thousand times more
/// instruction-cache misses than `serde_json::to_value` on the same value).
fn insert(map: &mut BTreeMap<String, Plain>, key: String, value: Plain) {
    map.insert(key, value);
}
