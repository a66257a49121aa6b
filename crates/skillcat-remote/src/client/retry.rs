//! The one retry loop: which answers are worth another try, how long to wait, and the loop
//! every request that may be repeated goes through (the HTTP source's GETs, OCI's GETs and
//! HEADs).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::header::{self, HeaderMap};

/// Longest wait between two attempts, whatever Retry-After says.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// One failed attempt: the error, and whether (and after how long) to try again.
pub(crate) struct Failure<E> {
    /// What is returned when no other attempt follows.
    pub error: E,
    /// Whether asking again may give another answer.
    pub retry: bool,
    /// What the server asked for (`Retry-After`).
    pub retry_after: Option<Duration>,
}

impl<E> Failure<E> {
    /// A failure asking again would not change.
    pub(crate) fn last(error: E) -> Self {
        Failure {
            error,
            retry: false,
            retry_after: None,
        }
    }
}

/// How often, and how patiently, a request is tried again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retry {
    /// Attempts after the first.
    pub retries: u32,
    /// The first wait's ceiling, doubled on each attempt (full jitter, capped).
    pub backoff: Duration,
}

impl Retry {
    /// Runs `attempt` until it succeeds, fails for good, has been tried again `retries` times,
    /// or (with a `deadline`) a wait would end after the deadline: then the last error is
    /// returned at once rather than after a wait that cannot help.
    pub(crate) async fn run<T, E, F, Fut>(
        &self,
        deadline: Option<tokio::time::Instant>,
        mut attempt: F,
    ) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure<E>>>,
    {
        let mut tried = 0;
        loop {
            let f = match attempt().await {
                Ok(r) => return Ok(r),
                Err(f) => f,
            };
            if !f.retry || tried >= self.retries {
                return Err(f.error);
            }
            let wait = backoff(tried, self.backoff, f.retry_after, jitter());
            if deadline.is_some_and(|d| tokio::time::Instant::now() + wait >= d) {
                return Err(f.error);
            }
            tokio::time::sleep(wait).await;
            tried += 1;
        }
    }
}

/// Statuses worth another try: server errors, and the client errors that mean "later".
pub(crate) fn is_retryable_status(status: u16) -> bool {
    (500..600).contains(&status) || status == 408 || status == 429
}

/// `Retry-After` in seconds (the HTTP-date form is ignored).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(header::RETRY_AFTER)?.to_str().ok()?;
    v.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// How long to wait before attempt `attempt + 1`: what the server asked for (capped), else
/// "full jitter" — a uniform share (`jitter` in `[0, 1)`) of `base × 2^attempt`, capped.
pub(crate) fn backoff(
    attempt: u32,
    base: Duration,
    retry_after: Option<Duration>,
    jitter: f64,
) -> Duration {
    if let Some(wait) = retry_after {
        return wait.min(MAX_BACKOFF);
    }
    let ceiling = base
        .saturating_mul(1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX))
        .min(MAX_BACKOFF);
    ceiling.mul_f64(jitter.clamp(0.0, 1.0))
}

/// A number in `[0, 1)`, different on each call (not for secrets).
pub(crate) fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_statuses_are_retried() {
        for s in [500, 502, 503, 504, 408, 429] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 410, 416] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn backoff_is_full_jitter_capped_and_honours_retry_after() {
        let base = Duration::from_millis(100);
        assert_eq!(backoff(0, base, None, 0.0), Duration::ZERO);
        assert_eq!(backoff(0, base, None, 0.5), Duration::from_millis(50));
        assert_eq!(backoff(3, base, None, 0.5), Duration::from_millis(400));
        assert_eq!(
            backoff(40, base, None, 0.999_999),
            MAX_BACKOFF.mul_f64(0.999_999)
        );
        assert_eq!(
            backoff(0, base, Some(Duration::from_secs(2)), 0.1),
            Duration::from_secs(2)
        );
        assert_eq!(
            backoff(0, base, Some(Duration::from_secs(3600)), 0.1),
            MAX_BACKOFF
        );
        let j = jitter();
        assert!((0.0..1.0).contains(&j));
    }

    #[tokio::test]
    async fn the_loop_stops_at_success_a_final_failure_or_the_count() {
        let fast = Retry {
            retries: 2,
            backoff: Duration::ZERO,
        };
        let mut calls = 0;
        let r: Result<(), u32> = fast
            .run(None, || {
                calls += 1;
                let n = calls;
                async move {
                    Err(Failure {
                        error: n,
                        retry: true,
                        retry_after: None,
                    })
                }
            })
            .await;
        assert_eq!(r, Err(3), "the first try and two more");
        let mut calls = 0;
        let r: Result<(), u32> = fast
            .run(None, || {
                calls += 1;
                async { Err(Failure::last(7)) }
            })
            .await;
        assert_eq!((r, calls), (Err(7), 1));
        let r: Result<u32, u32> = fast.run(None, || async { Ok(1) }).await;
        assert_eq!(r, Ok(1));
        // A wait that would end after the deadline is not waited.
        let slow = Retry {
            retries: 5,
            backoff: Duration::from_secs(5),
        };
        let mut calls = 0;
        let r: Result<(), u32> = slow
            .run(Some(tokio::time::Instant::now()), || {
                calls += 1;
                async {
                    Err(Failure {
                        error: 1,
                        retry: true,
                        retry_after: Some(Duration::from_secs(1)),
                    })
                }
            })
            .await;
        assert_eq!((r, calls), (Err(1), 1));
    }
}
