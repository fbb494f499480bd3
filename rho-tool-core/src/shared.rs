//! What a builder does with the trait object it is given: a host passes a
//! value, or an `Arc` it keeps a handle of, alike.

use std::any::Any;
use std::sync::Arc;

/// `value` as the shared trait object `T`: an `Arc<T>` the caller already
/// holds is kept as it is; any other value is put in a new `Arc` by
/// `share` (which unsizes it: `|gate| Arc::new(gate) as Arc<dyn Gate>`).
///
/// Every builder of rho that keeps a trait object (`with_gate`,
/// `with_approver`, `with_watch`, `with_policy`, ...) takes `impl Gate`
/// (or `impl Approver`, ...) and passes it through here, so a host wires a
/// turn with values and no `Arc::new`, and one that shares a gate passes
/// its `Arc` of it (every `Arc` of a gate is a gate). An `Arc<dyn Gate>`
/// is kept as it is, so calls reach the gate through one pointer; an
/// `Arc` of a concrete gate (`Arc<AnnotationGate>`) is a value like any
/// other and goes in an `Arc` of its own, one pointer further away.
///
/// ```
/// use std::sync::Arc;
/// use rho_tool_core::{AllowAll, Gate, into_shared};
///
/// let kept: Arc<dyn Gate> = Arc::new(AllowAll);
/// let shared = into_shared(kept.clone(), |gate| Arc::new(gate) as Arc<dyn Gate>);
/// assert!(Arc::ptr_eq(&kept, &shared));
/// ```
pub fn into_shared<T, V>(value: V, share: impl FnOnce(V) -> Arc<T>) -> Arc<T>
where
    T: ?Sized + 'static,
    V: 'static,
{
    let mut slot = Some(value);
    // `Any` tells whether `V` is `Arc<T>` itself: the only way to do so on
    // stable Rust without a second trait the caller would have to name.
    let given = (&mut slot as &mut dyn Any)
        .downcast_mut::<Option<Arc<T>>>()
        .and_then(Option::take);
    match (given, slot) {
        (Some(shared), _) => shared,
        (None, Some(value)) => share(value),
        (None, None) => unreachable!("the slot is emptied only when V is Arc<T>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AllowAll, Gate};

    #[test]
    fn an_arc_of_the_trait_object_is_kept_and_a_value_is_shared_once() {
        let kept: Arc<dyn Gate> = Arc::new(AllowAll);
        let mut wrapped = 0;
        let shared = into_shared(kept.clone(), |gate| {
            wrapped += 1;
            Arc::new(gate) as Arc<dyn Gate>
        });
        assert!(Arc::ptr_eq(&kept, &shared));
        assert_eq!(wrapped, 0);
        assert_eq!(Arc::strong_count(&kept), 2);

        let _value = into_shared(AllowAll, |gate| {
            wrapped += 1;
            Arc::new(gate) as Arc<dyn Gate>
        });
        assert_eq!(wrapped, 1);
    }
}
