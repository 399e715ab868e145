//! The REST front end: a plain-HTTP/1.1 listener on loopback whose single handler routes
//! Kubernetes API paths (`/api/v1/...`, `/apis/<group>/<version>/...`, namespaced or not, with
//! subresources), discovery and health endpoints, applies injected faults, parses query options
//! and bodies, calls `api`, and answers JSON (or a Table, or a watch stream) with `Warning` headers
//! carrying admission warnings.

pub mod discovery;
pub mod table;
pub mod watch;

use crate::api::{self, DeleteOptions, ListOptions, Target};
use crate::cluster::{Cluster, Ctx, User};
use crate::errors::ApiError;
use crate::faults::Injection;
use crate::patch::{self, PatchKind};
use crate::selectors::{FieldSelector, Selector};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::{HeaderMap, Method};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Query parameters (last value wins).
#[derive(Debug, Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    fn parse(q: Option<&str>) -> Self {
        Query(form_urlencoded::parse(q.unwrap_or("").as_bytes()).into_owned().collect())
    }

    /// A parameter, or "".
    pub fn get(&self, key: &str) -> &str {
        self.0.get(key).map(String::as_str).unwrap_or("")
    }
}

#[derive(Clone)]
struct AppState {
    cluster: Arc<Cluster>,
    addr: SocketAddr,
}

/// Serves the API on `listener` until the cluster shuts down.
pub async fn serve(cluster: Arc<Cluster>, listener: TcpListener) {
    let addr = listener.local_addr().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)));
    let app = axum::Router::new().fallback(handle).with_state(AppState { cluster: cluster.clone(), addr });
    let mut shutdown = cluster.shutdown.clone();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let mut conn_shutdown = cluster.shutdown.clone();
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                result = conn => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "connection ended");
                    }
                }
                _ = conn_shutdown.changed() => {}
            }
        });
    }
}

fn json_response(code: u16, body: &Value, warnings: &[String]) -> Response {
    let mut builder = Response::builder().status(code).header("content-type", "application/json");
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        let value = format!("299 - \"{escaped}\"");
        if http::HeaderValue::from_str(&value).is_ok() {
            builder = builder.header("warning", value);
        }
    }
    builder.body(Body::from(serde_json::to_vec(body).unwrap_or_default())).unwrap_or_default()
}

fn error_response(e: &ApiError, warnings: &[String]) -> Response {
    json_response(e.code, &e.status, warnings)
}

/// A parsed API path.
enum Route {
    Version,
    Health,
    CoreVersions,
    Groups,
    Group(String),
    Resources(String, String),
    Resource { group: String, version: String, namespace: String, resource: String, name: String, sub: String },
    NotFound,
}

fn route(path: &str) -> Route {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Route::Version,
        ["healthz" | "readyz" | "livez", ..] => return Route::Health,
        ["api"] => return Route::CoreVersions,
        ["apis"] => return Route::Groups,
        ["apis", g] => return Route::Group(g.to_string()),
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Route::NotFound,
    };
    let r = |ns: &str, res: &str, name: &str, sub: &str| Route::Resource {
        group: group.into(),
        version: version.into(),
        namespace: ns.into(),
        resource: res.into(),
        name: name.into(),
        sub: sub.into(),
    };
    match rest {
        [] => Route::Resources(group.into(), version.into()),
        ["namespaces", ns, sub @ ("status" | "finalize")] if group.is_empty() => r("", "namespaces", ns, sub),
        ["namespaces", ns, res] => r(ns, res, "", ""),
        ["namespaces", ns, res, name] => r(ns, res, name, ""),
        ["namespaces", ns, res, name, sub] => r(ns, res, name, sub),
        [res] => r("", res, "", ""),
        [res, name] => r("", res, name, ""),
        [res, name, sub] => r("", res, name, sub),
        _ => Route::NotFound,
    }
}

fn user_of(headers: &HeaderMap) -> User {
    let token = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or("");
    if token.is_empty() || token == "kubernetes-admin" {
        User::admin()
    } else {
        User::named(token, &["system:authenticated"])
    }
}

