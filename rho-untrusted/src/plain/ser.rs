//! A `serde::Serializer` that makes [`Plain`] data under [`Limits`].
//!
//! The conversion state ([`Ctx`]) counts values and bytes as they are made,
//! keeps the path to the value being converted, and records the first error.
//! That error is sticky: a foreign `Serialize` that swallows an error and goes
//! on gets an error from every later call, and the conversion ends with the
//! recorded error whatever the `Serialize` returns.

use std::collections::BTreeMap;
use std::fmt::{self, Display};

use serde::ser::{self, Impossible, Serialize};

use super::path::{self, Segment};
use super::{Limit, Limits, Plain, PlainError};

/// Messages of `serde::ser::Error::custom` are cut after this many bytes.
const MAX_CUSTOM_MESSAGE: usize = 4096;

/// Converts `value` to [`Plain`] data, within `limits`.
///
/// The module documentation lists the mapping. The limits are checked as the
/// value is walked, before the part that exceeds one is copied: a too-long
/// string is refused before it is copied, a too-deep value at the level that
/// is one too deep (so a value nested a million levels returns an error
/// without exhausting the stack), a too-large one when its count crosses the
/// limit.
///
/// This runs the value's `Serialize` (and any `Display` it uses) on the
/// calling thread, and does not catch a panic of it: for a value from
/// untrusted code, use [`plain_owned`](super::plain_owned) or
/// [`Foreign`](super::Foreign) inside the tool's task.
///
/// # Errors
///
/// The first problem met: [`PlainError::LimitExceeded`],
/// [`PlainError::Unsupported`] (a map key that is not a scalar), or
/// [`PlainError::Custom`] (the value's `Serialize` returned an error), each
/// with the path where it happened.
///
/// ```
/// use std::collections::BTreeMap;
/// use rho_untrusted::plain::{Limits, Plain, to_plain};
///
/// let mut counts = BTreeMap::new();
/// counts.insert(7_u8, (i128::MAX, f32::INFINITY));
/// let value = to_plain(&counts, &Limits::default()).unwrap();
/// assert_eq!(
///     value.get("7").and_then(|pair| pair.at(0)),
///     Some(&Plain::Text("170141183460469231731687303715884105727".into()))
/// );
/// assert_eq!(value.get("7").and_then(|pair| pair.at(1)), Some(&Plain::Text("inf".into())));
/// ```
pub fn to_plain<T: Serialize + ?Sized>(value: &T, limits: &Limits) -> Result<Plain, PlainError> {
    let mut ctx = Ctx {
        limits: limits.clone(),
        bytes: 0,
        elements: 0,
        frames: 0,
        error_path: Vec::new(),
        fill_level: 0,
        error: None,
    };
    let result = value.serialize(ValueSer {
        ctx: &mut ctx,
        depth: 0,
    });
    if let Some(error) = ctx.error {
        ctx.error_path.reverse();
        return Err(with_path(error, path::render(&ctx.error_path)));
    }
    match result {
        Ok(plain) => Ok(plain),
        Err(SerError::Custom(message)) => Err(PlainError::Custom {
            message,
            path: "$".to_owned(),
        }),
        // Only `Ctx::fail` makes this, and it records the error first.
        Err(SerError::Recorded) => Err(PlainError::Custom {
            message: "the value's Serialize returned an error".to_owned(),
            path: "$".to_owned(),
        }),
    }
}

/// The error the serializer hands to the value's `Serialize`.
#[derive(Debug)]
enum SerError {
    /// The error is recorded in [`Ctx::error`] (with its path).
    Recorded,
    /// Made by the value's own `Serialize` with `ser::Error::custom`; its path
    /// is recorded where a container of ours receives it.
    Custom(String),
}

impl Display for SerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SerError::Recorded => f.write_str("the value cannot be made plain data"),
            SerError::Custom(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: Display>(message: T) -> Self {
        let (mut text, cut) = display_bounded(&message, MAX_CUSTOM_MESSAGE);
        if cut {
            text.push('…');
        }
        SerError::Custom(text)
    }
}

