//! The serializer of map keys: scalars become their text, anything else
//! is refused with the key's path.

use std::fmt::Display;

use serde::ser::{self, Impossible, Serialize};

use super::ctx::Ctx;
use super::{SerError, display_bounded, short};
use crate::plain::Limit;

/// Serializes a map key to its text.
pub(super) struct KeySer<'c> {
    pub(super) ctx: &'c mut Ctx,
    pub(super) depth: usize,
}

impl KeySer<'_> {
    pub(super) fn text(self, text: &str) -> Result<String, SerError> {
        self.ctx.alive()?;
        self.ctx.count_key(text.len())?;
        Ok(text.to_owned())
    }

    /// Refuses a key that is `what`; `R` is the text, or a serializer of
    /// the compound the key would have been.
    pub(super) fn refuse<R>(self, what: &str) -> Result<R, SerError> {
        self.ctx.alive()?;
        Err(self
            .ctx
            .fail_unsupported(&format!("a map key that is {what}")))
    }

    pub(super) fn wrapper<T: Serialize + ?Sized>(self, key: &T) -> Result<String, SerError> {
        self.ctx.alive()?;
        self.ctx.enter(self.depth, 1)?;
        self.ctx.key(self.depth + 1, key)
    }
}

impl ser::Serializer for KeySer<'_> {
    type Ok = String;
    type Error = SerError;
    type SerializeSeq = Impossible<String, SerError>;
    type SerializeTuple = Impossible<String, SerError>;
    type SerializeTupleStruct = Impossible<String, SerError>;
    type SerializeTupleVariant = Impossible<String, SerError>;
    type SerializeMap = Impossible<String, SerError>;
    type SerializeStruct = Impossible<String, SerError>;
    type SerializeStructVariant = Impossible<String, SerError>;

    fn serialize_bool(self, v: bool) -> Result<String, SerError> {
        self.text(if v { "true" } else { "false" })
    }

    fn serialize_i8(self, v: i8) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_i16(self, v: i16) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_i32(self, v: i32) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_i64(self, v: i64) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_i128(self, v: i128) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_u8(self, v: u8) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_u16(self, v: u16) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_u32(self, v: u32) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_u64(self, v: u64) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_u128(self, v: u128) -> Result<String, SerError> {
        self.text(&v.to_string())
    }

    fn serialize_f32(self, v: f32) -> Result<String, SerError> {
        self.text(&format!("{v:?}"))
    }

    fn serialize_f64(self, v: f64) -> Result<String, SerError> {
        self.text(&format!("{v:?}"))
    }

    fn serialize_char(self, v: char) -> Result<String, SerError> {
        self.text(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<String, SerError> {
        self.text(v)
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<String, SerError> {
        self.refuse("bytes")
    }

    fn serialize_none(self) -> Result<String, SerError> {
        self.refuse("None")
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<String, SerError> {
        self.wrapper(value)
    }

    fn serialize_unit(self) -> Result<String, SerError> {
        self.refuse("()")
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<String, SerError> {
        self.refuse(&format!("the unit struct {}", short(name)))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String, SerError> {
        self.text(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String, SerError> {
        self.wrapper(value)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _value: &T,
    ) -> Result<String, SerError> {
        self.refuse(&format!("the enum variant {} with data", short(variant)))
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, SerError> {
        self.refuse("a list")
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, SerError> {
        self.refuse("a tuple")
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, SerError> {
        self.refuse(&format!("the tuple struct {}", short(name)))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, SerError> {
        self.refuse(&format!("the enum variant {} with data", short(variant)))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, SerError> {
        self.refuse("a map")
    }

    fn serialize_struct(
        self,
        name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, SerError> {
        self.refuse(&format!("the struct {}", short(name)))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, SerError> {
        self.refuse(&format!("the enum variant {} with data", short(variant)))
    }

    fn collect_str<T: Display + ?Sized>(self, value: &T) -> Result<String, SerError> {
        self.ctx.alive()?;
        let (text, cut) = display_bounded(value, self.ctx.limits.max_string);
        if cut {
            return Err(self.ctx.fail_limit(Limit::StringLength));
        }
        self.text(&text)
    }
}
