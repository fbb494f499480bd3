//! The questions a server asks on a connection outside any call rho
//! knows of (while it answers a forwarded read or prompt, or with several
//! calls in flight), and the deadline of the requests forwarded on that
//! connection, which does not run while a person answers one: the wait
//! is the person's, not the server's, as a call's clock is held.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// How many such questions wait for an answer on one connection.
#[derive(Clone, Default)]
pub(crate) struct Asking(Arc<watch::Sender<usize>>);

impl Asking {
    /// One more question waits, until the guard drops.
    pub(crate) fn hold(&self) -> Held {
        self.0.send_modify(|waiting| *waiting += 1);
        Held(Arc::clone(&self.0))
    }

    /// `work`, unless it takes longer than `limit` while no question
    /// waits: `None` then.
    pub(crate) async fn within<T>(
        &self,
        limit: Duration,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        let mut waiting = self.0.subscribe();
        tokio::pin!(work);
        let mut left = limit;
        loop {
            let asked = *waiting.borrow_and_update() > 0;
            let since = Instant::now();
            tokio::select! {
                done = &mut work => return Some(done),
                () = tokio::time::sleep(left), if !asked => return None,
                changed = waiting.changed() => {
                    if !asked {
                        left = left.saturating_sub(since.elapsed());
                    }
                    if changed.is_err() {
                        // The count can no longer change (this holds a
                        // sender, so it never happens): the rest of the
                        // limit runs.
                        return tokio::time::timeout(left, work).await.ok();
                    }
                }
            }
        }
    }
}

/// A question that waits for its answer: see [`Asking::hold`].
pub(crate) struct Held(Arc<watch::Sender<usize>>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0
            .send_modify(|waiting| *waiting = waiting.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Property: the time a question waits is not counted against the
    /// limit; the time before and after it is.
    #[tokio::test(start_paused = true)]
    async fn the_limit_does_not_run_while_a_question_waits() {
        let asking = Asking::default();
        let limit = Duration::from_secs(10);
        let held = asking.hold();
        let question = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(held);
        });
        // 60 s asked, then 9 s more: within the limit.
        let work = tokio::time::sleep(Duration::from_secs(69));
        assert_eq!(asking.within(limit, work).await, Some(()));
        question.await.expect("the question ends");
        // Nothing asked: 11 s is past it.
        let work = tokio::time::sleep(Duration::from_secs(11));
        assert_eq!(asking.within(limit, work).await, None);
    }
}
