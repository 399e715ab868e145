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
    until(what, within, || {
        let pending = check();
        async move { pending.await.ok_or(None) }
    })
    .await
}

/// [`eventually`] for checks that can say why they are not there yet: polls `check` until it
/// returns `Ok`, and panics naming `what` and the last `Err` once `within` has passed (a CI log
/// then shows what the wait was stuck on, not only that it was).
pub async fn eventually_ok<T, F, Fut>(what: &str, within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    until(what, within, || {
        let pending = check();
        async move { pending.await.map_err(Some) }
    })
    .await
}

/// The loop of both: `Err` carries the reason to show, if the check gives one.
async fn until<T, F, Fut>(what: &str, within: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Option<String>>>,
{
    let deadline = Instant::now() + within;
    loop {
        let why = match check().await {
            Ok(v) => return v,
            Err(why) => why,
        };
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}{}",
            why.map(|why| format!("; last: {why}")).unwrap_or_default()
        );
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

    #[tokio::test]
    async fn eventually_ok_names_the_last_reason() {
        let mut n = 0;
        let got = eventually_ok("n to reach 2", Duration::from_secs(5), || {
            n += 1;
            std::future::ready(if n >= 2 { Ok(n) } else { Err(format!("n is {n}")) })
        })
        .await;
        assert_eq!(got, 2);
        let mut tries = 0;
        let late = tokio::spawn(eventually_ok("never", Duration::from_millis(150), move || {
            tries += 1;
            std::future::ready(Err::<(), _>(format!("try {tries}")))
        }));
        let message = late.await.unwrap_err().into_panic().downcast::<String>().map(|s| *s).unwrap_or_default();
        assert!(message.starts_with("timed out after 150ms waiting for never; last: try "), "{message}");
        assert!(!message.ends_with("try 1"), "the last reason, not the first: {message}");
    }
}
