//! Watch streams: newline-delimited JSON events over a chunked HTTP/1.1 response, as
//! kube-apiserver sends them. A watch starts from a snapshot (synthetic ADDED events; with
//! `sendInitialEvents=true` followed by the `k8s.io/initial-events-end` bookmark) or resumes after a
//! resourceVersion (an `ERROR` event with a 410 `Expired` status when it is older than the retained
//! history). Label/field selectors turn MODIFIED into ADDED/DELETED as objects enter or leave the
//! selection; BOOKMARK events come every bookmark interval when asked for. Streams end on
//! `timeoutSeconds`, on the client leaving, on server shutdown and on injected watch drops.

use super::Query;
use crate::api::{Target, present, selected};
use crate::cluster::Cluster;
use crate::errors::ApiError;
use crate::selectors::{FieldSelector, Selector};
use crate::store::{Event, EventType, WatchFrom};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

struct Filter {
    target: Target,
    labels: Selector,
    fields: FieldSelector,
    /// Objects are sent as one-row Tables (`kubectl get -w`).
    table: bool,
}

impl Filter {
    /// The event this watcher sees for a store event, if any.
    fn project(&self, ev: &Event) -> Option<(EventType, Value)> {
        let def = &self.target.def;
        if ev.key.group != def.group || ev.key.resource != def.resource {
            return None;
        }
        if !self.target.namespace.is_empty() && ev.key.namespace != self.target.namespace {
            return None;
        }
        let passes = |o: &Value| selected(o, &self.labels, &self.fields);
        let now = passes(&ev.object);
        let before = ev.old.as_ref().is_some_and(|o| passes(o));
        let out = match ev.type_ {
            EventType::Added => now.then_some((EventType::Added, (*ev.object).clone())),
            EventType::Deleted => now.then_some((EventType::Deleted, (*ev.object).clone())),
            EventType::Modified => match (before, now) {
                (true, true) => Some((EventType::Modified, (*ev.object).clone())),
                (false, true) => Some((EventType::Added, (*ev.object).clone())),
                (true, false) => {
                    // Leaving the selection: the previous content, stamped with this change's version.
                    let mut old = ev.old.as_deref().cloned().unwrap_or(Value::Null);
                    crate::meta::set_meta(&mut old, "resourceVersion", json!(ev.rv.to_string()));
                    Some((EventType::Deleted, old))
                }
                (false, false) => None,
            },
        };
        out.map(|(t, o)| {
            let o = present(&o, def, &self.target.version);
            (t, if self.table { super::table::to_table(&o, def) } else { o })
        })
    }

    fn line(&self, type_: &str, object: &Value) -> Bytes {
        let mut buf = serde_json::to_vec(&json!({"type": type_, "object": object})).unwrap_or_default();
        buf.push(b'\n');
        Bytes::from(buf)
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        self.line(
            "BOOKMARK",
            &json!({"kind": self.target.def.kind, "apiVersion": self.target.gv(), "metadata": metadata}),
        )
    }
}

fn stream_response(rx: mpsc::Receiver<Bytes>) -> Response {
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx)) });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .header("cache-control", "no-cache, private")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

/// Starts a watch and returns its streaming response.
pub fn watch(cluster: Arc<Cluster>, target: Target, q: &Query, table: bool) -> Result<Response, ApiError> {
    let labels = Selector::parse(q.get("labelSelector")).map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(q.get("fieldSelector")).map_err(ApiError::bad_request)?;
    let send_initial = q.get("sendInitialEvents") == "true";
    let rv_param = q.get("resourceVersion");
    let from = if send_initial || rv_param.is_empty() || rv_param == "0" {
        WatchFrom::Snapshot
    } else {
        WatchFrom::After(
            rv_param.parse().map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv_param:?}")))?,
        )
    };
    let bookmarks = q.get("allowWatchBookmarks") == "true";
    let timeout = q.get("timeoutSeconds").parse::<u64>().ok().map(Duration::from_secs);
    let filter = Filter { target, labels, fields, table };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let start = cluster.store.watch(&filter.target.def.group, &filter.target.def.resource, from);
    let start = match start {
        Ok(s) => s,
        Err(oldest) => {
            let status = ApiError::gone(format!("too old resource version: {rv_param} ({oldest})"));
            let line = filter.line("ERROR", &status.status);
            // The channel has room for one line.
            let _ = tx.try_send(line);
            return Ok(stream_response(rx));
        }
    };
    let lifetime = cluster.faults.config().watch_lifetime;
    let deadline = [timeout, lifetime].into_iter().flatten().min().map(|d| Instant::now() + d);
    let deadline_is_fault = lifetime.is_some_and(|l| timeout.is_none_or(|t| l < t));
    // Subscribe to drops before the stream counts as open: a drop right after a test sees the
    // watch open must end it.
    let drops = cluster.faults.drop_receiver();
    cluster.watch_opened(1);
    let counted = Counted(cluster.clone());
    let opts = StreamOpts { bookmarks, send_initial, deadline, deadline_is_fault };
    tokio::spawn(run(counted, filter, start, tx, drops, opts));
    Ok(stream_response(rx))
}

/// Keeps the open-watch count; the stream is closed when this is dropped.
struct Counted(Arc<Cluster>);

struct StreamOpts {
    bookmarks: bool,
    send_initial: bool,
    deadline: Option<Instant>,
    deadline_is_fault: bool,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.watch_opened(-1);
    }
}

async fn run(
    counted: Counted,
    filter: Filter,
    start: crate::store::WatchStart,
    tx: mpsc::Sender<Bytes>,
    mut drops: tokio::sync::watch::Receiver<u64>,
    opts: StreamOpts,
) {
    let cluster = counted.0.clone();
    let StreamOpts { bookmarks, send_initial, deadline, deadline_is_fault } = opts;
    let mut last_rv = start.rv;
    for ev in &start.initial {
        if let Some((t, obj)) = filter.project(ev)
            && tx.send(filter.line(t.as_str(), &obj)).await.is_err()
        {
            return;
        }
        last_rv = last_rv.max(ev.rv);
    }
    if send_initial && tx.send(filter.bookmark(start.rv, true)).await.is_err() {
        return;
    }
    let mut rx = start.rx;
    let mut shutdown = cluster.shutdown.clone();
    let interval = cluster.config.bookmark_interval;
    let mut next_bookmark = Instant::now() + interval;
    let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    loop {
        let bookmark_at = if bookmarks { next_bookmark } else { far };
        tokio::select! {
            // Endings first, so an injected drop takes effect before further events go out.
            biased;
            _ = shutdown.changed() => return,
            _ = tx.closed() => return,
            _ = drops.changed() => {
                cluster.faults.count_dropped_watch();
                return;
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or(far)) => {
                if deadline_is_fault {
                    cluster.faults.count_dropped_watch();
                }
                return;
            }
            ev = rx.recv() => match ev {
                Ok(ev) => {
                    if ev.rv <= last_rv {
                        continue;
                    }
                    last_rv = ev.rv;
                    let Some((t, obj)) = filter.project(&ev) else { continue };
                    if tx.send(filter.line(t.as_str(), &obj)).await.is_err() {
                        return;
                    }
                }
                // A slow watcher: end the stream; the client resumes from its last version.
                Err(broadcast::error::RecvError::Lagged(_)) | Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = tokio::time::sleep_until(bookmark_at) => {
                next_bookmark = Instant::now() + interval;
                if tx.send(filter.bookmark(last_rv, false)).await.is_err() {
                    return;
                }
            }
        }
    }
}