async fn handle(State(state): State<AppState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let q = Query::parse(parts.uri.query());
    let reg = state.cluster.registry();
    let ok = |v: Value| json_response(200, &v, &[]);
    let not_found = || error_response(&ApiError::no_route(&path), &[]);
    match route(&path) {
        Route::Version => ok(discovery::version()),
        Route::Health => Response::builder().status(200).body(Body::from("ok")).unwrap_or_default(),
        Route::CoreVersions => ok(discovery::core_versions(state.addr)),
        Route::Groups => ok(discovery::group_list(&reg)),
        Route::Group(g) => discovery::group(&reg, &g).map(ok).unwrap_or_else(not_found),
        Route::Resources(g, v) => discovery::resource_list(&reg, &g, &v).map(ok).unwrap_or_else(not_found),
        Route::NotFound => not_found(),
        Route::Resource { group, version, namespace, resource, name, sub } => {
            let Some(def) = state.cluster.lookup(&group, &version, &resource) else {
                return not_found();
            };
            if (!def.namespaced && !namespace.is_empty())
                || !sub_allowed(&def, &sub)
                || (!sub.is_empty() && name.is_empty())
            {
                return not_found();
            }
            let bytes = match axum::body::to_bytes(body, 64 * 1024 * 1024).await {
                Ok(b) => b,
                Err(e) => return error_response(&ApiError::bad_request(format!("reading body: {e}")), &[]),
            };
            let write = !matches!(parts.method, Method::GET | Method::HEAD);
            let (latency, injection) = state.cluster.faults.decide(&resource, write);
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            match injection {
                Some(Injection::Conflict) => {
                    let e = ApiError::conflict(&def.group, &def.resource, if name.is_empty() { "" } else { &name });
                    return error_response(&e, &[]);
                }
                Some(Injection::ServerError(code)) => {
                    let e = ApiError::new(code, "InternalError", "Internal error occurred: injected fault");
                    return error_response(&e, &[]);
                }
                None => {}
            }
            let target = Target::new(def, &version, &namespace, &name).with_sub(&sub);
            let mut ctx = Ctx::new(user_of(&parts.headers));
            ctx.dry_run = q.get("dryRun") == "All";
            let accept =
                parts.headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            let content_type =
                parts.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            let result =
                resource_request(&state.cluster, &mut ctx, &parts.method, &target, &q, &bytes, &content_type, &accept)
                    .await;
            match result {
                Ok(Reply::Json(code, v)) => json_response(code, &v, &ctx.warnings),
                Ok(Reply::Stream(resp)) => resp,
                Err(e) => error_response(&e, &ctx.warnings),
            }
        }
    }
}

fn sub_allowed(def: &crate::resources::ResourceDef, sub: &str) -> bool {
    match sub {
        "" => true,
        "status" => def.status,
        "scale" => def.scale.is_some(),
        "finalize" => def.group.is_empty() && def.resource == "namespaces",
        other => def.extra_subresources().contains(&other),
    }
}

enum Reply {
    Json(u16, Value),
    Stream(Response),
}

fn parse_body(bytes: &[u8], content_type: &str) -> Result<Value, ApiError> {
    if content_type.contains("yaml") {
        serde_yaml_ng::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
    } else {
        serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("error decoding JSON: {e}")))
    }
}

fn list_options(q: &Query) -> Result<ListOptions, ApiError> {
    Ok(ListOptions {
        labels: Selector::parse(q.get("labelSelector")).map_err(ApiError::bad_request)?,
        fields: FieldSelector::parse(q.get("fieldSelector")).map_err(ApiError::bad_request)?,
        limit: q.get("limit").parse().unwrap_or(0),
        continue_token: q.get("continue").to_string(),
    })
}

fn delete_options(q: &Query, bytes: &[u8]) -> Result<DeleteOptions, ApiError> {
    let body: Value = if bytes.is_empty() { Value::Null } else { parse_body(bytes, "json")? };
    let mut opts = DeleteOptions::from_json(&body);
    if let Ok(g) = q.get("gracePeriodSeconds").parse() {
        opts.grace_period = Some(g);
    }
    if !q.get("propagationPolicy").is_empty() {
        opts.propagation = Some(q.get("propagationPolicy").to_string());
    }
    match q.get("orphanDependents") {
        "true" if opts.propagation.is_none() => opts.propagation = Some("Orphan".into()),
        "false" if opts.propagation.is_none() => opts.propagation = Some("Background".into()),
        _ => {}
    }
    Ok(opts)
}

