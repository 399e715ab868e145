//! Waiting in tests: the one polling loop every test binary of the workspace uses.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often [`eventually`] looks again.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Polls `check` every [`POLL_INTERVAL`] until it returns `Some`, and returns that; panics
/// naming `what` once `within` has passed.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {within:?} waiting for {what}");
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_the_first_some_and_panics_after_the_deadline() {
        let mut n = 0;
        let got = eventually("n to reach 3", Duration::from_secs(5), || {
            n += 1;
            std::future::ready((n >= 3).then_some(n))
        })
        .await;
        assert_eq!(got, 3);
        let late = tokio::spawn(eventually("never", Duration::from_millis(150), || std::future::ready(None::<()>)));
        let err = late.await.unwrap_err();
        let message = err.into_panic().downcast::<String>().map(|s| *s).unwrap_or_default();
        assert!(message.contains("timed out after 150ms waiting for never"), "{message}");
    }
}
