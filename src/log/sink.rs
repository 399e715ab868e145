//! Where log lines go: standard error, written in batches (issue 16). Every admission review
//! logs a line, and each line used to be a `write(2)` of its own: a system call per review and,
//! in a pod, a pipe write that wakes the container runtime's log reader every time. Lines are
//! appended to a buffer instead, and written out
//! - by a writer thread, [`LINGER`] after the first line of a batch arrived;
//! - at once, with everything before them, for lines at `WARN` and `ERROR`;
//! - at once by the line that takes the buffer past [`LIMIT`] (bounded memory: a blocked
//!   standard error then blocks loggers, as direct writes did);
//! - by [`flush`], which the process root calls before it exits, and a panic before its message.
//!
//! Lines keep their order: batches are taken from the buffer and written under one lock.

use std::io::{self, Write};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;

/// How long the first line of a batch waits for others.
pub const LINGER: Duration = Duration::from_millis(20);

/// Buffered bytes past which the line that got there writes the batch itself.
pub const LIMIT: usize = 64 * 1024;

/// Lines waiting to be written, and where they go.
pub struct Sink<W: Write + Send + 'static = io::Stderr> {
    pending: Mutex<Vec<u8>>,
    /// Signalled when a line arrives in an empty buffer.
    arrived: Condvar,
    /// Held while a batch is taken and written, so batches go out in order.
    out: Mutex<W>,
    writer_thread: OnceLock<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A logger that panicked mid-line leaves bytes, not broken invariants.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<W: Write + Send + 'static> Sink<W> {
    /// A sink writing to `out`; its writer thread starts with the first line.
    pub fn new(out: W) -> Self {
        Sink {
            pending: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            out: Mutex::new(out),
            writer_thread: OnceLock::new(),
        }
    }

    /// Appends a line; `urgent` lines are written at once, with what came before.
    fn append(&'static self, line: &[u8], urgent: bool) {
        let mut pending = lock(&self.pending);
        let was_empty = pending.is_empty();
        pending.extend_from_slice(line);
        let full = pending.len() >= LIMIT;
        drop(pending);
        if urgent || full {
            self.flush();
        } else if was_empty {
            self.start_writer();
            self.arrived.notify_one();
        }
    }

    /// Writes every line appended so far.
    pub fn flush(&self) {
        let mut out = lock(&self.out);
        let batch = std::mem::take(&mut *lock(&self.pending));
        if !batch.is_empty() {
            // As tracing's own writer: a failing standard error loses the lines, nothing else.
            let _ = out.write_all(&batch).and_then(|()| out.flush());
        }
    }

    fn start_writer(&'static self) {
        self.writer_thread.get_or_init(|| {
            let spawned = std::thread::Builder::new().name("log-writer".into()).spawn(move || self.write_batches());
            if spawned.is_err() {
                // No thread: every line is written by whoever logs the next one past the limit,
                // urgent lines, and [`flush`]. Better than losing them.
                eprintln!("warning: cannot start the log writer thread; log lines are written late");
            }
        });
    }

    fn write_batches(&'static self) -> ! {
        loop {
            let mut pending = lock(&self.pending);
            while pending.is_empty() {
                pending = self.arrived.wait(pending).unwrap_or_else(PoisonError::into_inner);
            }
            drop(pending);
            std::thread::sleep(LINGER);
            self.flush();
        }
    }
}

/// The writer of one log line (tracing formats a line, then writes it whole).
pub struct Line<W: Write + Send + 'static> {
    sink: &'static Sink<W>,
    urgent: bool,
}

impl<W: Write + Send + 'static> Write for Line<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sink.append(buf, self.urgent);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a, W: Write + Send + 'static> MakeWriter<'a> for &'static Sink<W> {
    type Writer = Line<W>;

    fn make_writer(&'a self) -> Line<W> {
        Line { sink: *self, urgent: false }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Line<W> {
        // More verbose levels compare greater: WARN and ERROR are `<= WARN`.
        Line { sink: *self, urgent: *meta.level() <= Level::WARN }
    }
}

static STDERR: OnceLock<Sink> = OnceLock::new();

/// The process's standard error sink.
pub fn stderr() -> &'static Sink {
    STDERR.get_or_init(|| Sink::new(io::stderr()))
}

/// Writes the log lines not written yet (before the process exits).
pub fn flush() {
    if let Some(sink) = STDERR.get() {
        sink.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A writer whose bytes and write calls the test can read.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut r = lock(&self.0);
            r.0.extend_from_slice(buf);
            r.1 += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn sink() -> (&'static Sink<Recorder>, Recorder) {
        let recorder = Recorder::default();
        (Box::leak(Box::new(Sink::new(recorder.clone()))), recorder)
    }

    fn line(sink: &'static Sink<Recorder>, level: Level, text: &str) {
        let mut w = Line { sink, urgent: level <= Level::WARN };
        w.write_all(text.as_bytes()).unwrap();
    }

    fn written(r: &Recorder) -> (String, usize) {
        let r = lock(&r.0);
        (String::from_utf8(r.0.clone()).unwrap(), r.1)
    }

    #[test]
    fn lines_are_written_together_after_the_linger() {
        let (sink, recorder) = sink();
        for i in 0..100 {
            line(sink, Level::INFO, &format!("line {i}\n"));
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while written(&recorder).0.lines().count() < 100 {
            assert!(std::time::Instant::now() < deadline, "the writer thread did not write");
            std::thread::sleep(Duration::from_millis(5));
        }
        let (text, writes) = written(&recorder);
        let want: String = (0..100).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, want);
        assert!(writes < 100, "{writes} writes for 100 lines");
    }

    #[test]
    fn warnings_go_out_at_once_with_what_came_before() {
        let (sink, recorder) = sink();
        line(sink, Level::INFO, "a\n");
        line(sink, Level::DEBUG, "b\n");
        line(sink, Level::WARN, "c\n");
        assert_eq!(written(&recorder).0, "a\nb\nc\n");
        line(sink, Level::ERROR, "d\n");
        assert_eq!(written(&recorder).0, "a\nb\nc\nd\n");
    }

    #[test]
    fn flush_writes_everything_and_the_limit_bounds_the_buffer() {
        let (sink, recorder) = sink();
        line(sink, Level::INFO, "x\n");
        sink.flush();
        assert_eq!(written(&recorder).0, "x\n");
        sink.flush();
        assert_eq!(written(&recorder).1, 1, "nothing pending: nothing written");
        let long = "y".repeat(LIMIT);
        line(sink, Level::INFO, &long);
        assert_eq!(written(&recorder).0.len(), 2 + LIMIT, "the line past the limit wrote the batch");
    }
}
