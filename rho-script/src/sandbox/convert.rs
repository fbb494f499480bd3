//! A JavaScript value made plain data, inside the sandbox.
//!
//! The walk is rho-script's own, not `JSON.stringify` (which a script can
//! replace) and not a recursion (a deep answer cannot overflow the thread's
//! stack): an explicit stack of open containers, bounded by [`Limits`].
//! What it reads of the value (getters, `toJSON`, proxy traps) is script
//! code and runs on the script's thread, under the call's interrupt and
//! memory cap, like the rest of the script.
//!
//! | JavaScript | plain data |
//! |---|---|
//! | `undefined`, `null` | null |
//! | boolean | bool |
//! | number | integer when it is one (within ±2^53), else float; `NaN`, `Infinity`, `-Infinity` as text |
//! | string | text |
//! | BigInt | its decimal digits, as text |
//! | symbol | `Symbol(description)`, as text |
//! | function | its source text, as text |
//! | an `Error` | `Name: message`, as text |
//! | a promise | `#Opaque<Promise>` |
//! | array (and a proxy of one) | list, every index read (holes are null) |
//! | other object | map of its own enumerable string keys |
//!
//! An object with a callable `toJSON` is replaced by what it returns (once,
//! as `JSON.stringify` does: so a `Date` becomes its ISO text). A value
//! that is one of its own ancestors is refused with the path where the
//! cycle closes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rho_tool_core::untrusted::plain::{Limit, Limits, Plain, PlainError};
use rquickjs::atom::PredefinedAtom;
use rquickjs::{Coerced, Ctx, Function, Object, Promise, Type, Value, function::This};

/// Integers a float holds exactly: ±(2^53 - 1).
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// Why a value could not be made plain data.
#[derive(Debug)]
pub(crate) enum WalkError {
    /// A limit; the error names it and the path.
    Limit(PlainError),
    /// A value that is its own ancestor.
    Cycle {
        /// Where the cycle closes.
        path: String,
        /// The ancestor it closes on.
        ancestor: String,
    },
    /// A string that is not valid Unicode even after it was made well
    /// formed.
    NotUnicode { path: String },
    /// Script code the walk ran (a getter, `toJSON`, a proxy trap) threw;
    /// the exception is pending on the context.
    Threw { path: String },
    /// The engine's binding refused something (it names what).
    Engine { path: String, message: String },
}

impl WalkError {
    /// The error as a sentence, for texts the model reads (not for
    /// [`WalkError::Threw`], whose exception says more).
    pub(crate) fn describe(&self) -> String {
        match self {
            WalkError::Limit(error) => error.to_string(),
            WalkError::Cycle { path, ancestor } => {
                format!("it is cyclic: the value at {path} is its own ancestor at {ancestor}")
            }
            WalkError::NotUnicode { path } => {
                format!("the string at {path} is not valid Unicode")
            }
            WalkError::Threw { path } => format!("reading it threw at {path}"),
            WalkError::Engine { path, message } => {
                format!("the engine could not read it at {path}: {message}")
            }
        }
    }
}

/// The built-ins the walk and the call rely on, taken from the fresh
/// context before any script ran, so a script that replaces them changes
/// nothing here.
///
/// They are read as properties of the built-ins and called with an
/// explicit `this` ([`This`]), not bound by evaluated source: evaluating
/// even a short snippet parses and compiles it, several times the cost of
/// a few property reads.
pub(crate) struct Originals<'js> {
    /// `Function.prototype.toString`, called with the function as `this`.
    function_to_string: Function<'js>,
    /// `String.prototype.toWellFormed`, called with the string as `this`.
    to_well_formed: Function<'js>,
    /// `Promise.resolve`, called with [`Originals::promise`] as `this`.
    promise_resolve: Function<'js>,
    /// `Promise`.
    promise: Object<'js>,
}

impl<'js> Originals<'js> {
    /// Takes the built-ins from `ctx`, which must not have run a script
    /// yet.
    pub(crate) fn take(ctx: &Ctx<'js>) -> rquickjs::Result<Self> {
        let function_to_string = Function::prototype(ctx.clone()).get(PredefinedAtom::ToString)?;
        let globals = ctx.globals();
        let string: Object<'js> = globals.get(PredefinedAtom::String)?;
        let string_prototype: Object<'js> = string.get(PredefinedAtom::Prototype)?;
        let to_well_formed = string_prototype.get("toWellFormed")?;
        let promise: Object<'js> = globals.get(PredefinedAtom::Promise)?;
        let promise_resolve = promise.get(PredefinedAtom::Resolve)?;
        Ok(Self {
            function_to_string,
            to_well_formed,
            promise_resolve,
            promise,
        })
    }

