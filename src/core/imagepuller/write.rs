//! When the daemon writes its NodeImage's status: only when it differs from what the object
//! holds (compared as JSON, as kruise's `util.IsJSONObjectEqual`: times at the second the API
//! keeps), and at most once per `min_interval`, so a burst of worker reports becomes one write
//! with the newest status. Kruise's `statusUpdater` compares with the last status it wrote and
//! rate-limits at 0.5 qps with a burst of 5 (`pkg/daemon/imagepuller/utils.go`); comparing with
//! the object instead also rewrites a status someone else overwrote.

use std::time::Duration;

use crate::apis::nodeimage::NodeImageStatus;

/// What to do with a freshly assembled status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteDecision {
    /// The object already says this.
    Skip,
    /// Write now.
    Now,
    /// Write the newest status after this wait (the last write was too recent).
    After(Duration),
}

/// Decides for `new` given the object's `observed` status and the time since the last write.
pub fn decide(
    new: &NodeImageStatus,
    observed: Option<&NodeImageStatus>,
    since_last_write: Option<Duration>,
    min_interval: Duration,
) -> WriteDecision {
    let same = observed.is_some_and(|o| serde_json::to_value(o).ok() == serde_json::to_value(new).ok());
    if same {
        return WriteDecision::Skip;
    }
    match since_last_write {
        Some(since) if since < min_interval => WriteDecision::After(min_interval - since),
        _ => WriteDecision::Now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::nodeimage::{ImageStatus, ImageTagStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn status(progress: i32) -> NodeImageStatus {
        NodeImageStatus {
            desired: 1,
            pulling: 1,
            image_statuses: [(
                "nginx".to_string(),
                ImageStatus {
                    tags: vec![ImageTagStatus {
                        tag: "1".into(),
                        phase: "Pulling".into(),
                        progress,
                        ..Default::default()
                    }],
                },
            )]
            .into(),
            ..Default::default()
        }
    }

    #[test]
    fn writes_only_changes_at_most_once_per_interval() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let rows = [
            ("first write", status(0), None, None, WriteDecision::Now),
            ("the object says it already", status(0), Some(status(0)), Some(ms(10)), WriteDecision::Skip),
            ("changed, last write long ago", status(50), Some(status(0)), Some(s(5)), WriteDecision::Now),
            (
                "changed, last write 300ms ago",
                status(50),
                Some(status(0)),
                Some(ms(300)),
                WriteDecision::After(ms(700)),
            ),
            ("no status yet on the object", NodeImageStatus::default(), None, None, WriteDecision::Now),
        ];
        for (name, new, observed, since, want) in rows {
            assert_eq!(decide(&new, observed.as_ref(), since, s(1)), want, "{name}");
        }
    }

    #[test]
    fn times_compare_at_the_second_the_api_keeps() {
        let at = |nanos: i128| Time(k8s_openapi::jiff::Timestamp::from_nanosecond(nanos).unwrap());
        let mut mine = status(0);
        mine.image_statuses.get_mut("nginx").unwrap().tags[0].start_time = Some(at(1_700_000_000_000_000_000));
        let mut theirs = mine.clone();
        theirs.image_statuses.get_mut("nginx").unwrap().tags[0].start_time = Some(at(1_700_000_000_000_000_000));
        assert_eq!(decide(&mine, Some(&theirs), None, Duration::from_secs(1)), WriteDecision::Skip);
    }
}
