//! The Kubernetes client of `kruise serve` (issue 26 item 9): its configuration (a kubeconfig,
//! else `$KUBECONFIG`, `~/.kube/config`, then the in-cluster service account) and its client-side
//! rate limit, kruise's `--rest-config-qps`/`--rest-config-burst` (30/50). client-go throttles
//! every request of a rest config with a token bucket (`flowcontrol.NewTokenBucketRateLimiter`:
//! `burst` tokens, refilled at `qps` per second, full at the start); kube-rs has no such limit,
//! so [`RateLimitLayer`] adds one to the client's tower stack. A request takes a token before it
//! is sent; a watch is one request however long it streams, as in client-go.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A client-side rate limit: `qps` requests per second on average, `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Tokens added per second; 0: no limit.
    pub qps: u32,
    /// The bucket's size (at least 1 is used).
    pub burst: u32,
}

/// client-go's token bucket (golang.org/x/time/rate): starts full, refills continuously.
#[derive(Debug)]
pub struct TokenBucket {
    per_second: f64,
    size: f64,
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    /// A full bucket at `now`; `None` for no limit (`qps` 0).
    pub fn new(limit: RateLimit, now: Instant) -> Option<TokenBucket> {
        (limit.qps > 0).then(|| {
            let size = f64::from(limit.burst.max(1));
            TokenBucket { per_second: f64::from(limit.qps), size, tokens: size, at: now }
        })
    }

    /// Takes a token at `now`, or says how long until one is there.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.size);
        self.at = now.max(self.at);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.per_second))
        }
    }
}

/// A tower layer that lets a request through once [`TokenBucket`] has a token for it.
#[derive(Clone, Debug)]
pub struct RateLimitLayer {
    bucket: Option<Arc<Mutex<TokenBucket>>>,
}

impl RateLimitLayer {
    /// The layer of `limit` (a pass-through for no limit).
    pub fn new(limit: RateLimit) -> Self {
        RateLimitLayer {
            bucket: TokenBucket::new(limit, tokio::time::Instant::now().into_std()).map(|b| Arc::new(Mutex::new(b))),
        }
    }
}

impl<S> tower::Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimited { inner, bucket: self.bucket.clone(), has_token: false, sleep: None }
    }
}

/// The service of [`RateLimitLayer`]: ready when it holds a token and the inner service is ready.
pub struct RateLimited<S> {
    inner: S,
    bucket: Option<Arc<Mutex<TokenBucket>>>,
    has_token: bool,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S, Request> tower::Service<Request> for RateLimited<S>
where
    S: tower::Service<Request>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        while let Some(bucket) = self.bucket.as_ref().filter(|_| !self.has_token) {
            if let Some(sleep) = self.sleep.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.sleep = None;
            }
            let now = tokio::time::Instant::now().into_std();
            let taken = bucket.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take(now);
            match taken {
                Ok(()) => self.has_token = true,
                Err(wait) => self.sleep = Some(Box::pin(tokio::time::sleep(wait))),
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        self.has_token = false;
        self.inner.call(request)
    }
}

/// The client of `kruise serve`: from `kubeconfig` when given (else inferred), rate-limited.
pub async fn connect(kubeconfig: Option<&Path>, limit: RateLimit) -> Result<kube::Client, String> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| e.to_string())?
        }
        None => kube::Config::infer().await.map_err(|e| e.to_string())?,
    };
    let builder = kube::client::ClientBuilder::try_from(config).map_err(|e| e.to_string())?;
    Ok(builder.with_layer(&RateLimitLayer::new(limit)).build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_starts_full_and_refills_at_qps() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(RateLimit { qps: 30, burst: 50 }, start).unwrap();
        for i in 0..50 {
            assert_eq!(bucket.take(start), Ok(()), "token {i} of the burst");
        }
        let wait = bucket.take(start).unwrap_err();
        assert!((wait.as_secs_f64() - 1.0 / 30.0).abs() < 1e-9, "{wait:?}");
        // A second later 30 more tokens, not 31.
        let later = start + Duration::from_secs(1);
        for i in 0..30 {
            assert_eq!(bucket.take(later), Ok(()), "refilled token {i}");
        }
        assert!(bucket.take(later).is_err());
        // Never more than the burst, however long it rested.
        let much_later = later + Duration::from_secs(3600);
        assert_eq!((0..60).filter(|_| bucket.take(much_later).is_ok()).count(), 50);
    }

    #[test]
    fn zero_qps_is_no_limit_and_zero_burst_is_one() {
        assert!(TokenBucket::new(RateLimit { qps: 0, burst: 50 }, Instant::now()).is_none());
        let now = Instant::now();
        let mut bucket = TokenBucket::new(RateLimit { qps: 10, burst: 0 }, now).unwrap();
        assert_eq!(bucket.take(now), Ok(()));
        assert_eq!(bucket.take(now), Err(Duration::from_millis(100)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_layer_holds_requests_beyond_the_burst() {
        use tower::{Layer, Service, ServiceExt};
        let service = tower::service_fn(|n: u32| async move { Ok::<u32, std::convert::Infallible>(n) });
        let mut limited = RateLimitLayer::new(RateLimit { qps: 2, burst: 3 }).layer(service);
        let start = tokio::time::Instant::now();
        for n in 0..7 {
            assert_eq!(limited.ready().await.unwrap().call(n).await, Ok(n));
        }
        // 3 at once, then one every half second: the 7th after 2 s.
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_secs(2) && elapsed < Duration::from_millis(2100), "{elapsed:?}");
    }
}