/// Formats `value`, stopping after `max` bytes (cut at a character boundary).
/// Returns the text and whether it was cut. The `Display` is told to stop by
/// a write error, so a huge or endless one is not written out.
fn display_bounded<T: Display + ?Sized>(value: &T, max: usize) -> (String, bool) {
    struct Bounded {
        text: String,
        max: usize,
        cut: bool,
    }
    impl fmt::Write for Bounded {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let room = self.max - self.text.len();
            if s.len() <= room {
                self.text.push_str(s);
                return Ok(());
            }
            let mut end = room;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&s[..end]);
            self.cut = true;
            Err(fmt::Error)
        }
    }
    let mut out = Bounded {
        text: String::new(),
        max,
        cut: false,
    };
    // An error is either ours (cut) or the Display's own; either way we keep
    // what was written.
    let _ = fmt::write(&mut out, format_args!("{value}"));
    (out.text, out.cut)
}

/// A type or variant name for a message, cut after 64 bytes: the names come
/// from the value's own code and may be anything.
fn short(name: &str) -> String {
    let (mut text, cut) = display_bounded(name, 64);
    if cut {
        text.push('…');
    }
    text
}

/// The state of one conversion.
#[derive(Debug)]
struct Ctx {
    limits: Limits,
    /// The size counted so far (see [`Limits`]); never above `max_bytes`.
    bytes: usize,
    /// The values counted so far; never above `max_elements`.
    elements: usize,
    /// How many containers' values are open around the value being
    /// converted (each with its path segments).
    frames: usize,
    /// The path of the first error, innermost segment first. It is built
    /// only while that error travels up: a conversion that succeeds never
    /// touches a path.
    error_path: Vec<Segment>,
    /// The level of the open value whose segments the error path needs
    /// next: the value around the error, then its container, and so on.
    fill_level: usize,
    /// The first error (its path is set at the end); once set, every call
    /// fails at once.
    error: Option<PlainError>,
}

impl Ctx {
    /// Records `error` at the current value (unless one is recorded
    /// already); its path is filled in as it travels up.
    #[cold]
    fn fail(&mut self, error: impl FnOnce(String) -> PlainError) -> SerError {
        if self.error.is_none() {
            self.error = Some(error(String::new()));
            self.fill_level = self.frames;
        }
        SerError::Recorded
    }

    /// Called as the value opened at `level` closes while an error is
    /// recorded: when that value holds the error, its segments join the
    /// error's path. (A value opened after the error, by a `Serialize` that
    /// ignored it, is at a level already filled and adds nothing.)
    fn close_with_error(
        &mut self,
        level: usize,
        segments: impl DoubleEndedIterator<Item = Segment>,
    ) {
        if level == self.fill_level && level > 0 {
            self.error_path.extend(segments.rev());
            self.fill_level -= 1;
        }
    }

    #[cold]
    fn fail_limit(&mut self, limit: Limit) -> SerError {
        let max = self.limits.max(limit);
        self.fail(|path| PlainError::LimitExceeded { limit, max, path })
    }

    fn fail_unsupported(&mut self, what: &str) -> SerError {
        self.fail(|path| PlainError::Unsupported {
            what: what.to_owned(),
            path,
        })
    }

    /// Turns an error from the value's `Serialize` into a recorded one, at
    /// the current path when it is the value's own.
    fn absorb(&mut self, error: SerError) -> SerError {
        match error {
            SerError::Recorded => SerError::Recorded,
            SerError::Custom(message) => self.fail(|path| PlainError::Custom { message, path }),
        }
    }

    /// Fails when an error has been recorded already.
    #[inline]
    fn alive(&self) -> Result<(), SerError> {
        match self.error {
            None => Ok(()),
            Some(_) => Err(SerError::Recorded),
        }
    }

    /// Checks that a value at `depth` may open `levels` more levels.
    #[inline]
    fn enter(&mut self, depth: usize, levels: usize) -> Result<(), SerError> {
        if depth.saturating_add(levels) > self.limits.max_depth {
            return Err(self.fail_limit(Limit::Depth));
        }
        Ok(())
    }

