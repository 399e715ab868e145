//! Logging of the process: the tracing subscriber [`init_tracing`] installs, and the three
//! parts issue 16 made cheap on the admission path — where lines go ([`sink`]: standard error in
//! batches), their timestamp ([`timer`]) and their text fields ([`fields`]), each written as
//! tracing-subscriber's defaults write them.

pub mod fields;
pub mod sink;
pub mod timer;

use crate::cli::LogFormat;

/// Installs the tracing subscriber: lines go to standard error in batches ([`sink`]), so the
/// process calls [`sink::flush`] before it exits.
pub fn init_tracing(format: LogFormat, filter: &str) {
    let filter =
        tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal: escape codes are noise in collected logs, and cost a tenth of
    // the per-review log line (issue 16).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(sink::stderr())
        .with_ansi(ansi)
        .with_timer(timer::CachedSystemTime);
    // A panic's message comes after the lines logged before it.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        sink::flush();
        previous(info);
    }));
    let _ = match format {
        LogFormat::Text => builder.fmt_fields(fields::TextFields).try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
