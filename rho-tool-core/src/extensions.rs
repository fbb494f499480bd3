//! Values the starter of a call hands its tool: [`Extensions`].
//!
//! A tool is written once and run by many starters: a host's own loop, a
//! turn, rho's MCP server. Some starters have something a tool may use
//! that the others do not (rho's MCP server has the client the call came
//! from, to log to or to ask). Rather than widen [`ToolContext`] for
//! each, the starter puts a value of its own type beside the call
//! ([`Start::with_extension`]) and a tool that knows the type looks for it
//! ([`ToolContext::extension`]); a tool run elsewhere finds nothing and
//! does without. This is the type map `http` requests carry, kept to what
//! a call needs: a few values, looked up by type.
//!
//! The values are the starter's (host or library code, never foreign):
//! they are read in the call's task and dropped with the call's shared
//! state, wherever its last holder lets go of it.
//!
//! [`ToolContext`]: crate::ToolContext
//! [`ToolContext::extension`]: crate::ToolContext::extension
//! [`Start::with_extension`]: crate::Start::with_extension

use std::any::{Any, TypeId};
use std::fmt;

/// The values of one call, at most one of each type.
#[derive(Default)]
pub(crate) struct Extensions {
    /// Few (one, in rho's own starters), so a list beats a hash map.
    values: Vec<Box<dyn Any + Send + Sync>>,
}

impl Extensions {
    /// Puts `value` in, in place of a value of the same type.
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        // `as_ref` first: `type_id` on the box itself would name the box.
        self.values.retain(|held| held.as_ref().type_id() != id);
        self.values.push(Box::new(value));
    }

    /// The value of type `T`, if one was put in.
    pub(crate) fn get<T: 'static>(&self) -> Option<&T> {
        self.values
            .iter()
            .find_map(|held| held.as_ref().downcast_ref::<T>())
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.values.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Extensions;

    /// One value per type: a second of the same type replaces the first,
    /// another type sits beside it, and a type never put in is not found.
    #[test]
    fn one_value_per_type_found_by_its_type() {
        let mut extensions = Extensions::default();
        extensions.insert(1_u32);
        extensions.insert(String::from("client"));
        extensions.insert(2_u32);
        assert_eq!(extensions.get::<u32>(), Some(&2));
        assert_eq!(
            extensions.get::<String>().map(String::as_str),
            Some("client")
        );
        assert_eq!(extensions.get::<u64>(), None);
        assert_eq!(extensions.values.len(), 2);
    }
}