    /// The built-ins in the order [`Originals::from_values`] reads them:
    /// for a kit that a native function of the sandbox is bound to (a
    /// native closure may capture no JavaScript value).
    pub(crate) fn values(&self) -> [Value<'js>; 4] {
        [
            self.function_to_string.clone().into_value(),
            self.to_well_formed.clone().into_value(),
            self.promise_resolve.clone().into_value(),
            self.promise.clone().into_value(),
        ]
    }

    /// The built-ins as [`Originals::values`] gave them, from `kit`
    /// starting at `at`.
    pub(crate) fn from_values(kit: &rquickjs::Array<'js>, at: usize) -> rquickjs::Result<Self> {
        Ok(Self {
            function_to_string: kit.get(at)?,
            to_well_formed: kit.get(at + 1)?,
            promise_resolve: kit.get(at + 2)?,
            promise: kit.get(at + 3)?,
        })
    }

    /// `string` as Rust text, each lone surrogate replaced by U+FFFD (with
    /// the original `toWellFormed`): a JavaScript string is UTF-16 and
    /// need not be valid Unicode.
    ///
    /// # Errors
    ///
    /// An error of the engine (a limit, an interrupt) while it replaces.
    pub(crate) fn well_formed(&self, string: &rquickjs::String<'js>) -> rquickjs::Result<String> {
        match string.to_string() {
            Err(rquickjs::Error::Utf8(_)) => {
                let well_formed: rquickjs::String<'js> =
                    self.to_well_formed.call((This(string.clone()),))?;
                well_formed.to_string()
            }
            other => other,
        }
    }

    /// The source text of `function` (the original
    /// `Function.prototype.toString`).
    fn source_of(&self, function: Value<'js>) -> rquickjs::Result<Value<'js>> {
        self.function_to_string.call((This(function),))
    }

    /// `Promise.resolve(value)`: a promise of any value, the same one for
    /// a promise, an adopted one for a thenable.
    pub(crate) fn resolve(&self, value: Value<'js>) -> rquickjs::Result<Promise<'js>> {
        self.promise_resolve
            .call((This(self.promise.clone()), value))
    }
}

/// One step from a container to one of its values.
enum Segment {
    Index(usize),
    Key(String),
}

/// A container being converted.
enum Frame<'js> {
    List {
        source: Object<'js>,
        len: usize,
        next: usize,
        items: Vec<Plain>,
    },
    Map {
        source: Object<'js>,
        /// Each key as the object holds it (to read its value) and as
        /// well-formed text (for the map and paths).
        keys: std::vec::IntoIter<(rquickjs::String<'js>, String)>,
        entries: BTreeMap<String, Plain>,
    },
}

impl<'js> Frame<'js> {
    fn source(&self) -> &Object<'js> {
        match self {
            Frame::List { source, .. } | Frame::Map { source, .. } => source,
        }
    }

    fn finish(self) -> Plain {
        match self {
            Frame::List { items, .. } => Plain::List(items),
            Frame::Map { entries, .. } => Plain::Map(entries),
        }
    }
}

/// What one value turned into.
enum Entered<'js> {
    Leaf(Plain),
    Open(Frame<'js>),
}

/// Converts JavaScript values under one set of limits.
pub(crate) struct Walker<'a, 'js> {
    originals: &'a Originals<'js>,
    limits: &'a Limits,
    elements: usize,
    bytes: usize,
}

impl<'a, 'js> Walker<'a, 'js> {
    pub(crate) fn new(originals: &'a Originals<'js>, limits: &'a Limits) -> Self {
        Self {
            originals,
            limits,
            elements: 0,
            bytes: 0,
        }
    }

