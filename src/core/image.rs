//! INTERIM (replaced by the port of Kubernetes' image reference parsing).

/// Interim: `Always` for `:latest` or untagged images, else `IfNotPresent`.
pub fn default_pull_policy(image: &str) -> &'static str {
    let last = image.rsplit('/').next().unwrap_or(image);
    if last.contains('@') {
        return "IfNotPresent";
    }
    match last.split_once(':') {
        None => "Always",
        Some((_, "latest")) => "Always",
        Some(_) => "IfNotPresent",
    }
}
