//! How a watch waits before it retries: kube-runtime's default backoff (client-go's reflector
//! figures: 800 ms doubling to 30 s, with jitter) reset only by progress.
//!
//! kube-runtime's `default_backoff()` resets its backoff on every `Ok` item of the stream, and its
//! watcher yields `Ok(Event::Init)` before each list it tries. A list that keeps failing (a CRD not
//! installed, a role without the verb) therefore never backs off past the first step: every watch
//! retried and logged a warning about once a second, forever. Here only an item that shows the
//! list or watch worked (an object, the end of a list, a deletion) resets the backoff; `Init`
//! does not.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::utils::{Backoff, StreamBackoff};
use kube::runtime::watcher::{self, DefaultBackoff, Event};

/// `stream` (a watcher's) retried after errors with a backoff that only progress resets.
pub fn with_backoff<K, S>(stream: S) -> StreamBackoff<impl Stream<Item = S::Item>, ProgressBackoff>
where
    S: Stream<Item = Result<Event<K>, watcher::Error>>,
{
    let progress = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&progress);
    let marked = stream.inspect(move |item| {
        if matches!(item, Ok(event) if !matches!(event, Event::Init)) {
            seen.store(true, Ordering::Relaxed);
        }
    });
    StreamBackoff::new(marked, ProgressBackoff { inner: DefaultBackoff::default(), progress })
}

/// kube-runtime's [`DefaultBackoff`] whose reset waits for the stream to have made progress
/// since the last reset.
pub struct ProgressBackoff {
    inner: DefaultBackoff,
    progress: Arc<AtomicBool>,
}

impl Iterator for ProgressBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.inner.next()
    }
}

impl Backoff for ProgressBackoff {
    fn reset(&mut self) {
        if self.progress.swap(false, Ordering::Relaxed) {
            self.inner.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;
    use tokio::time::Instant;

    fn failure() -> watcher::Error {
        watcher::Error::NoResourceVersion
    }

    /// The time a stream of `items` takes to yield them all, on tokio's paused clock.
    async fn elapsed(items: Vec<Result<Event<()>, watcher::Error>>) -> Duration {
        let start = Instant::now();
        let n = with_backoff(stream::iter(items)).count().await;
        assert!(n > 0);
        start.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn failing_lists_back_off_further_each_time() {
        // Six failed lists, each announced by Init as kube's watcher does: 800 ms doubling (jitter
        // adds up to one step more) is at least 0.8 + 1.6 + 3.2 + 6.4 + 12.8 = 24.8 s before the
        // last error; kube's own reset on Init kept it under 6 × 1.6 s = 9.6 s.
        let mut items = Vec::new();
        for _ in 0..6 {
            items.push(Ok(Event::Init));
            items.push(Err(failure()));
        }
        let waited = elapsed(items).await;
        assert!(waited >= Duration::from_millis(24_800), "waited only {waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn progress_resets_the_backoff() {
        // Each failure follows a list that worked (InitDone): the backoff starts over every time,
        // 6 × under 1.6 s.
        let mut items = Vec::new();
        for _ in 0..6 {
            items.push(Ok(Event::Init));
            items.push(Ok(Event::InitDone));
            items.push(Err(failure()));
        }
        let waited = elapsed(items).await;
        assert!(waited < Duration::from_millis(9_600), "waited {waited:?}");
        assert!(waited >= Duration::from_millis(4_800), "waited {waited:?}");
    }

    #[test]
    fn reset_without_progress_keeps_growing() {
        let progress = Arc::new(AtomicBool::new(false));
        let mut b = ProgressBackoff { inner: DefaultBackoff::default(), progress: Arc::clone(&progress) };
        let first = b.next().unwrap();
        b.reset();
        for _ in 0..4 {
            b.next();
            b.reset();
        }
        let sixth = b.next().unwrap();
        assert!(first < Duration::from_millis(1_600), "{first:?}");
        assert!(sixth >= Duration::from_millis(25_600), "{sixth:?}");
        progress.store(true, Ordering::Relaxed);
        b.reset();
        assert!(b.next().unwrap() < Duration::from_millis(1_600));
    }
}