    /// Converts `root`, a whole answer.
    pub(crate) fn convert(&mut self, root: Value<'js>) -> Result<Plain, WalkError> {
        let mut frames: Vec<Frame<'js>> = Vec::new();
        let mut path: Vec<Segment> = Vec::new();
        let mut incoming = Some((root, String::new()));
        loop {
            let mut done = None;
            if let Some((value, key)) = incoming.take() {
                match self.enter(value, &key, &frames, &path)? {
                    Entered::Leaf(plain) => done = Some(plain),
                    Entered::Open(frame) => frames.push(frame),
                }
            }
            // Hand finished values to their containers until one container
            // has another value to convert.
            loop {
                if let Some(plain) = done.take() {
                    let Some(top) = frames.last_mut() else {
                        return Ok(plain);
                    };
                    match (top, path.pop()) {
                        (Frame::List { items, .. }, _) => items.push(plain),
                        (Frame::Map { entries, .. }, Some(Segment::Key(key))) => {
                            entries.insert(key, plain);
                        }
                        (Frame::Map { .. }, _) => {
                            unreachable!("a map's value is always entered under its key")
                        }
                    }
                }
                let Some(top) = frames.last_mut() else {
                    unreachable!("a walk with no open container has returned its value")
                };
                match self.next_child(top, &path)? {
                    Some((segment, value, key)) => {
                        path.push(segment);
                        incoming = Some((value, key));
                        break;
                    }
                    None => {
                        let frame = frames.pop().expect("the top frame exists");
                        done = Some(frame.finish());
                    }
                }
            }
        }
    }

