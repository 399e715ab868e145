//! Connection timeouts for HTTP/1.1, which hyper cannot express on its own: hyper's header-read
//! timer also runs while a keep-alive connection is idle, but the apiserver keeps pooled
//! connections idle for up to 90 s and closing them earlier races its next request. So a
//! connection may stay idle for `idle` (default 120 s), while a request, once its first byte
//! arrived, must be read within `request` (default 10 s: the header-read timeout, which also
//! bounds slow bodies). A write that makes no progress for `request` fails too: a client that
//! sends requests and never reads the answers ("slow read") fills its receive window and the
//! server's send buffer, after which hyper neither writes nor reads, and without this the
//! connection stayed open for good (tests/hostile_clients.rs).
//!
//! The phase deadline is a plain `Instant`, moved twice per request at the cost of reading the
//! clock; the timer that wakes the connection is only moved when it fires (at most every
//! `min(idle, request)`, and never after the deadline), not at every phase change: resetting a tokio
//! timer takes the timer wheel's lock, twice per review (issue 16).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Idle or reading a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Reading,
}

/// An IO object that fails pending reads once the current phase's deadline passed.
pub struct TimedIo<T> {
    inner: T,
    phase: Phase,
    /// When the current phase's time is up.
    due: Instant,
    /// Wakes a pending read no later than `due`; it may fire before (see [`TimedIo::timed_out`]).
    timer: Pin<Box<Sleep>>,
    /// Set while a write is blocked: when it passes, the write fails.
    write_stall: Option<Pin<Box<Sleep>>>,
    idle: Duration,
    request: Duration,
}

impl<T> TimedIo<T> {
    /// Wraps `inner`; the connection starts idle.
    pub fn new(inner: T, idle: Duration, request: Duration) -> Self {
        let now = Instant::now();
        TimedIo {
            inner,
            phase: Phase::Idle,
            due: now + idle,
            timer: Box::pin(tokio::time::sleep_until(now)),
            write_stall: None,
            idle,
            request,
        }
    }

