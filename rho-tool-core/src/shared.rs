//! What a builder takes where it keeps a trait object: a value, or an
//! `Arc` a host keeps a handle of, alike.

use std::sync::Arc;

use crate::gate::{Approver, Gate};
use crate::tool::Tool;
use crate::watch::Watch;

/// A value a builder keeps as the shared trait object `T`: the value put
/// in an `Arc` of its own, or an `Arc` the host keeps, as it is.
///
/// Every builder of rho that keeps a trait object takes one (`with_gate`
/// takes `impl IntoShared<dyn Gate>`, `with_approver`, `with_watch`,
/// `SourceHandle::add`, `with_policy` the same), so a host wires a turn
/// with values and no `Arc::new`, and one that shares a gate passes its
/// `Arc`: an `Arc<G>` or an `Arc<dyn Gate>` is used as it is, never put in
/// a second `Arc`.
///
/// A trait rather than an `impl Gate for Arc<G>`: calls of a gate, a tool
/// or an approver are `async` trait methods, each of which boxes its
/// future, and through such an impl every call would box two (the `Arc`'s
/// and the gate's), and every `Arc<dyn Gate>` in rho would resolve its
/// methods to the `Arc`'s.
///
/// ```
/// use std::sync::Arc;
/// use rho_tool_core::{AllowAll, Gate, IntoShared};
///
/// let kept: Arc<dyn Gate> = Arc::new(AllowAll);
/// assert!(Arc::ptr_eq(&kept, &kept.clone().into_shared()));
/// let from_value: Arc<dyn Gate> = AllowAll.into_shared();
/// # let _ = from_value;
/// ```
pub trait IntoShared<T: ?Sized> {
    /// The shared trait object.
    fn into_shared(self) -> Arc<T>;
}

/// The three ways in for each of the core's traits: a value, an `Arc` of
/// one, an `Arc` of the trait object.
macro_rules! into_shared {
    ($($object:ident),+) => {$(
        impl<V: $object + 'static> IntoShared<dyn $object> for V {
            fn into_shared(self) -> Arc<dyn $object> {
                Arc::new(self)
            }
        }

        impl<V: $object + 'static> IntoShared<dyn $object> for Arc<V> {
            fn into_shared(self) -> Arc<dyn $object> {
                self
            }
        }

        impl IntoShared<dyn $object> for Arc<dyn $object> {
            fn into_shared(self) -> Arc<dyn $object> {
                self
            }
        }
    )+};
}

into_shared!(Gate, Approver, Tool, Watch);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AllowAll;

    #[test]
    fn an_arc_is_kept_as_it_is_and_a_value_is_shared_once() {
        let kept: Arc<dyn Gate> = Arc::new(AllowAll);
        let shared = kept.clone().into_shared();
        assert!(Arc::ptr_eq(&kept, &shared));
        assert_eq!(Arc::strong_count(&kept), 2);

        let concrete = Arc::new(AllowAll);
        let shared: Arc<dyn Gate> = Arc::clone(&concrete).into_shared();
        assert_eq!(Arc::strong_count(&concrete), 2, "the same allocation");
        drop(shared);

        let value: Arc<dyn Gate> = AllowAll.into_shared();
        assert_eq!(Arc::strong_count(&value), 1);
    }
}