    /// The next value of `frame`, read from the script's object (a getter or
    /// a proxy trap may run), with its path segment and its key as text for
    /// `toJSON`.
    fn next_child(
        &mut self,
        frame: &mut Frame<'js>,
        path: &[Segment],
    ) -> Result<Option<(Segment, Value<'js>, String)>, WalkError> {
        match frame {
            Frame::List {
                source, len, next, ..
            } => {
                if *next >= *len {
                    return Ok(None);
                }
                let index = *next;
                *next += 1;
                let at = || {
                    let mut segments = path_string(path);
                    let _ = write!(segments, "[{index}]");
                    segments
                };
                // `len` was checked against the element limit, so it fits.
                let key = u32::try_from(index).map_err(|_| {
                    WalkError::Limit(PlainError::LimitExceeded {
                        limit: Limit::Elements,
                        max: self.limits.max_elements,
                        path: at(),
                    })
                })?;
                let value = source
                    .get::<_, Value<'js>>(key)
                    .map_err(|error| self.engine_error(error, at()))?;
                Ok(Some((Segment::Index(index), value, index.to_string())))
            }
            Frame::Map { source, keys, .. } => {
                let Some((held, key)) = keys.next() else {
                    return Ok(None);
                };
                let value = source.get::<_, Value<'js>>(held).map_err(|error| {
                    let mut at = path_string(path);
                    push_key(&mut at, &key);
                    self.engine_error(error, at)
                })?;
                Ok(Some((Segment::Key(key.clone()), value, key)))
            }
        }
    }

    /// Counts one value and makes it a leaf or opens it as a container.
    fn enter(
        &mut self,
        value: Value<'js>,
        key: &str,
        frames: &[Frame<'js>],
        path: &[Segment],
    ) -> Result<Entered<'js>, WalkError> {
        self.count_value(path)?;
        let value = self.apply_to_json(value, key, path)?;
        let leaf = match value.type_of() {
            Type::Uninitialized | Type::Undefined | Type::Null | Type::Unknown => Plain::Null,
            Type::Bool => Plain::Bool(value.as_bool().unwrap_or_default()),
            Type::Int => Plain::Int(value.as_int().map(i64::from).unwrap_or_default()),
            Type::Float => number(value.as_float().unwrap_or(f64::NAN)),
            Type::String => Plain::Text(self.text(value, path)?),
            Type::BigInt => {
                let Coerced(digits) = value
                    .get::<Coerced<String>>()
                    .map_err(|error| self.engine_error(error, path_string(path)))?;
                self.leaf_text(digits, path)?
            }
            Type::Symbol => {
                let description = value
                    .as_symbol()
                    .map(|symbol| symbol.description())
                    .transpose()
                    .map_err(|error| self.engine_error(error, path_string(path)))?
                    .filter(|description| description.is_string());
                let description = match description {
                    Some(description) => self.text(description, path)?,
                    None => String::new(),
                };
                self.leaf_text(format!("Symbol({description})"), path)?
            }
            Type::Function | Type::Constructor => {
                let source: Value<'js> = self
                    .originals
                    .source_of(value)
                    .map_err(|error| self.engine_error(error, path_string(path)))?;
                let source = self.text(source, path)?;
                self.leaf_text(source, path)?
            }
            Type::Promise => Plain::opaque("Promise"),
            Type::Exception => {
                let text = self.error_text(&value, path)?;
                self.leaf_text(text, path)?
            }
            Type::Module => Plain::opaque("Module"),
            Type::Array | Type::Object | Type::Proxy => {
                let Some(object) = value.into_object() else {
                    return Ok(Entered::Leaf(Plain::Null));
                };
                return self.open(object, frames, path).map(Entered::Open);
            }
        };
        Ok(Entered::Leaf(leaf))
    }

    /// `value.toJSON(key)` when `value` is an object with a callable
    /// `toJSON`, else `value`.
    fn apply_to_json(
        &mut self,
        value: Value<'js>,
        key: &str,
        path: &[Segment],
    ) -> Result<Value<'js>, WalkError> {
        let Some(object) = value.as_object() else {
            return Ok(value);
        };
        if value.is_function() {
            return Ok(value);
        }
        let to_json: Value<'js> = object
            .get("toJSON")
            .map_err(|error| self.engine_error(error, path_string(path)))?;
        let Some(to_json) = to_json.into_function() else {
            return Ok(value);
        };
        to_json
            .call((This(value), key))
            .map_err(|error| self.engine_error(error, path_string(path)))
    }

    /// Opens `object` as a list or a map, after checking depth and cycles.
    fn open(
        &mut self,
        object: Object<'js>,
        frames: &[Frame<'js>],
        path: &[Segment],
    ) -> Result<Frame<'js>, WalkError> {
        if let Some(depth) = frames
            .iter()
            .position(|frame| frame.source().as_value() == object.as_value())
        {
            return Err(WalkError::Cycle {
                path: path_string(path),
                ancestor: path_string(&path[..depth]),
            });
        }
        if frames.len() >= self.limits.max_depth {
            return Err(WalkError::Limit(PlainError::LimitExceeded {
                limit: Limit::Depth,
                max: self.limits.max_depth,
                path: path_string(path),
            }));
        }
        let remaining = self.limits.max_elements.saturating_sub(self.elements);
        if object.as_value().is_array() {
            let len: Value<'js> = object
                .get("length")
                .map_err(|error| self.engine_error(error, path_string(path)))?;
            let len = len.as_number().unwrap_or(0.0);
            if len > remaining as f64 {
                return Err(self.too_many(path));
            }
            // A whole, non-negative number no larger than the element limit.
            let len = if len.is_finite() && len > 0.0 {
                len as usize
            } else {
                0
            };
            return Ok(Frame::List {
                source: object,
                len,
                next: 0,
                items: Vec::with_capacity(len.min(1024)),
            });
        }
        let mut keys = Vec::new();
        // Read as JavaScript strings, never straight into Rust text: a key
        // may hold a lone surrogate, which `text` replaces.
        for key in object.keys::<rquickjs::String<'js>>() {
            let held = key.map_err(|error| self.engine_error(error, path_string(path)))?;
            if keys.len() >= remaining {
                return Err(self.too_many(path));
            }
            let key = self.text(held.clone().into_value(), path)?;
            keys.push((held, key));
        }
        Ok(Frame::Map {
            source: object,
            keys: keys.into_iter(),
            entries: BTreeMap::new(),
        })
    }

    /// `Name: message` of an `Error` value.
    fn error_text(&mut self, value: &Value<'js>, path: &[Segment]) -> Result<String, WalkError> {
        let Some(object) = value.as_object() else {
            return Ok(String::new());
        };
        let mut parts = Vec::with_capacity(2);
        for property in ["name", "message"] {
            let part: Value<'js> = object
                .get(property)
                .map_err(|error| self.engine_error(error, path_string(path)))?;
            if part.is_undefined() {
                continue;
            }
            let Coerced(part) = part
                .get::<Coerced<rquickjs::String<'js>>>()
                .map_err(|error| self.engine_error(error, path_string(path)))?;
            parts.push(self.text(part.into_value(), path)?);
        }
        Ok(parts.join(": "))
    }

    /// A JavaScript string as Rust text; a lone surrogate is replaced
    /// (`toWellFormed`) rather than refused.
    fn text(&mut self, value: Value<'js>, path: &[Segment]) -> Result<String, WalkError> {
        let Some(string) = value.as_string() else {
            return Ok(String::new());
        };
        let text = match self.originals.well_formed(string) {
            Ok(text) => text,
            Err(rquickjs::Error::Utf8(_)) => {
                return Err(WalkError::NotUnicode {
                    path: path_string(path),
                });
            }
            Err(error) => return Err(self.engine_error(error, path_string(path))),
        };
        if text.len() > self.limits.max_string {
            return Err(self.limit(Limit::StringLength, path));
        }
        self.count_bytes(text.len(), path)?;
        Ok(text)
    }

    /// Text made by the walk itself (already counted when it came from
    /// [`Walker::text`], checked here when it did not).
    fn leaf_text(&mut self, text: String, path: &[Segment]) -> Result<Plain, WalkError> {
        if text.len() > self.limits.max_string {
            return Err(self.limit(Limit::StringLength, path));
        }
        Ok(Plain::Text(text))
    }

    /// Counts one value against the element and size limits.
    fn count_value(&mut self, path: &[Segment]) -> Result<(), WalkError> {
        self.elements += 1;
        if self.elements > self.limits.max_elements {
            return Err(self.limit(Limit::Elements, path));
        }
        self.count_bytes(Limits::VALUE_COST, path)
    }

    fn count_bytes(&mut self, bytes: usize, path: &[Segment]) -> Result<(), WalkError> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.limits.max_bytes {
            return Err(self.limit(Limit::Bytes, path));
        }
        Ok(())
    }

    fn too_many(&self, path: &[Segment]) -> WalkError {
        self.limit(Limit::Elements, path)
    }

    fn limit(&self, limit: Limit, path: &[Segment]) -> WalkError {
        WalkError::Limit(PlainError::LimitExceeded {
            limit,
            max: self.limits.max(limit),
            path: path_string(path),
        })
    }

    /// An error of the binding: a pending exception (script code threw, or
    /// the interrupt or the memory cap stopped it) or the binding's own.
    fn engine_error(&self, error: rquickjs::Error, path: String) -> WalkError {
        match error {
            rquickjs::Error::Exception => WalkError::Threw { path },
            other => WalkError::Engine {
                path,
                message: other.to_string(),
            },
        }
    }
}