#[allow(clippy::too_many_arguments)]
async fn resource_request(
    cluster: &Arc<Cluster>,
    ctx: &mut Ctx,
    method: &Method,
    t: &Target,
    q: &Query,
    bytes: &[u8],
    content_type: &str,
    accept: &str,
) -> Result<Reply, ApiError> {
    let collection = t.name.is_empty();
    let def = t.def.clone();
    let table = |v: Value| if table::wanted(accept) { table::to_table(&v, &def) } else { v };
    let main = Target { subresource: String::new(), ..t.clone() };
    let value = match (method.clone(), collection, t.subresource.as_str()) {
        (Method::GET, true, _) if q.get("watch") == "true" || q.get("watch") == "1" => {
            return Ok(Reply::Stream(watch::watch(cluster.clone(), t.clone(), q, table::wanted(accept))?));
        }
        (Method::GET, true, _) => table(api::list(cluster, t, &list_options(q)?)?),
        (Method::GET, false, "scale") => api::get_scale(cluster, t)?,
        (Method::GET, false, _) => table(api::get(cluster, &main)?),
        (Method::POST, true, _) => {
            let created = api::create(cluster, ctx, t, parse_body(bytes, content_type)?).await?;
            return Ok(Reply::Json(201, created));
        }
        (Method::POST, false, "eviction") => {
            return Ok(Reply::Json(201, api::evict(cluster, ctx, t, parse_body(bytes, content_type)?).await?));
        }
        (Method::POST, false, "binding") => {
            return Ok(Reply::Json(201, api::bind(cluster, ctx, t, parse_body(bytes, content_type)?).await?));
        }
        (Method::PUT, false, "scale") => {
            let body = parse_body(bytes, content_type)?;
            api::write_scale(cluster, ctx, t, |_| Ok(body.clone())).await?
        }
        (Method::PUT, false, "" | "status" | "finalize") => {
            let t = if t.subresource == "finalize" { main.clone() } else { t.clone() };
            api::update(cluster, ctx, &t, parse_body(bytes, content_type)?).await?
        }
        (Method::PATCH, false, sub) => {
            let kind = PatchKind::from_content_type(content_type)?;
            let body = patch::parse_body(kind, bytes)?;
            if sub == "scale" {
                api::write_scale(cluster, ctx, t, |cur| patch::apply(kind, cur, &body, false)).await?
            } else {
                let created_before = cluster.store.get(&t.key()).is_none();
                let out = api::patch(cluster, ctx, t, kind, body).await?;
                if created_before && kind == PatchKind::Apply && !ctx.dry_run {
                    return Ok(Reply::Json(201, out));
                }
                out
            }
        }
        (Method::DELETE, false, "") => api::delete(cluster, ctx, t, &delete_options(q, bytes)?, true).await?,
        (Method::DELETE, true, "") => {
            api::delete_collection(cluster, ctx, t, &list_options(q)?, &delete_options(q, bytes)?).await?
        }
        (m, _, _) => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({m})"
            )));
        }
    };
    Ok(Reply::Json(200, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert!(
            matches!(route("/api/v1/namespaces/default/pods"), Route::Resource { ref namespace, ref resource, ref name, .. } if namespace == "default" && resource == "pods" && name.is_empty())
        );
        assert!(
            matches!(route("/api/v1/namespaces/default"), Route::Resource { ref namespace, ref resource, ref name, .. } if namespace.is_empty() && resource == "namespaces" && name == "default")
        );
        assert!(
            matches!(route("/api/v1/namespaces/kube-system/status"), Route::Resource { ref resource, ref name, ref sub, .. } if resource == "namespaces" && name == "kube-system" && sub == "status")
        );
        assert!(
            matches!(route("/apis/apps.kruise.io/v1alpha1/namespaces/d/clonesets/c/scale"), Route::Resource { ref group, ref sub, .. } if group == "apps.kruise.io" && sub == "scale")
        );
        assert!(matches!(route("/apis/apps/v1"), Route::Resources(ref g, ref v) if g == "apps" && v == "v1"));
        assert!(
            matches!(route("/api/v1/nodes/n1/status"), Route::Resource { ref name, ref sub, .. } if name == "n1" && sub == "status")
        );
        assert!(matches!(route("/apis"), Route::Groups));
        assert!(matches!(route("/openapi/v2"), Route::NotFound));
    }
}
