//! The timestamp of a log line, written as tracing-subscriber's `SystemTime` timer writes it
//! (`2026-12-02T03:27:09.123456Z`, UTC, microseconds) without formatting the calendar date for
//! every line (issue 16: about a quarter of the per-review log line): the text up to the second
//! is kept per thread and only the microseconds are written each time. Instants before 1970 or
//! from the year 10000 on (written differently) are handed to tracing-subscriber's timer.

use std::cell::RefCell;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime as Reference};

/// `tracing_subscriber::fmt::time::SystemTime`, faster (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct CachedSystemTime;

/// 10000-01-01T00:00:00Z: from here on tracing-subscriber writes a `+` and more digits.
const YEAR_10000: u64 = 253_402_300_800;

impl FormatTime for CachedSystemTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) if d.as_secs() < YEAR_10000 => write_time(w, d.as_secs(), d.subsec_micros()),
            _ => Reference.format_time(w),
        }
    }
}

thread_local! {
    /// The second last written and its text up to the `.`.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// `secs` after the epoch and `micros` into that second, as tracing-subscriber writes them.
fn write_time(w: &mut impl fmt::Write, secs: u64, micros: u32) -> fmt::Result {
    SECOND.with_borrow_mut(|(second, text)| {
        if *second != secs {
            text.clear();
            write_second(text, secs)?;
            *second = secs;
        }
        w.write_str(text)
    })?;
    let mut digits = *b"000000Z";
    let mut n = micros.min(999_999);
    for d in digits[..6].iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    // Only ASCII digits and `Z` were written.
    w.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)
}

/// `YYYY-MM-DDTHH:MM:SS.` of `secs` after the epoch (UTC).
fn write_second(out: &mut String, secs: u64) -> fmt::Result {
    use fmt::Write as _;
    let t =
        i64::try_from(secs).ok().and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok()).ok_or(fmt::Error)?;
    let (month, day) = (u8::from(t.month()), t.day());
    write!(out, "{:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.", t.year(), t.hour(), t.minute(), t.second())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(secs: u64, micros: u32) -> String {
        let mut s = String::new();
        write_time(&mut s, secs, micros).unwrap();
        s
    }

    /// Known instants (leap days, centuries, the last second before year 10000), back and
    /// forth so that the per-thread text is replaced.
    #[test]
    fn writes_the_calendar_time() {
        let cases = [
            (0, "1970-01-01T00:00:00"),
            (59, "1970-01-01T00:00:59"),
            (86_399, "1970-01-01T23:59:59"),
            (86_400, "1970-01-02T00:00:00"),
            (951_782_400, "2000-02-29T00:00:00"),
            (951_868_800, "2000-03-01T00:00:00"),
            (4_107_542_400, "2100-03-01T00:00:00"),
            (1_764_646_029, "2025-12-02T03:27:09"),
            (YEAR_10000 - 1, "9999-12-31T23:59:59"),
        ];
        for (secs, second) in cases.iter().chain(cases.iter().rev()) {
            assert_eq!(written(*secs, 42), format!("{second}.000042Z"), "{secs}");
        }
        assert_eq!(written(1_764_646_029, 123_456), "2025-12-02T03:27:09.123456Z");
        assert_eq!(written(1_764_646_029, 999_999), "2025-12-02T03:27:09.999999Z");
        assert_eq!(written(1_764_646_029, 0), "2025-12-02T03:27:09.000000Z");
    }

    /// The same text as tracing-subscriber's timer, read at the same moment (retried when a
    /// second boundary falls between the two readings).
    #[test]
    fn is_tracing_subscribers_system_time() {
        let read = |timer: &dyn FormatTime| {
            let mut s = String::new();
            timer.format_time(&mut Writer::new(&mut s)).unwrap();
            s
        };
        for _ in 0..100 {
            let (ours, reference) = (read(&CachedSystemTime), read(&Reference));
            assert_eq!(ours.len(), reference.len(), "{ours} {reference}");
            if ours[..20] == reference[..20] {
                assert!(ours.ends_with('Z') && ours[20..26].bytes().all(|b| b.is_ascii_digit()), "{ours}");
                return;
            }
        }
        panic!("the two timers never agreed on the second");
    }
}
