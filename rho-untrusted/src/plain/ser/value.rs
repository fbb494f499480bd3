//! The serializer of one value: scalars, text, bytes, wrappers, and the
//! opening of lists and maps.

use std::collections::BTreeMap;
use std::fmt::Display;

use serde::ser::{self, Serialize};

use super::compound::{Body, Compound};
use super::ctx::Ctx;
use super::{SerError, display_bounded};
use crate::plain::path::Segment;
use crate::plain::{Limit, Plain};

/// Serializes one value at `depth` (the number of levels around it).
///
/// Made only by [`Ctx::child`] and `to_plain`, right when no error is
/// recorded; the value's `Serialize` cannot reach the state before it
/// calls one of these methods (the serializer holds it), so the methods
/// that only count and copy need not check again. Those that go on to
/// convert more values (`wrapper`, and a container's elements) do, through
/// [`Ctx::child`].
pub(super) struct ValueSer<'c> {
    pub(super) ctx: &'c mut Ctx,
    pub(super) depth: usize,
}

impl<'c> ValueSer<'c> {
    pub(super) fn scalar(self, plain: Plain) -> Result<Plain, SerError> {
        self.ctx.count_value(0)?;
        Ok(plain)
    }

    pub(super) fn text(self, text: &str) -> Result<Plain, SerError> {
        self.ctx.count_text(text.len())?;
        Ok(Plain::Text(text.to_owned()))
    }

    /// A transparent wrapper (`Some`, newtype struct): one level deeper, no
    /// value of its own.
    pub(super) fn wrapper<T: Serialize + ?Sized>(self, value: &T) -> Result<Plain, SerError> {
        self.ctx.alive()?;
        self.ctx.enter(self.depth, 1)?;
        self.ctx.child(self.depth + 1, value)
    }

    /// Opens a list or map (`body`, empty), or with a variant the one-key
    /// map around it.
    pub(super) fn open(
        self,
        variant: Option<&'static str>,
        body: Body,
    ) -> Result<Compound<'c>, SerError> {
        let levels = if variant.is_some() { 2 } else { 1 };
        self.ctx.enter(self.depth, levels)?;
        if let Some(name) = variant {
            self.ctx.count_value(0)?;
            self.ctx.count_key(name.len())?;
        }
        self.ctx.count_value(0)?;
        Ok(Compound {
            ctx: self.ctx,
            depth: self.depth + levels,
            variant,
            body,
        })
    }
}

impl<'c> ser::Serializer for ValueSer<'c> {
    type Ok = Plain;
    type Error = SerError;
    type SerializeSeq = Compound<'c>;
    type SerializeTuple = Compound<'c>;
    type SerializeTupleStruct = Compound<'c>;
    type SerializeTupleVariant = Compound<'c>;
    type SerializeMap = Compound<'c>;
    type SerializeStruct = Compound<'c>;
    type SerializeStructVariant = Compound<'c>;

    fn serialize_bool(self, v: bool) -> Result<Plain, SerError> {
        self.scalar(Plain::Bool(v))
    }

    fn serialize_i8(self, v: i8) -> Result<Plain, SerError> {
        self.serialize_i64(i64::from(v))
    }

    fn serialize_i16(self, v: i16) -> Result<Plain, SerError> {
        self.serialize_i64(i64::from(v))
    }

    fn serialize_i32(self, v: i32) -> Result<Plain, SerError> {
        self.serialize_i64(i64::from(v))
    }

    fn serialize_i64(self, v: i64) -> Result<Plain, SerError> {
        self.scalar(Plain::Int(v))
    }

    fn serialize_i128(self, v: i128) -> Result<Plain, SerError> {
        match i64::try_from(v) {
            Ok(v) => self.scalar(Plain::Int(v)),
            Err(_) => self.text(&v.to_string()),
        }
    }

    fn serialize_u8(self, v: u8) -> Result<Plain, SerError> {
        self.serialize_u64(u64::from(v))
    }

    fn serialize_u16(self, v: u16) -> Result<Plain, SerError> {
        self.serialize_u64(u64::from(v))
    }

    fn serialize_u32(self, v: u32) -> Result<Plain, SerError> {
        self.serialize_u64(u64::from(v))
    }

    fn serialize_u64(self, v: u64) -> Result<Plain, SerError> {
        self.scalar(Plain::UInt(v))
    }

    fn serialize_u128(self, v: u128) -> Result<Plain, SerError> {
        match u64::try_from(v) {
            Ok(v) => self.scalar(Plain::UInt(v)),
            Err(_) => self.text(&v.to_string()),
        }
    }

    fn serialize_f32(self, v: f32) -> Result<Plain, SerError> {
        self.serialize_f64(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<Plain, SerError> {
        match Plain::from_f64(v) {
            Plain::Text(text) => self.text(&text),
            plain => self.scalar(plain),
        }
    }

    fn serialize_char(self, v: char) -> Result<Plain, SerError> {
        self.text(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<Plain, SerError> {
        self.text(v)
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<Plain, SerError> {
        self.ctx.alive()?;
        self.ctx.count_text(v.len())?;
        Ok(Plain::Bytes(v.to_vec()))
    }

    fn serialize_none(self) -> Result<Plain, SerError> {
        self.scalar(Plain::Null)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Plain, SerError> {
        self.wrapper(value)
    }

    fn serialize_unit(self) -> Result<Plain, SerError> {
        self.scalar(Plain::Null)
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<Plain, SerError> {
        self.scalar(Plain::Null)
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Plain, SerError> {
        self.text(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Plain, SerError> {
        self.wrapper(value)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Plain, SerError> {
        self.ctx.alive()?;
        self.ctx.enter(self.depth, 1)?;
        self.ctx.count_value(0)?;
        self.ctx.count_key(variant.len())?;
        let inner = self.ctx.child_at(
            self.depth + 1,
            || [Some(Segment::Field(variant)), None],
            value,
        )?;
        Ok(Plain::from_map(BTreeMap::from([(
            variant.to_owned(),
            inner,
        )])))
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'c>, SerError> {
        // The length hint is the value's word: nothing is allocated for it.
        self.open(None, Body::list())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Compound<'c>, SerError> {
        self.open(None, Body::list())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound<'c>, SerError> {
        self.open(None, Body::list())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'c>, SerError> {
        self.open(Some(variant), Body::list())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'c>, SerError> {
        self.open(None, Body::map())
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'c>, SerError> {
        self.open(None, Body::map())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'c>, SerError> {
        self.open(Some(variant), Body::map())
    }

    fn collect_str<T: Display + ?Sized>(self, value: &T) -> Result<Plain, SerError> {
        self.ctx.alive()?;
        let (text, cut) = display_bounded(value, self.ctx.limits.max_string);
        if cut {
            return Err(self.ctx.fail_limit(Limit::StringLength));
        }
        self.text(&text)
    }
}
