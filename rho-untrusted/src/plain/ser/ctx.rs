//! The state of one conversion: what has been counted against the limits,
//! how deep the value being converted sits, and the first error with its
//! path.

use serde::Serialize;

use super::key::KeySer;
use super::value::ValueSer;
use super::{Limits, Plain, PlainError, SerError};
use crate::plain::Limit;
use crate::plain::path::Segment;

/// The state of one conversion.
#[derive(Debug)]
pub(super) struct Ctx {
    pub(super) limits: Limits,
    /// The size counted so far (see [`Limits`]); never above `max_bytes`.
    pub(super) bytes: usize,
    /// The values counted so far; never above `max_elements`.
    pub(super) elements: usize,
    /// How many containers' values are open around the value being
    /// converted (each with its path segments).
    pub(super) frames: usize,
    /// The path of the first error, innermost segment first. It is built
    /// only while that error travels up: a conversion that succeeds never
    /// touches a path.
    pub(super) error_path: Vec<Segment>,
    /// The level of the open value whose segments the error path needs
    /// next: the value around the error, then its container, and so on.
    pub(super) fill_level: usize,
    /// The first error (its path is set at the end); once set, every call
    /// fails at once.
    pub(super) error: Option<PlainError>,
}

impl Ctx {
    /// Records `error` at the current value (unless one is recorded
    /// already); its path is filled in as it travels up.
    #[cold]
    pub(super) fn fail(&mut self, error: impl FnOnce(String) -> PlainError) -> SerError {
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
    pub(super) fn close_with_error(
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
    pub(super) fn fail_limit(&mut self, limit: Limit) -> SerError {
        let max = self.limits.max(limit);
        self.fail(|path| PlainError::LimitExceeded { limit, max, path })
    }

    pub(super) fn fail_unsupported(&mut self, what: &str) -> SerError {
        self.fail(|path| PlainError::Unsupported {
            what: what.to_owned(),
            path,
        })
    }

    /// Turns an error from the value's `Serialize` into a recorded one, at
    /// the current path when it is the value's own.
    pub(super) fn absorb(&mut self, error: SerError) -> SerError {
        match error {
            SerError::Recorded => SerError::Recorded,
            SerError::Custom(message) => self.fail(|path| PlainError::Custom { message, path }),
        }
    }

    /// Fails when an error has been recorded already.
    #[inline]
    pub(super) fn alive(&self) -> Result<(), SerError> {
        match self.error {
            None => Ok(()),
            Some(_) => Err(SerError::Recorded),
        }
    }

    /// Checks that a value at `depth` may open `levels` more levels.
    #[inline]
    pub(super) fn enter(&mut self, depth: usize, levels: usize) -> Result<(), SerError> {
        if depth.saturating_add(levels) > self.limits.max_depth {
            return Err(self.fail_limit(Limit::Depth));
        }
        Ok(())
    }

    /// Counts one value with `payload` bytes of text or bytes.
    #[inline]
    pub(super) fn count_value(&mut self, payload: usize) -> Result<(), SerError> {
        if self.elements >= self.limits.max_elements {
            return Err(self.fail_limit(Limit::Elements));
        }
        self.count_bytes(Limits::VALUE_COST.saturating_add(payload))?;
        self.elements += 1;
        Ok(())
    }

    /// Counts one text or byte string of `len` bytes, as a value.
    #[inline]
    pub(super) fn count_text(&mut self, len: usize) -> Result<(), SerError> {
        if len > self.limits.max_string {
            return Err(self.fail_limit(Limit::StringLength));
        }
        self.count_value(len)
    }

    /// Counts a map key (or field or variant name) of `len` bytes.
    #[inline]
    pub(super) fn count_key(&mut self, len: usize) -> Result<(), SerError> {
        if len > self.limits.max_string {
            return Err(self.fail_limit(Limit::StringLength));
        }
        self.count_bytes(len)
    }

    #[inline]
    pub(super) fn count_bytes(&mut self, cost: usize) -> Result<(), SerError> {
        // `bytes <= max_bytes` always holds, so this cannot underflow.
        if cost > self.limits.max_bytes - self.bytes {
            return Err(self.fail_limit(Limit::Bytes));
        }
        self.bytes += cost;
        Ok(())
    }

    /// Converts a value nested at `depth` (the caller has pushed its path
    /// segment and checked the depth).
    pub(super) fn child<T: Serialize + ?Sized>(
        &mut self,
        depth: usize,
        value: &T,
    ) -> Result<Plain, SerError> {
        self.alive()?;
        let result = value.serialize(ValueSer { ctx: self, depth });
        result.map_err(|error| self.absorb(error))
    }

    /// Converts a map key nested at `depth`.
    pub(super) fn key<T: Serialize + ?Sized>(
        &mut self,
        depth: usize,
        key: &T,
    ) -> Result<String, SerError> {
        self.alive()?;
        let result = key.serialize(KeySer { ctx: self, depth });
        result.map_err(|error| self.absorb(error))
    }

    /// Converts `value`, the value at `segments` of its container. The
    /// segments are made only when an error needs them: a conversion that
    /// succeeds builds (and drops) no path at all.
    #[inline]
    pub(super) fn child_at<T: Serialize + ?Sized>(
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
