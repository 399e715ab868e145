//! How a watch error is logged (issue 26 item 10: a normal start logs no warning). kube-runtime's
//! watcher hands every error to its consumer and restarts by itself; most are worth a warning,
//! but one is routine: 410 Gone (reason `Expired`, "too old resource version"), the apiserver
//! saying the watch's resourceVersion left its watch cache, which the watcher answers with a new
//! list (client-go's reflector does the same and logs it at info level 4 only). It happens on
//! every start of the leader, whose caBundle patch of the kruise CRDs restarts their watch
//! cache, and after any long-idle watch: logged at debug. Every other error stays a warning.

use kube::runtime::watcher;

/// Whether the watcher restarts for a known, harmless reason (410 Gone: it lists again).
pub fn harmless(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchError(status) => status.code == 410,
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::InitialListFailed(kube::Error::Api(status)) => status.code == 410,
        _ => false,
    }
}

/// Logs a watch error of `watch` (what is watched, for the log line): debug when
/// [`harmless`], warning otherwise.
pub fn log(watch: &str, error: &watcher::Error) {
    if harmless(error) {
        tracing::debug!(watch, error = %error, "watch restarted: listing again");
    } else {
        tracing::warn!(watch, error = %error, "watch failed; retrying");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn status(code: u16, reason: &str) -> Box<Status> {
        let mut s = Status::failure("too old resource version: 1 (2)", reason);
        s.code = code;
        Box::new(s)
    }

    #[test]
    fn gone_is_harmless_anything_else_is_not() {
        let rows: Vec<(watcher::Error, bool)> = vec![
            (watcher::Error::WatchError(status(410, "Expired")), true),
            (watcher::Error::WatchError(status(410, "Gone")), true),
            (watcher::Error::WatchStartFailed(kube::Error::Api(status(410, "Expired"))), true),
            (watcher::Error::InitialListFailed(kube::Error::Api(status(410, "Expired"))), true),
            (watcher::Error::WatchError(status(403, "Forbidden")), false),
            (watcher::Error::WatchError(status(500, "InternalError")), false),
            (watcher::Error::WatchStartFailed(kube::Error::Api(status(404, "NotFound"))), false),
            (watcher::Error::InitialListFailed(kube::Error::Api(status(403, "Forbidden"))), false),
            (watcher::Error::WatchFailed(kube::Error::LinesCodecMaxLineLengthExceeded), false),
            (watcher::Error::NoResourceVersion, false),
        ];
        for (error, want) in rows {
            assert_eq!(harmless(&error), want, "{error}");
        }
    }
}