    /// Counts one value with `payload` bytes of text or bytes.
    #[inline]
    fn count_value(&mut self, payload: usize) -> Result<(), SerError> {
        if self.elements >= self.limits.max_elements {
            return Err(self.fail_limit(Limit::Elements));
        }
        self.count_bytes(Limits::VALUE_COST.saturating_add(payload))?;
        self.elements += 1;
        Ok(())
    }

    /// Counts one text or byte string of `len` bytes, as a value.
    #[inline]
    fn count_text(&mut self, len: usize) -> Result<(), SerError> {
        if len > self.limits.max_string {
            return Err(self.fail_limit(Limit::StringLength));
        }
        self.count_value(len)
    }

    /// Counts a map key (or field or variant name) of `len` bytes.
    #[inline]
    fn count_key(&mut self, len: usize) -> Result<(), SerError> {
        if len > self.limits.max_string {
            return Err(self.fail_limit(Limit::StringLength));
        }
        self.count_bytes(len)
    }

    #[inline]
    fn count_bytes(&mut self, cost: usize) -> Result<(), SerError> {
        // `bytes <= max_bytes` always holds, so this cannot underflow.
        if cost > self.limits.max_bytes - self.bytes {
            return Err(self.fail_limit(Limit::Bytes));
        }
        self.bytes += cost;
        Ok(())
    }

    /// Converts a value nested at `depth` (the caller has pushed its path
    /// segment and checked the depth).
    fn child<T: Serialize + ?Sized>(&mut self, depth: usize, value: &T) -> Result<Plain, SerError> {
        self.alive()?;
        let result = value.serialize(ValueSer { ctx: self, depth });
        result.map_err(|error| self.absorb(error))
    }

    /// Converts a map key nested at `depth`.
    fn key<T: Serialize + ?Sized>(&mut self, depth: usize, key: &T) -> Result<String, SerError> {
        self.alive()?;
        let result = key.serialize(KeySer { ctx: self, depth });
        result.map_err(|error| self.absorb(error))
    }

    /// Converts `value`, the value at `segments` of its container. The
    /// segments are made only when an error needs them: a conversion that
    /// succeeds builds (and drops) no path at all.
    #[inline]
    fn child_at<T: Serialize + ?Sized>(
        &mut self,
        depth: usize,
        segments: impl FnOnce() -> [Option<Segment>; 2],
        value: &T,
    ) -> Result<Plain, SerError> {
        self.frames += 1;
        let level = self.frames;
        let result = self.child(depth, value);
        self.frames -= 1;
        if self.error.is_some() {
            self.close_with_error(level, segments().into_iter().flatten());
            return Err(SerError::Recorded);
        }
        result
    }
}

/// Serializes one value at `depth` (the number of levels around it).
struct ValueSer<'c> {
    ctx: &'c mut Ctx,
    depth: usize,
}

impl<'c> ValueSer<'c> {
    fn scalar(self, plain: Plain) -> Result<Plain, SerError> {
        self.ctx.alive()?;
        self.ctx.count_value(0)?;
        Ok(plain)
    }

    fn text(self, text: &str) -> Result<Plain, SerError> {
        self.ctx.alive()?;
        self.ctx.count_text(text.len())?;
        Ok(Plain::Text(text.to_owned()))
    }

    /// A transparent wrapper (`Some`, newtype struct): one level deeper, no
    /// value of its own.
    fn wrapper<T: Serialize + ?Sized>(self, value: &T) -> Result<Plain, SerError> {
        self.ctx.alive()?;
        self.ctx.enter(self.depth, 1)?;
        self.ctx.child(self.depth + 1, value)
    }

    /// Opens a list or map (`body`, empty), or with a variant the one-key
    /// map around it.
    fn open(self, variant: Option<&'static str>, body: Body) -> Result<Compound<'c>, SerError> {
        self.ctx.alive()?;
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

/// A list or map being filled (a list for seqs and tuples, a map for maps
/// and structs), inside a one-key map when `variant` is set.
struct Compound<'c> {
    ctx: &'c mut Ctx,
    /// The depth of the elements.
    depth: usize,
    variant: Option<&'static str>,
    body: Body,
}

/// What a [`Compound`] fills: only the container it makes, so opening and
/// closing one (every struct of an answer) builds nothing else.
enum Body {
    List(Vec<Plain>),
    Map {
        map: BTreeMap<String, Plain>,
        /// A map key waiting for its value.
        pending_key: Option<String>,
    },
}

impl Body {
    fn list() -> Self {
        Body::List(Vec::new())
    }

    fn map() -> Self {
        Body::Map {
            map: BTreeMap::new(),
            pending_key: None,
        }
    }
}

impl Compound<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        let Body::List(list) = &mut self.body else {
            return Err(self.ctx.fail_unsupported("an element in a map"));
        };
        let (variant, index) = (self.variant, list.len());
        let segments = || [variant.map(Segment::Field), Some(Segment::Index(index))];
        let plain = self.ctx.child_at(self.depth, segments, value)?;
        list.push(plain);
        Ok(())
    }

    fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        self.ctx.alive()?;
        self.ctx.count_key(key.len())?;
        let Body::Map { map, .. } = &mut self.body else {
            return Err(self.ctx.fail_unsupported("a field in a list"));
        };
        let variant = self.variant;
        let segments = || [variant.map(Segment::Field), Some(Segment::Field(key))];
        let plain = self.ctx.child_at(self.depth, segments, value)?;
        map.insert(key.to_owned(), plain);
        Ok(())
    }

    fn finish(
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

    fn end_list(self) -> Result<Plain, SerError> {
        let inner = match self.body {
            Body::List(list) => Plain::List(list),
            Body::Map { map, .. } => Plain::from_map(map),
        };
        Self::finish(self.ctx, self.variant, inner)
    }

    fn end_map(self) -> Result<Plain, SerError> {
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
        let key = self.ctx.key(self.depth, key)?;
        if let Body::Map { pending_key, .. } = &mut self.body {
            *pending_key = Some(key);
        }
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        let Body::Map { pending_key, .. } = &mut self.body else {
            return Err(self.ctx.fail_unsupported("a map value in a list"));
        };
        let Some(key) = pending_key.take() else {
            return Err(self.ctx.fail_unsupported("a map value without a key"));
        };
        self.ctx.frames += 1;
        let level = self.ctx.frames;
        let result = self.ctx.child(self.depth, value);
        self.ctx.frames -= 1;
        if self.ctx.error.is_some() {
            self.ctx
                .close_with_error(level, std::iter::once(Segment::Key(key)));
            return Err(SerError::Recorded);
        }
        if let Body::Map { map, .. } = &mut self.body {
            map.insert(key, result?);
        }
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

/// Serializes a map key to its text.
struct KeySer<'c> {
    ctx: &'c mut Ctx,
    depth: usize,
}

impl KeySer<'_> {
    fn text(self, text: &str) -> Result<String, SerError> {
        self.ctx.alive()?;
        self.ctx.count_key(text.len())?;
        Ok(text.to_owned())
    }

    fn refuse(self, what: &str) -> Result<String, SerError> {
        self.ctx.alive()?;
        Err(self
            .ctx
            .fail_unsupported(&format!("a map key that is {what}")))
    }

    fn refuse_compound<C>(self, what: &str) -> Result<C, SerError> {
        self.ctx.alive()?;
        Err(self
            .ctx
            .fail_unsupported(&format!("a map key that is {what}")))
    }

    fn wrapper<T: Serialize + ?Sized>(self, key: &T) -> Result<String, SerError> {
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
        self.refuse_compound("a list")
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, SerError> {
        self.refuse_compound("a tuple")
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, SerError> {
        self.refuse_compound(&format!("the tuple struct {}", short(name)))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, SerError> {
        self.refuse_compound(&format!("the enum variant {} with data", short(variant)))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, SerError> {
        self.refuse_compound("a map")
    }

    fn serialize_struct(
        self,
        name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, SerError> {
        self.refuse_compound(&format!("the struct {}", short(name)))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, SerError> {
        self.refuse_compound(&format!("the enum variant {} with data", short(variant)))
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

/// `error` with its path set (the variants that carry one).
fn with_path(mut error: PlainError, rendered: String) -> PlainError {
    match &mut error {
        PlainError::LimitExceeded { path, .. }
        | PlainError::Unsupported { path, .. }
        | PlainError::Custom { path, .. } => *path = rendered,
        _ => {}
    }
    error
}
