//! `caBundle` (spec §8.4 steps 4–5, improved per ADMISSION.md "do not fight other writers"):
//! what every webhook of the two configurations and every conversion webhook of a kruise CRD
//! trusts today, and the write that makes them trust the Secret's bundle. The write is a
//! server-side apply under its own field manager holding nothing but
//! `webhooks[name=X].clientConfig.caBundle` (`webhooks` is a map keyed by `name` in the
//! apiserver's schema) or `spec.conversion.webhook.clientConfig.caBundle`, so selectors, rules
//! and every field other tools set stay theirs. kruise's `template` annotation mechanism, which
//! rebuilds the whole `webhooks` list and fights cloud providers (kruise#2220), is not kept.

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::issue::fingerprints;
use super::{FIELD_MANAGER, Settings};

/// A clientConfig holder we keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A webhook configuration: each webhook's name and the fingerprints its `caBundle` holds.
    Webhooks {
        /// `MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// Per webhook.
        hooks: Vec<(String, Vec<String>)>,
    },
    /// A CRD's conversion webhook.
    Conversion {
        /// The CRD.
        name: String,
        /// What its `caBundle` holds.
        trusted: Vec<String>,
    },
}

impl Target {
    /// One fingerprint list per clientConfig.
    pub fn trusted(&self) -> Vec<Vec<String>> {
        match self {
            Target::Webhooks { hooks, .. } => hooks.iter().map(|(_, t)| t.clone()).collect(),
            Target::Conversion { trusted, .. } => vec![trusted.clone()],
        }
    }

    /// The server-side apply patch setting every clientConfig's `caBundle` to `bundle_pem`.
    pub fn apply_patch(&self, bundle_pem: &str) -> Value {
        let bundle = base64::engine::general_purpose::STANDARD.encode(bundle_pem);
        match self {
            Target::Webhooks { kind, name, hooks } => json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": name},
                "webhooks": hooks.iter().map(|(hook, _)| json!({
                    "name": hook,
                    "clientConfig": {"caBundle": bundle}
                })).collect::<Vec<_>>()
            }),
            Target::Conversion { name, .. } => json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": name},
                "spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": bundle}}}}
            }),
        }
    }
}

fn trusted(bundle: Option<&k8s_openapi::ByteString>) -> Vec<String> {
    bundle.map(|b| fingerprints(&b.0)).unwrap_or_default()
}

/// The two webhook configurations (absent ones are left out: nothing to keep there).
pub async fn observe_configurations(client: &kube::Client, settings: &Settings) -> Result<Vec<Target>, kube::Error> {
    let mut out = Vec::new();
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    if let Some(c) = mutating.get_opt(&settings.mutating).await? {
        let hooks =
            c.webhooks.unwrap_or_default().into_iter().map(|w| (w.name, trusted(w.client_config.ca_bundle.as_ref())));
        out.push(Target::Webhooks {
            kind: "MutatingWebhookConfiguration",
            name: settings.mutating.clone(),
            hooks: hooks.collect(),
        });
    }
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    if let Some(c) = validating.get_opt(&settings.validating).await? {
        let hooks =
            c.webhooks.unwrap_or_default().into_iter().map(|w| (w.name, trusted(w.client_config.ca_bundle.as_ref())));
        out.push(Target::Webhooks {
            kind: "ValidatingWebhookConfiguration",
            name: settings.validating.clone(),
            hooks: hooks.collect(),
        });
    }
    Ok(out)
}

/// The CRD of `crd`, when it is of one of `groups` and converts through a webhook.
pub fn conversion_target(crd: &CustomResourceDefinition, groups: &[String]) -> Option<Target> {
    if !groups.contains(&crd.spec.group) {
        return None;
    }
    let conversion = crd.spec.conversion.as_ref()?;
    if conversion.strategy != "Webhook" {
        return None;
    }
    let bundle = conversion.webhook.as_ref().and_then(|w| w.client_config.as_ref()).and_then(|c| c.ca_bundle.as_ref());
    Some(Target::Conversion { name: crd.metadata.name.clone().unwrap_or_default(), trusted: trusted(bundle) })
}

/// Every kruise CRD converting through a webhook (none when `crd_groups` is empty).
pub async fn observe_crds(client: &kube::Client, settings: &Settings) -> Result<Vec<Target>, kube::Error> {
    if settings.crd_groups.is_empty() {
        return Ok(Vec::new());
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let list = api.list(&ListParams::default()).await?;
    Ok(list.items.iter().filter_map(|crd| conversion_target(crd, &settings.crd_groups)).collect())
}

/// Makes every clientConfig of `target` trust exactly `bundle_pem`; `Ok(false)` when it already did.
pub async fn publish(client: &kube::Client, target: &Target, bundle_pem: &str) -> Result<bool, kube::Error> {
    let want = fingerprints(bundle_pem.as_bytes());
    if target.trusted().iter().all(|t| *t == want) {
        return Ok(false);
    }
    let patch = Patch::Apply(target.apply_patch(bundle_pem));
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match target {
        Target::Webhooks { kind: "MutatingWebhookConfiguration", name, .. } => {
            Api::<MutatingWebhookConfiguration>::all(client.clone()).patch(name, &params, &patch).await?;
        }
        Target::Webhooks { name, .. } => {
            Api::<ValidatingWebhookConfiguration>::all(client.clone()).patch(name, &params, &patch).await?;
        }
        Target::Conversion { name, .. } => {
            Api::<CustomResourceDefinition>::all(client.clone()).patch(name, &params, &patch).await?;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_hold_nothing_but_ca_bundles() {
        let t = Target::Webhooks {
            kind: "MutatingWebhookConfiguration",
            name: "kruise-mutating-webhook-configuration".into(),
            hooks: vec![("mpod.kb.io".into(), vec![]), ("mcloneset.kb.io".into(), vec!["a".into()])],
        };
        assert_eq!(t.trusted(), vec![vec![], vec!["a".to_string()]]);
        assert_eq!(
            t.apply_patch("PEM"),
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "kruise-mutating-webhook-configuration"},
                "webhooks": [
                    {"name": "mpod.kb.io", "clientConfig": {"caBundle": "UEVN"}},
                    {"name": "mcloneset.kb.io", "clientConfig": {"caBundle": "UEVN"}}
                ]
            })
        );
        let c = Target::Conversion { name: "clonesets.apps.kruise.io".into(), trusted: vec![] };
        assert_eq!(
            c.apply_patch("PEM")["spec"],
            json!({"conversion": {"webhook": {"clientConfig": {"caBundle": "UEVN"}}}})
        );
    }

    #[test]
    fn only_kruise_crds_converting_through_webhooks() {
        let crd = |group: &str, strategy: &str| -> CustomResourceDefinition {
            serde_json::from_value(json!({
                "metadata": {"name": format!("things.{group}")},
                "spec": {
                    "group": group, "scope": "Namespaced",
                    "names": {"plural": "things", "kind": "Thing"},
                    "versions": [],
                    "conversion": {"strategy": strategy}
                }
            }))
            .unwrap()
        };
        let groups = vec!["apps.kruise.io".to_string()];
        assert_eq!(
            conversion_target(&crd("apps.kruise.io", "Webhook"), &groups),
            Some(Target::Conversion { name: "things.apps.kruise.io".into(), trusted: vec![] })
        );
        assert_eq!(conversion_target(&crd("apps.kruise.io", "None"), &groups), None);
        assert_eq!(conversion_target(&crd("example.com", "Webhook"), &groups), None);
    }
}