    /// Tracks a write's progress: a blocked write gets `request` to make progress, then fails.
    fn write_progress<R>(&mut self, cx: &mut Context<'_>, result: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if result.is_ready() {
            self.write_stall = None;
            return result;
        }
        let request = self.request;
        let stall = self.write_stall.get_or_insert_with(|| Box::pin(tokio::time::sleep(request)));
        if stall.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "write timeout: the client reads nothing",
            )));
        }
        Poll::Pending
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        let after = if phase == Phase::Idle { self.idle } else { self.request };
        self.due = Instant::now() + after;
    }

    /// Whether the phase's time is up; otherwise the timer is armed to wake `cx` by then. The
    /// timer is always set at most [`Self::step`] after the moment it is set, and entering a
    /// phase sets `due` at least that far ahead (a zero timeout is caught by the first check),
    /// so the timer never fires after a deadline.
    fn timed_out(&mut self, cx: &mut Context<'_>) -> bool {
        if Instant::now() >= self.due {
            return true;
        }
        while self.timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            if now >= self.due {
                return true;
            }
            let next = self.due.min(now + self.step());
            self.timer.as_mut().reset(next);
        }
        false
    }

    /// The longest the timer is set ahead: the shorter phase that is not zero.
    fn step(&self) -> Duration {
        match (self.idle.is_zero(), self.request.is_zero()) {
            (false, false) => self.idle.min(self.request),
            (true, false) => self.request,
            (false, true) => self.idle,
            (true, true) => Duration::from_secs(1),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TimedIo<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before && self.phase == Phase::Idle {
                    self.enter(Phase::Reading);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                if self.timed_out(cx) {
                    let what = if self.phase == Phase::Idle { "idle" } else { "request read" };
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, format!("{what} timeout"))));
                }
                Poll::Pending
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TimedIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = result
            && n > 0
        {
            // A response is going out: the request was read; idle time starts (again).
            self.enter(Phase::Idle);
        }
        self.write_progress(cx, result)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.write_progress(cx, result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = result
            && n > 0
        {
            self.enter(Phase::Idle);
        }
        self.write_progress(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    /// Reads from `io` while it waits: `client` sends `bytes` after `wait`.
    async fn read_sent_after(
        mut io: TimedIo<DuplexStream>,
        client: &mut DuplexStream,
        wait: Duration,
        bytes: &[u8],
    ) -> (TimedIo<DuplexStream>, usize) {
        let read = tokio::spawn(async move {
            let n = io.read(&mut [0u8; 8]).await.unwrap();
            (io, n)
        });
        tokio::time::sleep(wait).await;
        client.write_all(bytes).await.unwrap();
        read.await.unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn idle_connections_live_long_and_slow_requests_do_not() {
        let (client, server) = tokio::io::duplex(64);
        let io = TimedIo::new(server, Duration::from_secs(120), Duration::from_secs(10));
        let mut client = client;
        let mut buf = [0u8; 8];

        // Idle for 100 s: still alive; then a byte arrives.
        let (mut io, n) = read_sent_after(io, &mut client, Duration::from_secs(100), b"G").await;
        assert_eq!(n, 1);

        // Mid-request, the rest never comes: the read fails after 10 s.
        let started = Instant::now();
        let err = io.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_secs(10) && started.elapsed() < Duration::from_secs(11));

        // Writing a response returns the connection to idle.
        io.write_all(b"HTTP/1.1 200 OK\r\n").await.unwrap();
        let started = Instant::now();
        let err = io.read(&mut buf).await.unwrap_err();
        assert!(err.to_string().contains("idle"));
        assert!(started.elapsed() >= Duration::from_secs(120));
    }

    /// An idle timeout shorter than the request timeout holds after a request whose read moved
    /// the timer (it fired mid-read): the connection is closed `idle` after the response.
    #[tokio::test(start_paused = true)]
    async fn a_short_idle_timeout_holds_after_a_long_request() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut io = TimedIo::new(server, Duration::from_secs(4), Duration::from_secs(10));
        let start = Instant::now();
        let mut buf = [0u8; 8];
        tokio::time::sleep(Duration::from_secs(1)).await;
        client.write_all(b"G").await.unwrap();
        assert_eq!(io.read(&mut buf).await.unwrap(), 1);
        // The rest of the request comes at 5 s (the timer fired at 4 s, mid-read).
        let (mut io, n) = read_sent_after(io, &mut client, Duration::from_secs(4), b"ET").await;
        assert_eq!(n, 2);
        io.write_all(b"HTTP/1.1 200 OK\r\n").await.unwrap();
        let err = io.read(&mut [0u8; 8]).await.unwrap_err();
        assert!(err.to_string().contains("idle"), "{err}");
        let closed = start.elapsed();
        assert!(closed >= Duration::from_secs(9) && closed < Duration::from_millis(9_500), "{closed:?}");
    }

    /// A zero request timeout fails a request that does not arrive in one read at once, and
    /// an idle connection still lives for its idle timeout.
    #[tokio::test(start_paused = true)]
    async fn a_zero_timeout_is_up_at_once() {
        let (mut client, server) = tokio::io::duplex(64);
        let io = TimedIo::new(server, Duration::from_secs(120), Duration::ZERO);
        // Idle (a pending read) for 60 s: alive; then a byte arrives.
        let (mut io, n) = read_sent_after(io, &mut client, Duration::from_secs(60), b"G").await;
        assert_eq!(n, 1);
        let start = Instant::now();
        let err = io.read(&mut [0u8; 8]).await.unwrap_err();
        assert!(err.to_string().contains("request read"), "{err}");
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_the_client_never_reads_fails_after_the_request_timeout() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut io = TimedIo::new(server, Duration::from_secs(120), Duration::from_secs(10));

        // A slow reader: the write waits, and goes on once the client reads within 10 s.
        io.write_all(&[b'x'; 64]).await.unwrap();
        let reader = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(9)).await;
            let mut buf = [0u8; 64];
            client.read_exact(&mut buf).await.unwrap();
            client
        });
        io.write_all(&[b'y'; 64]).await.unwrap();
        let _client = reader.await.unwrap();

        // Nobody reads: the write fails 10 s after it blocked.
        let started = Instant::now();
        let err = io.write_all(&[b'z'; 64]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(err.to_string().contains("write timeout"), "{err}");
        assert!(started.elapsed() >= Duration::from_secs(10) && started.elapsed() < Duration::from_secs(11));
    }
}
