//! PodProbeMarker and NodePodProbe decisions (issue 30 item 4, kruise
//! `pkg/controller/podprobemarker`, `pkg/controller/nodepodprobe` and `pkg/daemon/podprobe`):
//! [`marker`] turns markers into per-node NodePodProbe specs, [`node`] turns a NodePodProbe's
//! results into pod conditions, labels and annotations, [`prober`] is the daemon's per-probe
//! state machine (thresholds, results into the NodePodProbe status).

pub mod marker;
pub mod node;
pub mod prober;