/// A number as plain data: an integer when it is a whole number JSON and
/// JavaScript agree on, else a float; the non-finite ones as their
/// JavaScript names.
fn number(x: f64) -> Plain {
    if x.is_nan() {
        Plain::Text("NaN".to_owned())
    } else if x.is_infinite() {
        Plain::Text(if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned())
    } else if x.fract() == 0.0 && x.abs() <= MAX_SAFE {
        // Exact: a whole number within ±2^53 (and -0 becomes 0, as JSON has it).
        Plain::Int(x as i64)
    } else {
        Plain::Float(x)
    }
}

/// `segments` written like `$.items[3]["a b"]`.
fn path_string(segments: &[Segment]) -> String {
    let mut out = String::from("$");
    for segment in segments {
        match segment {
            Segment::Index(index) => {
                let _ = write!(out, "[{index}]");
            }
            Segment::Key(key) => push_key(&mut out, key),
        }
    }
    out
}

/// Keys longer than this are cut in a path, so error texts stay short.
const MAX_KEY_IN_PATH: usize = 64;

fn push_key(out: &mut String, key: &str) {
    let identifier = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier && key.len() <= MAX_KEY_IN_PATH {
        out.push('.');
        out.push_str(key);
        return;
    }
    let mut end = key.len().min(MAX_KEY_IN_PATH);
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    // A JSON string literal of the (cut) key.
    let quoted = serde_json::Value::String(key[..end].to_owned()).to_string();
    out.push('[');
    out.push_str(&quoted);
    if end < key.len() {
        out.insert(out.len() - 1, '…');
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_become_integers_floats_or_their_javascript_names() {
        assert_eq!(number(3.0), Plain::Int(3));
        assert_eq!(number(-0.0), Plain::Int(0));
        assert_eq!(number(1.5), Plain::Float(1.5));
        assert_eq!(number(1e300), Plain::Float(1e300));
        assert_eq!(number(f64::NAN), Plain::Text("NaN".into()));
        assert_eq!(number(f64::INFINITY), Plain::Text("Infinity".into()));
        assert_eq!(number(f64::NEG_INFINITY), Plain::Text("-Infinity".into()));
    }

    #[test]
    fn paths_name_keys_and_indexes() {
        let path = [
            Segment::Key("items".into()),
            Segment::Index(3),
            Segment::Key("a b".into()),
            Segment::Key("$ok_1".into()),
        ];
        assert_eq!(path_string(&path), r#"$.items[3]["a b"].$ok_1"#);
        assert_eq!(path_string(&[]), "$");
        let long = "é".repeat(40);
        assert_eq!(
            path_string(&[Segment::Key(long)]),
            format!("$[\"{}…\"]", "é".repeat(32))
        );
    }
}
