//! Runs futures a few at a time and gives their outputs in order: what discovery needs to
//! overlap a backend's reads, without a futures library in the core.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Runs the futures of `items` with at most `limit` in flight (at least one), polled on the
/// calling task, and returns their outputs in the order of `items`.
pub(crate) async fn buffered<I, F>(items: I, limit: usize) -> Vec<F::Output>
where
    I: IntoIterator<Item = F>,
    F: Future,
{
    let mut pending = items.into_iter();
    let limit = limit.max(1);
    let mut running: Vec<(usize, Pin<Box<F>>)> = Vec::with_capacity(limit);
    let mut done: Vec<Option<F::Output>> = Vec::new();
    let mut next = 0usize;
    std::future::poll_fn(|cx: &mut Context<'_>| {
        loop {
            while running.len() < limit {
                let Some(fut) = pending.next() else { break };
                running.push((next, Box::pin(fut)));
                done.push(None);
                next += 1;
            }
            if running.is_empty() {
                return Poll::Ready(());
            }
            let before = running.len();
            running.retain_mut(|(i, fut)| match fut.as_mut().poll(cx) {
                Poll::Ready(out) => {
                    done[*i] = Some(out);
                    false
                }
                Poll::Pending => true,
            });
            if running.len() == before {
                // Every future in flight is waiting; each has registered the waker.
                return Poll::Pending;
            }
        }
    })
    .await;
    done.into_iter()
        .map(|out| out.expect("every future ran to completion"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn keeps_order_and_the_limit() {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let futures = (0..40u64).map(|i| {
            let in_flight = in_flight.clone();
            let most = most.clone();
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // Later items finish first.
                tokio::time::sleep(Duration::from_millis(40 - i)).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                i * 2
            }
        });
        let out = buffered(futures, 8).await;
        assert_eq!(out, (0..40).map(|i| i * 2).collect::<Vec<_>>());
        let most = most.load(Ordering::SeqCst);
        assert!(most <= 8, "{most} futures ran at once, the limit is 8");
        assert!(most > 1, "the futures did not overlap");
    }

    #[tokio::test]
    async fn empty_and_zero_limit() {
        let none: Vec<std::future::Ready<u8>> = Vec::new();
        assert!(buffered(none, 4).await.is_empty());
        let one = buffered([std::future::ready(7u8), std::future::ready(9)], 0).await;
        assert_eq!(one, [7, 9]);
    }
}
